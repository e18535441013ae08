// A session's decisions ledger on the phone (GET /api/sessions/{id}/decisions): the session
// menu's "Decisions" — what was decided, verbatim, each with the message it came from (tap to go
// there) and "Remember" (a memory candidate for the project); the constraints the person pinned,
// editable and removable; what is still open. "Pin as constraint" on a message of the person's or
// a line of Claude's (tap it). And the relay's snapshot events, drawn as one small collapsed line.

import { del, get, patch, post } from "./api.js";
import { h } from "./dom.js";
import { getLang } from "./i18n.js";
import { modeName } from "./modes.js";
import { actionSheet, modal, promptBox, showError, toast } from "./ui.js";

const LABELS = {
  en: {
    title: "Decisions", decisions: "Decided", constraints: "Constraints", open: "Still open",
    none_decisions: "Nothing decided yet. Answers to questions, plans approved or rejected, permission rules and mode or model changes show here, word for word.",
    none_constraints: "No constraints. Pin one below, or tap a message and choose “Pin as constraint”.",
    none_open: "Nothing open.",
    k_answer: "Answered", k_typed_answer: "Answered in your words", k_plan_approved: "Plan approved",
    k_plan_rejected: "Plan rejected", k_plan_declined: "Plan declined", k_rejected: "Tool use rejected",
    k_rule: "Permission rule", k_model: "Model", k_mode: "Permission mode",
    o_task: "Task", o_card: "Waiting for you", o_held: "Held message",
    at_msg: "message {n}", remember: "Remember", remembered: "Remembered", forget: "Forget",
    remembered_ok: "Remembered: it is proposed for the project's memory",
    add: "Pin", add_label: "A constraint Claude must keep", edit: "Edit", remove: "Remove",
    edit_label: "Constraint", pinned_ok: "Pinned as a constraint", removed_ok: "Constraint removed",
    pin: "Pin as constraint", pin_line: "Pin this line as constraint", pin_selection: "Pin the selected words",
    dropped: "{n} older decisions are no longer kept",
    not_loaded: "That message is further back than this phone has loaded.",
    snapshot: "Snapshot", s_files: "Files touched", close: "Close",
  },
  ko: {
    title: "결정", decisions: "결정한 것", constraints: "제약", open: "남은 일",
    none_decisions: "아직 결정한 것이 없어요. 질문에 대한 답, 승인하거나 거절한 계획, 권한 규칙, 모드나 모델 변경이 그대로 여기에 나타나요.",
    none_constraints: "제약이 없어요. 아래에서 고정하거나, 메시지를 눌러 “제약으로 고정”을 고르세요.",
    none_open: "남은 일이 없어요.",
    k_answer: "답함", k_typed_answer: "직접 쓴 답", k_plan_approved: "계획 승인", k_plan_rejected: "계획 거절",
    k_plan_declined: "계획 보류", k_rejected: "도구 사용 거절", k_rule: "권한 규칙", k_model: "모델", k_mode: "권한 모드",
    o_task: "할 일", o_card: "답을 기다려요", o_held: "보류된 메시지",
    at_msg: "메시지 {n}", remember: "기억", remembered: "기억함", forget: "기억 해제",
    remembered_ok: "기억했어요: 프로젝트 메모리 후보로 제안돼요",
    add: "고정", add_label: "Claude가 지켜야 할 제약", edit: "고치기", remove: "빼기",
    edit_label: "제약", pinned_ok: "제약으로 고정했어요", removed_ok: "제약을 뺐어요",
    pin: "제약으로 고정", pin_line: "이 줄을 제약으로 고정", pin_selection: "선택한 말을 고정",
    dropped: "오래된 결정 {n}개는 더 이상 남아 있지 않아요",
    not_loaded: "그 메시지는 이 휴대폰이 불러온 것보다 더 앞에 있어요.",
    snapshot: "스냅샷", s_files: "건드린 파일", close: "닫기",
  },
};

