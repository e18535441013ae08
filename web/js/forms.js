// The other screens: start a new session, and settings (language, notifications, paired phones,
// Macs, log out).

import { del, get, post } from "./api.js";
import { ago, h, shortPath } from "./dom.js";
import { LANGS, getLang, setLang, t } from "./i18n.js";
import { retentionSection } from "./extras.js";
import { confirmBox, showError, toast } from "./ui.js";

const MODES = ["default", "acceptEdits", "plan", "auto", "manual", "dontAsk", "bypassPermissions"];

export function renderNewSession(app) {
  const devices = [...app.devices.values()].sort((a, b) => (b.online - a.online) || String(a.name).localeCompare(String(b.name)));
  const mac = h("select", { id: "ns-mac", name: "device_id", required: true },
    devices.map((d) => h("option", { value: d.id, disabled: !d.online }, (d.name || d.id) + (d.online ? "" : " " + t("ns_offline")))));
  const firstOnline = devices.find((d) => d.online);
  if (firstOnline) mac.value = firstOnline.id;
  const folders = h("datalist", { id: "ns-folders" });
  const fillFolders = () => {
    const seen = new Set([...app.sessions.values()].filter((s) => s.device_id === mac.value).map((s) => s.cwd));
    folders.replaceChildren(...[...seen].map((cwd) => h("option", { value: cwd }, shortPath(cwd))));
  };
  fillFolders();
  mac.addEventListener("change", fillFolders);
  const cwd = h("input", { id: "ns-cwd", name: "cwd", required: true, list: "ns-folders", autocapitalize: "off", spellcheck: "false", placeholder: "/Users/me/src/project" });
  const mode = h("select", { id: "ns-mode", name: "permission_mode" }, MODES.map((m) => h("option", { value: m }, t("pm_" + m))));
  const model = h("input", { id: "ns-model", name: "model", autocapitalize: "off", spellcheck: "false", placeholder: "opus" });
  const prompt = h("textarea", { id: "ns-prompt", name: "prompt", rows: 4 });
  const submit = h("button.primary", { type: "submit" }, t("ns_start"));
  const form = h("form.stack", { "aria-label": t("ns_title") },
    h("label", { for: "ns-mac" }, t("ns_mac")), mac,
    h("label", { for: "ns-cwd" }, t("ns_folder")), cwd, folders,
    h("label", { for: "ns-mode" }, t("ns_mode")), mode,
    h("label", { for: "ns-prompt" }, t("ns_prompt")), prompt,
    h("label", { for: "ns-model" }, t("ns_model")), model,
    firstOnline ? null : h("p.note", null, t("ns_no_mac")),
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { device_id: mac.value, cwd: cwd.value.trim(), permission_mode: mode.value };
    if (prompt.value.trim()) body.prompt = prompt.value.trim();
    if (model.value.trim()) body.model = model.value.trim();
    submit.disabled = true;
    submit.textContent = t("sending");
    try {
      const created = await post("/api/sessions", body);
      if (created.session) app.sessions.set(created.id, created.session);
      location.hash = "#/s/" + encodeURIComponent(created.id);
    } catch (error) {
      showError(error);
      submit.disabled = false;
      submit.textContent = t("ns_start");
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
        info.claude_version ? t("claude_version", { v: info.claude_version }) : ""].filter(Boolean).join(" · "))));
  }
  page.append(h("section", null, h("h2", null, t("macs")), macs));
  page.append(retentionSection(app));

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
    const when = (iso) => new Date(iso).toLocaleString(document.documentElement.lang, { dateStyle: "medium", timeStyle: "short" });
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
