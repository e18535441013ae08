// A session's cost in detail and its permission policy (dialogs); the retention report (settings).

import { get, patch, post } from "./api.js";
import { ago, append, count, h, usd } from "./dom.js";
import { grantsSection } from "./grants.js";
import { t } from "./i18n.js";
import { modal, showError, toast } from "./ui.js";
import { dateTimeText } from "./dates.js";

const KINDS = ["input", "output", "cache_read", "cache_write"];
const enc = encodeURIComponent;

const table = (rows) => h("table.figures", null, h("tbody", null, rows.map(([head, ...cells]) =>
  h("tr", null, h("th", { scope: "row" }, head), cells.map((c) => h("td", null, c))))));
const tokens = (c) => KINDS.reduce((n, k) => n + (c[k + "_tokens"] || 0), 0);

/** GET /api/sessions/{id}/cost: tokens by kind, USD, by model, by subagent, and its source. */
export async function showCost(id) {
  const box = h("div.cost-detail", { "aria-live": "polite" }, h("p.muted", null, t("loading")));
  modal(h("div.wide", null, h("h2.sheet-title", null, t("cost")), box,
    h("form", { method: "dialog" }, h("button.sheet-cancel", null, t("close")))));
  try {
    const [c, { subagents }] = await Promise.all([get(`/api/sessions/${enc(id)}/cost`),
      get(`/api/sessions/${enc(id)}/subagents`).catch(() => ({ subagents: [] }))]);
    const names = new Map(subagents.map((a) => [a.agent_id, [a.agent_type, a.description].filter(Boolean).join(" · ")]));
    const by = (title, map, name) => {
      const rows = Object.entries(map || {});
      return rows.length ? [h("h3", null, t(title)), table(rows.map(([k, u]) => [name(k), count(tokens(u)) + " " + t("tok"), usd(u.usd)]))] : [];
    };
    box.replaceChildren();
    append(box, [
      h("p.cost-total", null, h("strong", null, usd(c.usd)), h("span.muted", null, t("src_" + String(c.source).replace("-", "_")))),
      table([...KINDS.map((k) => [t("tk_" + k), count(c[k + "_tokens"])]), [t("tk_total"), count(tokens(c))]]),
      ...by("by_model", c.by_model, (m) => m), ...by("by_agent", c.by_agent, (a) => names.get(a) || a),
      c.unknown_models && c.unknown_models.length ? h("p.note", null, t("no_price", { m: c.unknown_models.join(", ") })) : null]);
  } catch (error) {
    box.replaceChildren(h("p.error", null, error.message));
  }
}

function rule(value, label, none) {
  const el = h("select", { "aria-label": label }, [...(none ? [""] : []), "allow", "ask", "deny"].map((r) =>
    h("option", { value: r }, t(r ? "r_" + r : "pol_default"))));
  el.value = value || "";
  return el;
}

