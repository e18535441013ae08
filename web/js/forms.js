// The other screens: start a new session, and settings (language, notifications, paired phones,
// Macs, log out).

import { scopeSetting } from "./reopen.js";
import { deskLink } from "./desk.js";
import { del, get, post } from "./api.js";
import { ago, folderName, h, shortPath } from "./dom.js";
import { LANGS, getLang, setLang, t } from "./i18n.js";
import { retentionSection } from "./extras.js";
import { mt } from "./memory.js";
import { rt } from "./report.js";
import { confirmBox, showError, toast } from "./ui.js";
import { troubleNote, whyNoStart } from "./standing.js";
import { MODES, defaultOptionLabel, modeName, startsIn } from "./modes.js";
import { dateTimeText } from "./dates.js";

// Claude Code's model names and aliases offered as a list ("" = the Mac's default); any other
// model is typed in "Other".
const MODELS = ["", "opus", "sonnet", "haiku", "opusplan", "sonnet[1m]"];
const OTHER = "other";
const MAX_RECENT = 8; // folders offered as buttons (all of them stay in the typed list)

/** The folders a Mac knows, most recent first: what it reported (its sessions past and present)
 * and the folders of its sessions this phone has listed. */
export function recentFolders(app, deviceId) {
  const device = app.devices.get(deviceId);
  const reported = (device && device.info && device.info.recent_folders) || [];
  const listed = [...app.sessions.values()].filter((s) => s.device_id === deviceId && s.cwd)
    .sort((a, b) => String(b.updated_at || "").localeCompare(String(a.updated_at || ""))).map((s) => s.cwd);
  return [...new Set([...listed, ...reported])];
}

