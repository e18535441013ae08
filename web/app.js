// The control page: an account stream (/api/stream) for every Mac and session, a stream for the
// session on screen, a phone cache for when either is unreachable, a band saying what is wrong.
// Screens: #/ overview, #/s/<id> session (#/s/<id>/read read-only; …/agent/<agent id> a
// subagent's history), #/new, #/settings, #/memory[/<project>] (memory candidates),
// #/report[/<days>] (the usage report).

import { extraHeaders, get, onReachability, setReadOnly } from "./js/api.js";
import * as cache from "./js/cache.js";
import * as contact from "./js/connection.js";
import { $, h } from "./js/dom.js";
import { t } from "./js/i18n.js";
import { LiveStream } from "./js/live.js";
import { renderOverview } from "./js/overview.js";
import { SearchPanel } from "./js/search.js";
import { SessionView } from "./js/session.js";
import { SubagentView } from "./js/subagent.js";
import { showError } from "./js/ui.js";
import { placeSide, watchWidth } from "./js/wide.js";

class App {
  constructor() {
    this.devices = new Map();
    this.sessions = new Map();
    this.previews = new Map();
    this.relayOk = true;
    this.accountState = "connecting";
    this.view = null; // the SessionView on screen
    this.screen = null;
    this.paired = null; // null = not known yet
    this.main = $("#view");
    this.band = $("#band");
    this.live = $("#live");
    this.backTo = "#/";
    $("#back").addEventListener("click", () => { location.hash = this.backTo; });
    $("#settings-link").setAttribute("aria-label", t("settings"));
    window.addEventListener("hashchange", () => this.route());
    onReachability((ok) => { if (ok !== this.relayOk) { this.relayOk = ok; this.updateBand(); } });
    setInterval(() => { if (this.screen === "overview") this.drawOverview(); this.updateBand(); }, 30000);
    watchWidth(this);
    contact.watchSilence(() => this.updateBand());
  }

  async boot() {
    const sent = pageSnapshot();
    if (sent) {
      // The relay sent the account with the page: rows at once, then the stream as ever.
      this.paired = true;
      this.applySnapshot(sent, false);
      this.route();
      this.openAccountStream();
      return;
    }
    const saved = await cache.getItem("overview");
    if (saved && this.accountState !== "open") { contact.restored(saved.saved_at); this.applySnapshot(saved, false); }
    this.route();
    await this.checkLogin();
  }

  async checkLogin() {
    try {
      await get("/api/me");
      this.paired = true;
      this.openAccountStream();
    } catch (error) {
      if (error.status === 401) { this.loggedOut(false); return; }
      // unreachable: show the cache, try again shortly
      this.paired = this.paired ?? true;
      this.updateBand();
      setTimeout(() => this.checkLogin(), 3000);
    }
    if (this.screen === "login") this.route();
  }

  openAccountStream() {
    if (this.stream) return;
    this.stream = new LiveStream(() => "/api/stream", {
      snapshot: (data) => this.applySnapshot(data, true),
      session: (s) => {
        this.sessions.set(s.id, { ...(this.sessions.get(s.id) || {}), ...s });
        if (this.view && this.view.id === s.id) this.view.onSession(s);
        this.changed();
      },
      session_stage: (d) => {
        const s = this.sessions.get(d.session_id);
        if (s) Object.assign(s, { stage: d.stage, pinned: d.pinned ?? s.pinned });
        if (this.view && this.view.id === d.session_id) this.view.onSession({ stage: d.stage });
        this.changed();
      },
      session_deleted: (d) => { this.sessions.delete(d.session_id); this.changed(); },
      device: (d) => {
        this.devices.set(d.id, { ...(this.devices.get(d.id) || { name: d.id }), ...d });
        if (this.view) this.view.onDevice(this.devices.get(d.id));
        this.changed();
      },
      preview: (p) => {
        this.previews.set(p.session_id, p.text);
        if (this.view && this.view.id === p.session_id) this.view.onPreview(p.text);
      },
      resync: () => this.stream.restart(),
      revoked: () => { this.stream.close(); this.loggedOut(); },
    }, {
      onHeard: () => contact.heard(),
      onState: (state) => {
        this.accountState = state;
        if (state === "open") this.relayOk = true;
        if (state === "error") this.probe();
        this.updateBand();
      },
      check: async () => {
        try { await get("/api/me"); return true; } catch (error) {
          if (error.status === 401) { this.loggedOut(); return false; }
          return true;
        }
      },
    });
  }

  /** A stream failed: is the relay there at all? */
  async probe() {
    try {
      const response = await fetch("/api/health", { cache: "no-store", headers: extraHeaders() });
      this.relayOk = response.ok;
    } catch (_) {
      this.relayOk = false;
    }
    this.updateBand();
  }