export function dt(key, vars) {
  let text = (LABELS[getLang()] || LABELS.en)[key] ?? LABELS.en[key] ?? key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

const CONTEXT_SHOWN = new Set(["answer", "typed_answer", "rejected", "rule"]);
const base = (id) => `/api/sessions/${encodeURIComponent(id)}`;

function whenText(at) {
  if (!at) return "";
  const d = new Date(at);
  return isNaN(d) ? "" : d.toLocaleString(getLang(), { dateStyle: "short", timeStyle: "short" });
}

/** "message 12 · 5/12/26, 10:35" as a button that goes to the message (when it has a seq). */
function sourceButton(source, onGo) {
  const seq = source && Number.isInteger(source.seq) ? source.seq : null;
  const text = [seq !== null ? dt("at_msg", { n: seq }) : "", whenText(source && source.at)].filter(Boolean).join(" · ");
  if (seq === null) return text ? h("span.row-meta", null, text) : null;
  const button = h("button.link.dec-source", { type: "button", dataset: { seq: String(seq) } }, text);
  button.addEventListener("click", () => onGo(seq));
  return button;
}

/** A decision's text as the page words it: a mode by the name Claude Code shows, never raw. */
function shownText(d) {
  return d.kind === "mode" ? modeName(d.text) : d.text;
}

function decisionItem(view, d, refresh, onGo, readOnly) {
  const about = d.context && CONTEXT_SHOWN.has(d.kind) ? d.context : "";
  const item = h("li.dec", { dataset: { id: d.id, kind: d.kind } },
    h("span.dec-kind", null, dt("k_" + d.kind)),
    about ? h("span.dec-about", null, about) : null,
    h("p.dec-text.plain", null, shownText(d) + (d.truncated ? " …" : "")),
    h("div.dec-foot", null, sourceButton(d.source, onGo)));
  if (!readOnly) {
    const button = h("button.small.dec-remember", { type: "button", "aria-pressed": String(Boolean(d.remembered)) },
      d.remembered ? "★ " + dt("remembered") : "☆ " + dt("remember"));
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        if (d.remembered) await del(`${base(view.id)}/remember/${encodeURIComponent(d.id)}`);
        else { await post(`${base(view.id)}/remember`, { decision_id: d.id }); toast(dt("remembered_ok")); }
        await refresh();
      } catch (error) { showError(error); button.disabled = false; }
    });
    item.querySelector(".dec-foot").append(h("span.dec-acts", null, button));
  }
  return item;
}

function constraintItem(view, c, refresh, onGo, readOnly) {
  const item = h("li.con", { dataset: { id: c.id } },
    h("p.con-text.plain", null, c.text), h("div.dec-foot", null, sourceButton(c.source, onGo)));
  if (!readOnly) {
    const edit = h("button.small", { type: "button" }, dt("edit"));
    const remove = h("button.small.danger", { type: "button" }, dt("remove"));
    edit.addEventListener("click", async () => {
      const text = await promptBox(dt("edit_label"), c.text);
      if (text === null || !text.trim() || text.trim() === c.text) return;
      try { await patch(`${base(view.id)}/constraints/${encodeURIComponent(c.id)}`, { text: text.trim() }); await refresh(); } catch (error) { showError(error); }
    });
    remove.addEventListener("click", async () => {
      try { await del(`${base(view.id)}/constraints/${encodeURIComponent(c.id)}`); toast(dt("removed_ok")); await refresh(); } catch (error) { showError(error); }
    });
    item.querySelector(".dec-foot").append(h("span.dec-acts", null, edit, remove));
  }
  return item;
}

function openItem(o, onGo) {
  const status = o.status && o.kind === "task" ? ` [${o.status.replace("_", " ")}]` : "";
  return h("li.open-item", { dataset: { kind: o.kind } },
    h("span.dec-kind", null, dt("o_" + o.kind) + status), h("p.plain", null, o.text), sourceButton(o.source, onGo));
}

/** Bring message ``seq`` into view, loading older pages of the conversation until it is drawn. */
export async function reveal(view, seq) {
  for (let i = 0; i < 50 && !view.convo.nodes.has(seq) && !view.olderDone && view.convo.min > seq; i++) {
    await view.loadOlder();
    if (view.loading) await view.loading.catch(() => null);
  }
  // A tool's result is drawn inside its call: the nearest message at or before it.
  let found = null;
  for (const [drawn, el] of view.convo.nodes) if (drawn <= seq && (found === null || drawn > found[0])) found = [drawn, el];
  const node = found && (found[0] === seq || view.convo.min <= seq) ? found[1] : null;
  if (!node) { toast(dt("not_loaded")); return; }
  view.follow = false;
  // A result inside its call's closed box: the box opens on it.
  for (let box = node.closest("details"); box; box = box.parentElement && box.parentElement.closest("details")) box.open = true;
  const shown = node.closest(".ev") || node;
  node.scrollIntoView({ block: "center" });
  shown.classList.add("flash");
  setTimeout(() => shown.classList.remove("flash"), 1600);
}