export function renderNewSession(app) {
  const devices = [...app.devices.values()].sort((a, b) => (b.online - a.online) || String(a.name).localeCompare(String(b.name)));
  const mac = h("select", { id: "ns-mac", name: "device_id", required: true },
    devices.map((d) => h("option", { value: d.id, disabled: !d.online }, (d.name || d.id) + (d.online ? "" : " " + t("ns_offline")))));
  const firstOnline = devices.find((d) => d.online);
  if (firstOnline) mac.value = firstOnline.id;
  const cwd = h("input", { id: "ns-cwd", name: "cwd", required: true, list: "ns-folders", autocapitalize: "off", spellcheck: "false", placeholder: "/Users/me/src/project" });
  const folders = h("datalist", { id: "ns-folders" });
  const recent = h("div.ns-recent", { id: "ns-recent", role: "group", "aria-label": t("ns_recent") });
  const fillFolders = () => {
    const known = recentFolders(app, mac.value);
    folders.replaceChildren(...known.map((path) => h("option", { value: path }, shortPath(path))));
    recent.replaceChildren(...known.slice(0, MAX_RECENT).map((path) => {
      const pick = h("button.ns-folder", { type: "button", title: path, "aria-pressed": String(cwd.value === path) },
        h("span.ns-folder-name", null, folderName(path)), h("span.ns-folder-path", null, shortPath(path)));
      pick.addEventListener("click", () => { cwd.value = path; markPicked(); });
      return pick;
    }));
    recent.hidden = !known.length;
  };
  const markPicked = () => {
    for (const b of recent.children) b.setAttribute("aria-pressed", String(b.title === cwd.value.trim()));
  };
  fillFolders();
  mac.addEventListener("change", fillFolders);
  // A Mac that cannot run Claude Code, or none online: the form says why Start is off.
  const trouble = h("div.ns-trouble", { id: "ns-trouble" });
  const why = h("p.note.ns-why", { id: "ns-why", role: "status" });
  const explain = () => {
    const chosen = app.devices.get(mac.value);
    const note = troubleNote(chosen);
    trouble.replaceChildren(...(note ? [note] : []));
    const reason = whyNoStart(chosen, Boolean(firstOnline));
    why.textContent = reason;
    why.hidden = !reason;
    submit.disabled = Boolean(reason);
  };
  mac.addEventListener("change", explain);
  cwd.addEventListener("input", markPicked);
  // No choice = no flag: the Mac's Claude Code picks, as `claude-bridge claude` does.
  const mode = h("select", { id: "ns-mode", name: "permission_mode", "aria-describedby": "ns-mode-hint" },
    h("option", { value: "" }, defaultOptionLabel()), MODES.map((m) => h("option", { value: m }, modeName(m))));
  const modeHint = h("p.note", { id: "ns-mode-hint" }, startsIn(""));
  mode.addEventListener("change", () => { modeHint.textContent = startsIn(mode.value); });
  const modelPick = h("select", { id: "ns-model-pick", name: "model_pick" },
    MODELS.map((m) => h("option", { value: m }, m ? m : t("ns_model_default"))), h("option", { value: OTHER }, t("ns_model_other")));
  const model = h("input", { id: "ns-model", name: "model", autocapitalize: "off", spellcheck: "false", placeholder: "claude-sonnet-4-5", hidden: true, "aria-label": t("ns_model_other") });
  modelPick.addEventListener("change", () => { model.hidden = modelPick.value !== OTHER; if (!model.hidden) model.focus(); });
  const prompt = h("textarea", { id: "ns-prompt", name: "prompt", rows: 4 });
  const worktree = h("input", { type: "checkbox", id: "ns-worktree", name: "worktree" });
  const branch = h("input", { id: "ns-branch", name: "branch", autocapitalize: "off", spellcheck: "false", placeholder: "feat/my-change", hidden: true, "aria-label": t("ns_branch") });
  worktree.addEventListener("change", () => { branch.hidden = !worktree.checked; });
  const submit = h("button.primary", { type: "submit" }, t("ns_start"));
  const form = h("form.stack", { "aria-label": t("ns_title") },
    h("label", { for: "ns-mac" }, t("ns_mac")), mac, trouble,
    h("label", { for: "ns-cwd" }, t("ns_folder")), recent, cwd, folders,
    h("label.check", null, worktree, h("span", null, t("ns_worktree"))), branch,
    h("label", { for: "ns-mode" }, t("ns_mode")), mode, modeHint,
    h("label", { for: "ns-prompt" }, t("ns_prompt")), prompt,
    h("label", { for: "ns-model-pick" }, t("ns_model")), modelPick, model,
    why, submit);
  explain();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { device_id: mac.value, cwd: cwd.value.trim() };
    if (mode.value) body.permission_mode = mode.value;
    if (prompt.value.trim()) body.prompt = prompt.value.trim();
    const chosen = modelPick.value === OTHER ? model.value.trim() : modelPick.value;
    if (chosen) body.model = chosen;
    if (worktree.checked) body.worktree = branch.value.trim() || true;
    submit.disabled = true;
    submit.textContent = t("sending");
    try {
      const created = await post("/api/sessions", body);
      if (created.session) app.sessions.set(created.id, created.session);
      location.hash = "#/s/" + encodeURIComponent(created.id);
    } catch (error) {
      showError(error);
      submit.textContent = t("ns_start");
      explain();
    }
  });
  return h("div.page", null, form);
}

export function renderSettings(app) {
  const page = h("div.page.settings");

  const lang = h("select", { id: "set-lang" }, Object.entries(LANGS).map(([code, name]) => h("option", { value: code }, name)));
  lang.value = getLang();
  lang.addEventListener("change", () => { setLang(lang.value); app.relabel(); });
  page.append(h("section", null, h("h2", null, h("label", { for: "set-lang" }, t("language"))), lang));

  page.append(notifications());

  const phones = h("ul.list", { id: "phones" }, h("li.muted", null, t("loading")));
  page.append(h("section", null, h("h2", null, t("phones")), phones));
  loadPhones(phones);

  const macs = h("ul.list", { id: "macs" });
  for (const d of app.devices.values()) {
    const info = d.info || {};
    macs.append(h("li", null, h("span.row-title", null, d.name || d.id),
      h("span.row-meta", null, [d.online ? t("online") : t("offline_seen", { ago: ago(d.last_seen, t) }),
        info.agent_version ? t("agent_version", { v: info.agent_version }) : "",
        info.claude_version ? t("claude_version", { v: info.claude_version }) : ""].filter(Boolean).join(" · ")),
      d.online ? deskLink(d) : null));
  }
  page.append(h("section", null, h("h2", null, t("macs")), macs));
  page.append(scopeSetting());
  page.append(retentionSection(app));
  page.append(h("section.insights", null, h("h2", null, mt("title")), h("p.muted", null, mt("note")),
    h("a.button", { href: "#/memory", id: "set-memory" }, mt("title")),
    h("a.button", { href: "#/report", id: "set-report" }, rt("title"))));

  const logout = h("button.danger", { type: "button", id: "logout" }, t("logout"));
  logout.addEventListener("click", async () => {
    if (!(await confirmBox(t("confirm_logout"), t("logout")))) return;
    try { await post("/api/logout"); } catch (error) { if (error.status !== 401) { showError(error); return; } }
    app.loggedOut();
  });
  page.append(h("section", null, logout));
  return page;
}