/** GET / PATCH (only what changed: the Mac keeps an "always" given meanwhile) …/policy. */
export async function showPolicy(id, readOnly) {
  const box = h("div", null, h("p.muted", null, t("loading")));
  const status = h("p.pol-status", { role: "alert" });
  const save = h("button.primary", { type: "button", hidden: readOnly, disabled: true }, t("save"));
  const dialog = modal(h("div.wide", null, h("h2.sheet-title", null, t("perms")), box, grantsSection(id, readOnly), status,
    h("form.row.end", { method: "dialog" }, h("button", null, t("cancel")), save)));
  let data;
  try { data = await get(`/api/sessions/${enc(id)}/policy`); } catch (error) { box.replaceChildren(h("p.error", null, error.message)); return; }
  const policy = data.policy;
  const all = h("input", { type: "checkbox", checked: policy.allow_all });
  // how long "allow all" lasts ("": the relay's default)
  const span = h("select", { "aria-label": t("pol_all_for") },
    [["", "pol_default"], ["3600", "pol_all_1h"], ["session", "pol_all_session"]].map(([v, k]) => h("option", { value: v }, t(k))));
  const end = policy.allow_all_until;
  const until = policy.allow_all && (end ? t("pol_all_until", { time: new Date(end * 1000).toLocaleString() }) : t("pol_all_session"));
  const cats = Object.keys(data.categories);
  const picks = cats.map((c) => rule(policy.categories[c], t("cat_" + c), true));
  const tools = new Map(Object.entries(policy.tools));
  const list = h("div");
  const draw = () => list.replaceChildren(...[...tools].map(([name, value]) => {
    const pick = rule(value, name);
    pick.addEventListener("change", () => tools.set(name, pick.value));
    const remove = h("button.small", { type: "button", "aria-label": t("pol_remove", { tool: name }) }, "×");
    remove.addEventListener("click", () => { tools.delete(name); draw(); });
    return h("div.pol-row", { dataset: { tool: name } }, h("code.pol-name", null, name), h("span.pol-pick", null, pick, remove));
  }));
  draw();
  const name = h("input", { list: "pol-known", "aria-label": t("pol_tool"), placeholder: t("pol_tool"), spellcheck: "false" });
  const newRule = rule("deny", t("pol_tool") + ": " + t("perms"));
  const add = h("button.small", { type: "button" }, t("pol_add"));
  add.addEventListener("click", () => {
    const tool = name.value.trim();
    if (!tool || /\s/.test(tool)) { name.focus(); return; }
    tools.set(tool, newRule.value);
    name.value = "";
    draw();
  });
  box.replaceChildren(
    ...[!data.known && "pol_unknown", !data.device_online && "pol_offline", readOnly && "pol_read_only"].filter(Boolean).map((k) => h("p.note", null, t(k))),
    h("label.check", null, all, h("span", null, t("pol_all"))),
    h("div.row", null, t("pol_all_for"), span),
    ...(until ? [h("p.note.pol-all-until", null, until)] : []),
    h("fieldset.pol", null, h("legend", null, t("pol_cats")), cats.map((c, i) => h("div.pol-row", null,
      h("span", null, h("span.pol-name", null, t("cat_" + c)), h("span.pol-tools", null, data.categories[c].join(", "))), picks[i]))),
    h("fieldset.pol", null, h("legend", null, t("pol_tools")), list, h("div.row.pol-add", null, name, newRule, add),
      h("datalist", { id: "pol-known" }, Object.values(data.categories).flat().map((k) => h("option", { value: k })))),
    h("p.note", null, t("pol_note")));
  if (readOnly) for (const el of box.querySelectorAll("input, select, button")) el.disabled = true;
  save.disabled = readOnly;
  save.addEventListener("click", async () => {
    save.disabled = true;
    status.textContent = "";
    try {
      const was = (m, k) => m[k] || null, diff = (pairs, old) => Object.fromEntries(pairs.filter(([k, v]) => v !== was(old, k)));
      const body = {
        categories: diff(cats.map((c, i) => [c, picks[i].value || null]), policy.categories),
        tools: diff([...tools, ...Object.keys(policy.tools).filter((k) => !tools.has(k)).map((k) => [k, null])], policy.tools),
      };
      // "allow all" left on keeps its end
      const v = span.value;
      if (!(all.checked && policy.allow_all && !v)) body.allow_all = all.checked;
      if (all.checked && v) body.allow_all_for = v === "session" ? v : +v;
      if ("allow_all" in body || Object.keys({ ...body.categories, ...body.tools }).length) await patch(`/api/sessions/${enc(id)}/policy`, body);
      toast(t("pol_saved"));
      dialog.close();
    } catch (error) {
      status.textContent = error.code === "device_offline" ? t("pol_offline") : error.code === "session_archived" ? t("archived_note") : error.message;
      save.disabled = false;
    }
  });
}

/** Settings: the last retention run (GET /api/retention) and "run now" (POST /api/retention/run). */
/** The account's sessions now, as retention sees them: active (not archived), archived, pinned. */
function sessionCounts(app) {
  const all = [...app.sessions.values()];
  const archived = all.filter((s) => s.stage === "archived").length;
  return { a: all.length - archived, b: archived, p: all.filter((s) => s.pinned).length };
}

export function retentionSection(app) {
  const box = h("div", { id: "retention", "aria-live": "polite" }, h("p.muted", null, t("loading")));
  const run = h("button.small", { type: "button" }, t("ret_run"));
  const name = (x) => x.title || (app.sessions.get(x.session_id) || {}).title || x.session_id.slice(0, 8);
  const load = async () => {
    try {
      const view = await get("/api/retention");
      const r = view.last_run;
      const s = view.settings || {};
      const how = r && t("trig_" + r.trigger);
      const items = r ? [...r.archived.map((x) => [x, t("archived")]), ...r.restored.map((x) => [x, t("stage_active")]),
        ...r.deleted.map((x) => [x, t("deleted") + (x.mac === "waiting" ? " · " + t("ret_waiting", { n: 1 }) : "")]),
        ...(r.failed || []).map((x) => [x, x.error])] : [];
      const waiting = (view.waiting_for_mac || []).length;
      box.replaceChildren();
      append(box, [h("p.note", null, t("ret_ages", { a: s.archive_after_days, d: s.delete_after_days })),
        h("p.ret-last", null, r ? t("ret_last", { ago: ago(r.ran_at, t), how: how.startsWith("trig_") ? r.trigger : how }) + ": " +
          t("ret_sum", { a: r.archived.length, r: r.restored.length, d: r.deleted.length }) : t("ret_none")),
        h("p.note.ret-counts", null, t("ret_counts", sessionCounts(app))),
        items.length ? h("ul.list", null, items.map(([x, what]) => h("li", null, h("span.row-title", null, name(x)), h("span.row-meta", null, what)))) : null,
        waiting ? h("p.note", null, t("ret_waiting", { n: waiting })) : null,
        view.next_run_at ? h("p.note", null, t("ret_next", { at: dateTimeText(view.next_run_at) })) : null]);
    } catch (error) { box.replaceChildren(h("p.error", null, error.message)); }
  };
  run.addEventListener("click", async () => {
    run.disabled = true;
    try { await post("/api/retention/run"); await load(); } catch (error) { showError(error); }
    run.disabled = false;
  });
  load();
  return h("section", null, h("h2", null, t("retention")), box, run);
}