  applySnapshot(data, live) {
    this.devices = new Map((data.devices || []).map((d) => [d.id, d]));
    const before = this.sessions;
    this.sessions = new Map((data.sessions || []).map((s) => [s.id, { ...before.get(s.id), ...s }]));
    // The snapshot holds the list's fields (summary, stage, pinned): no list to read again.
    if (live) cache.setItem("overview", { ...data, saved_at: Date.now() });
    if (this.view && this.sessions.has(this.view.id) && live) this.view.onSession(this.sessions.get(this.view.id));
    this.changed();
  }

  /** All summaries, stages and pins (then the stream's events carry their changes). */
  refreshLists(ms) {
    clearTimeout(this.listTimer);
    this.listTimer = setTimeout(async () => {
      try {
        const { sessions } = await get("/api/sessions");
        for (const s of sessions) {
          const had = this.sessions.get(s.id);
          if (had) Object.assign(had, { summary: s.summary, stage: s.stage, pinned: s.pinned });
        }
        this.changed();
      } catch (_) { /* the band says what is wrong */ }
    }, ms);
  }

  changed() {
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => {
      if (this.accountState === "open") {
        cache.setItem("overview", { devices: [...this.devices.values()], sessions: [...this.sessions.values()], saved_at: Date.now() });
      }
    }, 500);
    if (this.screen === "overview") this.drawOverview();
    placeSide(this);
    if (this.screen === "new" && !this.main.querySelector("#ns-mac option")) {
      this.lazily(() => import("./js/forms.js"), ({ renderNewSession }) => this.show("new", renderNewSession(this), t("ns_title")));
    }
    this.updateBand();
  }

  loggedOut(wipe = true) {
    this.paired = false;
    if (this.stream) { this.stream.close(); this.stream = null; }
    if (this.view) { this.view.destroy(); this.view = null; }
    if (wipe) cache.wipe();
    this.devices.clear();
    this.sessions.clear();
    this.route();
  }

  // -- screens

  route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const parts = hash.split("/").map(decodeURIComponent);
    this.turn = (this.turn || 0) + 1; // a screen still loading (lazily) is not drawn after this
    if (this.view) { this.view.destroy(); this.view = null; }
    if (this.sub) { this.sub.destroy(); this.sub = null; }
    $("#back").hidden = !hash;
    this.backTo = "#/";
    document.body.dataset.screen = "";
    const readOnly = parts[0] === "s" && parts[2] === "read";
    setReadOnly(readOnly); // before any request of the view
    if (this.paired === false) { this.show("login", this.loginScreen(), t("app")); return; }
    const agent = parts.indexOf("agent", 2);
    if (parts[0] === "s" && parts[1] && agent > 0 && parts[agent + 1]) {
      this.sub = new SubagentView(this, parts[1], parts[agent + 1]);
      this.backTo = "#/s/" + encodeURIComponent(parts[1]) + (readOnly ? "/read" : "");
      this.show("subagent", this.sub.el, t("subagent"));
    } else if (parts[0] === "s" && parts[1] && ["files", "file", "changes"].includes(parts[2])) {
      this.backTo = "#/s/" + encodeURIComponent(parts[1]);
      this.lazily(() => import("./js/files.js"), ({ FilesView }) => {
        this.sub = new FilesView(this, parts[1], parts[2], parts.slice(3).join("/"));
        this.show("files", this.sub.el, this.sub.title());
      });
    } else if (parts[0] === "s" && parts[1]) {
      this.view = new SessionView(this, parts[1], { readOnly });
      this.show("session", this.view.el, this.view.title());
      $("#top-actions").replaceChildren(this.view.badge, this.view.moreButton);
      this.view.renderMeta();
    } else if (parts[0] === "new") {
      this.lazily(() => import("./js/forms.js"), ({ renderNewSession }) => this.show("new", renderNewSession(this), t("ns_title")));
    } else if (parts[0] === "memory") {
      this.backTo = "#/settings";
      this.lazily(() => import("./js/memory.js"), ({ MemoryView }) => {
        this.sub = new MemoryView(this, parts[1]);
        this.show("memory", this.sub.el, this.sub.title());
      });
    } else if (parts[0] === "desk" && parts[1]) {
      this.backTo = parts[2] ? "#/desk/" + encodeURIComponent(parts[1]) : "#/settings";
      this.lazily(() => import("./js/desk.js"), ({ DeskView }) => {
        this.sub = new DeskView(this, parts[1], parts[2]);
        this.show("desk", this.sub.el, this.sub.title());
      });
    } else if (parts[0] === "report") {
      this.backTo = "#/settings";
      this.lazily(() => import("./js/report.js"), ({ ReportView }) => {
        this.sub = new ReportView(this, parts[1]);
        this.show("report", this.sub.el, this.sub.title());
      });
    } else if (parts[0] === "settings") {
      this.lazily(() => import("./js/forms.js"), ({ renderSettings }) => this.show("settings", renderSettings(this), t("settings")));
    } else {
      this.screen = "overview";
      this.overviewEl = null;
      this.drawOverview();
      this.refreshLists(0);
    }
    placeSide(this);
    this.updateBand();
  }

  /** A screen opened rarely: its module comes from the relay the first time it is opened (a chunk
   * of its own, relay/bundle.py), then the screen is drawn unless another was asked for since. */
  async lazily(load, draw) {
    const turn = this.turn;
    let module;
    try { module = await load(); } catch (error) { showError(error); return; }
    if (turn !== this.turn) return;
    draw(module);
    this.updateBand();
  }

  show(screen, el, title) {
    this.screen = screen;
    document.body.dataset.screen = screen;
    this.setTitle(title);
    this.main.replaceChildren(el);
    if (screen !== "session") $("#top-actions").replaceChildren();
    placeSide(this);
    window.scrollTo(0, 0);
  }

  setTitle(title) {
    $("#title").textContent = title;
    document.title = title === t("app") ? t("app") : title + " · " + t("app");
  }

  /** The overview under a search box that stays put (focus, typed words) while the lists redraw. */
  drawOverview() {
    const keep = window.scrollY;
    if (!this.search) this.search = new SearchPanel(this, (on) => { if (this.lists) this.lists.hidden = on; });
    if (!this.overviewEl || this.main.firstChild !== this.overviewEl) {
      this.lists = h("div", { hidden: this.search.active() });
      this.overviewEl = h("div", null, this.search.el, this.lists, h("a.fab", { href: "#/new" }, "+ " + t("new_session")));
      this.main.replaceChildren(this.overviewEl);
    }
    this.search.options();
    this.lists.replaceChildren(renderOverview(this));
    document.body.dataset.screen = "overview";
    $("#top-actions").replaceChildren();
    this.setTitle(t("app"));
    window.scrollTo(0, keep);
  }

  loginScreen() {
    return h("div.page.narrow", null, h("p", null, t("not_paired")),
      h("a.button.primary", { href: "pair.html" }, t("enter_code")));
  }

  relabel() {
    $("#settings-link").setAttribute("aria-label", t("settings"));
    $("#back").setAttribute("aria-label", t("back"));
    this.search = null;
    this.route();
  }

  // -- the connection band

  updateBand() {
    let text = "";
    let kind = "";
    const sessionState = this.view ? this.view.streamState : "open";
    const now = contact.assess({ paired: this.paired, relayOk: this.relayOk, account: this.accountState });
    if (now.lost !== Boolean(this.lost)) {
      // heard again or not any more: every Mac's and session's state is drawn again
      this.lost = now.lost;
      if (this.screen === "overview") this.drawOverview();
      if (this.view) this.view.renderMeta();
    }
    if (this.paired === false) {
      text = "";
    } else if (now.lost) {
      text = contact.bandText(); kind = now.kind;
    } else if (!this.relayOk) {
      text = t("band_unreachable"); kind = "unreachable";
    } else if (this.accountState !== "open" || sessionState !== "open") {
      text = t("band_reconnecting"); kind = "reconnecting";
    } else if (this.view && this.view.macOffline()) {
      text = t("band_mac_offline", this.view.lastSeenText()); kind = "mac-offline";
    }
    this.band.hidden = !text;
    this.band.textContent = text;
    this.band.dataset.kind = kind;
    const live = now.live && !text;
    // Heard, but the session's own stream is not open (yet): say that, as the band does.
    const waiting = now.kind === "live" && !live ? contact.words(sessionState === "error" ? "reconnecting" : "connecting") : "";
    this.live.textContent = this.paired === false ? "" : live ? contact.words("live") : waiting || contact.pillText();
    this.live.className = "live" + (live ? " on" : "");
    this.live.dataset.kind = live ? "live" : now.kind;
  }
}

/** The account as the relay saw it when it sent this page to a logged-in phone (relay/pagedata.py),
 * or null: then the page asks for it. */
function pageSnapshot() {
  const block = document.getElementById("account-snapshot");
  if (!block) return null;
  try { return JSON.parse(block.textContent); } catch (_) { return null; }
}

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").catch(() => { /* works without it */ });
}

const app = new App();
window.__cb = app;
app.boot();