async function loadPhones(list) {
  try {
    const { phones } = await get("/api/phones");
    // Two phones of the same name are told apart by when they were paired and last used, and by
    // the end of their id.
    const names = phones.map((p) => p.name);
    const when = dateTimeText;
    list.replaceChildren(...phones.map((p) => {
      const twin = names.filter((n) => n === p.name).length > 1;
      const revoke = h("button.small", { type: "button", disabled: p.revoked }, p.revoked ? t("revoked") : t("revoke"));
      revoke.addEventListener("click", async () => {
        if (!(await confirmBox(t("confirm_revoke", { name: p.name }), t("revoke")))) return;
        try {
          await del("/api/phones/" + encodeURIComponent(p.id));
          if (p.current) { location.reload(); return; }
          loadPhones(list);
        } catch (error) { showError(error); }
      });
      return h("li", { class: p.revoked ? "revoked" : "" },
        h("span.row-title", null, p.name + (twin ? " · " + String(p.id).slice(-4) : "") + (p.current ? " (" + t("this_phone") + ")" : "")),
        h("span.row-meta", null, t("paired", { ago: when(p.created_at) }) + " · " + t("last_used", { ago: ago(p.last_seen, t) })),
        revoke);
    }));
  } catch (error) {
    list.replaceChildren(h("li.muted", null, error.message));
  }
}

// -- Web Push

function b64ToBytes(text) {
  const raw = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function supported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window && window.isSecureContext;
}

async function registration() {
  return navigator.serviceWorker.ready;
}

function notifications() {
  const section = h("section", null, h("h2", null, t("notifications")));
  if (!supported()) { section.append(h("p.note", null, t("notif_unsupported"))); return section; }
  const on = h("input", { type: "checkbox", id: "notif-on" });
  const turnEnd = h("input", { type: "checkbox", id: "notif-turn" });
  const test = h("button.small", { type: "button" }, t("notif_test"));
  const status = h("p.note", { role: "status" });
  section.append(h("label.check", null, on, h("span", null, t("notif_on"))),
    h("label.check", null, turnEnd, h("span", null, t("notif_turn_end"))), test, status);

  const show = (sub) => {
    on.checked = Boolean(sub);
    turnEnd.disabled = !sub;
    test.disabled = !sub;
    turnEnd.checked = sub ? localStorage.getItem("cb-turn-end") === "1" : false;
    status.textContent = Notification.permission === "denied" ? t("notif_denied") : sub ? t("notif_enabled") : t("notif_disabled");
  };
  registration().then((reg) => reg.pushManager.getSubscription()).then(show).catch(() => show(null));

  async function subscribe() {
    const permission = await Notification.requestPermission();
    if (permission !== "granted") { show(null); return; }
    const { key } = await get("/api/push/key");
    const reg = await registration();
    const sub = (await reg.pushManager.getSubscription()) ||
      (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64ToBytes(key) }));
    const json = sub.toJSON();
    await post("/api/push/subscribe", { endpoint: json.endpoint, keys: json.keys, turn_end: turnEnd.checked, lang: getLang() });
    localStorage.setItem("cb-turn-end", turnEnd.checked ? "1" : "0");
    show(sub);
  }

  on.addEventListener("change", async () => {
    try {
      if (on.checked) { await subscribe(); return; }
      const reg = await registration();
      const sub = await reg.pushManager.getSubscription();
      if (sub) {
        await del("/api/push/subscribe", { endpoint: sub.endpoint }).catch(() => null);
        await sub.unsubscribe();
      }
      show(null);
    } catch (error) {
      show(null);
      showError(error);
    }
  });
  turnEnd.addEventListener("change", () => subscribe().catch(showError));
  test.addEventListener("click", async () => {
    try {
      const sub = await (await registration()).pushManager.getSubscription();
      if (sub) await post("/api/push/test", { endpoint: sub.endpoint });
      toast(t("notif_enabled"));
    } catch (error) { showError(error); }
  });
  return section;
}