/** The session menu's "Decisions" panel for a SessionView. */
export async function showDecisions(view) {
  const readOnly = Boolean(view.readOnly || (view.archived && view.archived()));
  const body = h("div.decisions", { "aria-live": "polite" }, h("p.muted", null, "…"));
  let dialog = null;
  const onGo = (seq) => { if (dialog) dialog.close(); reveal(view, seq); };
  const refresh = async () => {
    let ledger;
    try { ledger = await get(`${base(view.id)}/decisions`); } catch (error) {
      body.replaceChildren(h("p.error", null, error.message));
      return;
    }
    const sections = [
      h("h3", null, dt("decisions")),
      ledger.decisions.length ? h("ul.list.dec-list", null, ledger.decisions.map((d) => decisionItem(view, d, refresh, onGo, readOnly))) : h("p.note", null, dt("none_decisions")),
      ledger.dropped ? h("p.note", null, dt("dropped", { n: ledger.dropped })) : null,
      h("h3", null, dt("constraints")),
      ledger.constraints.length ? h("ul.list.con-list", null, ledger.constraints.map((c) => constraintItem(view, c, refresh, onGo, readOnly))) : h("p.note", null, dt("none_constraints")),
    ];
    if (!readOnly) {
      const input = h("input", { type: "text", maxlength: 8000, "aria-label": dt("add_label"), placeholder: dt("add_label") });
      const form = h("form.row.con-add", null, input, h("button.primary.small", { type: "submit" }, dt("add")));
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        if (!input.value.trim()) return;
        try { await post(`${base(view.id)}/constraints`, { text: input.value }); toast(dt("pinned_ok")); await refresh(); } catch (error) { showError(error); }
      });
      sections.push(form);
    }
    sections.push(h("h3", null, dt("open")),
      ledger.open_items.length ? h("ul.list.open-list", null, ledger.open_items.map((o) => openItem(o, onGo))) : h("p.note", null, dt("none_open")));
    body.replaceChildren(...sections.filter(Boolean));
  };
  dialog = modal(h("div.wide", null, h("h2.sheet-title", null, dt("title")), body,
    h("form", { method: "dialog" }, h("button.sheet-cancel", null, dt("close")))));
  await refresh();
}

// -- pinning from the conversation ------------------------------------------------------------

const LEAD = /^\s*(?:[-*+]|\d+[.)]|#{1,6}|>)\s+/; // a list item's, heading's or quote's mark
const strip = (s) => s.replace(LEAD, "").replace(/[*_`~]/g, "").replace(/\s+/g, " ").trim();

/** The raw line of ``text`` that the tapped block shows (Markdown marks aside), or "". */
export function rawLine(text, shown) {
  const want = strip(shown);
  if (!want) return "";
  return String(text).split("\n").find((line) => strip(line) === want) || "";
}

async function pin(view, seq, text) {
  try {
    await post(`${base(view.id)}/constraints`, text === undefined ? { seq } : { seq, text });
    toast(dt("pinned_ok"));
  } catch (error) { showError(error); }
}

/** Tapping a message of the person's or a text of Claude's offers "Pin as constraint" (the whole
 * message, the tapped line, or the words selected in it: always its own words, verbatim). */
export function attachPinning(view) {
  view.list.addEventListener("click", (event) => {
    if (view.readOnly || (view.archived && view.archived())) return;
    const target = event.target;
    if (!(target instanceof Element) || target.closest("a, button, summary, details, input, textarea, pre")) return;
    const el = target.closest(".ev.user, .ev.assistant");
    if (!el || !el.dataset.seq) return;
    const seq = Number(el.dataset.seq);
    const ev = view.convo.events.get(seq);
    if (!ev || !ev.text) return;
    const choices = [{ label: dt("pin"), run: () => pin(view, seq) }];
    const selected = String(window.getSelection() || "").trim();
    if (selected && ev.text.includes(selected) && selected !== ev.text.trim()) {
      choices.unshift({ label: dt("pin_selection"), run: () => pin(view, seq, selected) });
    }
    const block = target.closest("p, li, h1, h2, h3, h4, h5, h6, blockquote");
    const line = el.classList.contains("assistant") && block ? rawLine(ev.text, block.textContent || "") : "";
    if (line && line.trim() !== ev.text.trim()) choices.splice(choices.length - 1, 0, { label: dt("pin_line"), run: () => pin(view, seq, line.replace(LEAD, "").trim()) });
    actionSheet(dt("pin"), choices);
  });
}

// -- snapshot events ---------------------------------------------------------------------------

/** A ``snapshot`` event: its one line, collapsed; opened, the ledger as it stood then. */
export function snapshotLine(ev) {
  const snap = ev.input || {};
  const ledger = snap.ledger || {};
  const details = h("details.ev.snapshot", null, h("summary", null, ev.text || dt("snapshot")));
  const rows = [];
  for (const d of ledger.decisions || []) rows.push(h("li", null, h("b", null, dt("k_" + d.kind) + ": "), shownText(d)));
  for (const c of ledger.constraints || []) rows.push(h("li", null, h("b", null, dt("constraints") + ": "), c.text));
  for (const o of ledger.open_items || []) rows.push(h("li", null, h("b", null, dt("o_" + o.kind) + ": "), o.text));
  if (rows.length) details.append(h("ul.snap-list", null, rows));
  if ((snap.files || []).length) details.append(h("p.muted", null, dt("s_files") + ": " + snap.files.join(", ")));
  return details;
}
