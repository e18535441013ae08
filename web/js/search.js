// Search and browse on the overview (GET /api/search), debounced; an empty query with a filter
// browses, newest first. A Mac or folder chosen splits results: "here" and "elsewhere".

import { get, post } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { row } from "./overview.js";
import { conversationSearch } from "./textsearch.js";

function fill(select, options) {
  const keep = select.value;
  select.replaceChildren(...[["", t("any")], ...options].map(([value, label]) => h("option", { value }, label)));
  select.value = options.some(([v]) => v === keep) ? keep : "";
  return select;
}

export class SearchPanel {
  constructor(app, onActive) {
    this.app = app;
    this.onActive = onActive;
    // A text box, not type=search: the browser's own "×" would sit beside the page's clear button.
    this.input = h("input", { type: "text", role: "searchbox", enterkeyhint: "search", id: "search-q", placeholder: t("search_ph"), "aria-label": t("search"), autocomplete: "off", spellcheck: "false" });
    this.state = fill(h("select"), ["starting", "idle", "busy", "waiting", "ended"].map((s) => [s, t("st_" + s)]));
    this.stage = fill(h("select"), [["active", t("stage_active")], ["archived", t("archived")]]);
    this.group = fill(h("select"), []);
    this.device_id = fill(h("select"), []);
    this.cwd = h("input", { list: "search-cwds", spellcheck: "false", placeholder: "/Users/me/src/project" });
    this.folders = h("datalist", { id: "search-cwds" });
    this.clear = h("button.icon", { type: "button", "aria-label": t("clear_search"), hidden: true }, "×");
    this.status = h("p.note", { role: "status" });
    this.results = h("div");
    this.fields = ["state", "stage", "group", "device_id", "cwd"];
    const labels = ["f_state", "f_stage", "f_group", "f_mac", "f_folder"];
    this.el = h("section.search", { role: "search" }, h("div.search-row", null, this.input, this.clear),
      h("details.filters", null, h("summary", null, t("filters")), h("div.filter-grid", null,
        this.fields.map((f, i) => h("label.filter", null, h("span", null, t(labels[i])), this[f])), this.folders)),
      this.status, this.results);
    for (const f of ["input", ...this.fields]) this[f].addEventListener("input", () => this.schedule(250));
    this.clear.addEventListener("click", () => {
      for (const f of ["input", ...this.fields]) this[f].value = "";
      this.schedule(0);
      this.input.focus();
    });
    // A result opened from a search tells the relay (the usage report's search success).
    this.results.addEventListener("click", (event) => {
      const link = event.target.closest("a.session-row");
      if (!link || !this.searchId) return;
      post("/api/search/opened", { search_id: this.searchId, session_id: link.dataset.id }).catch(() => {});
    });
    this.options();
  }

  active() {
    return ["input", ...this.fields].some((f) => this[f].value.trim());
  }

  /** The groups, Macs and folders to choose from, as the overview knows them. */
  options() {
    const sessions = [...this.app.sessions.values()];
    const groups = [...new Set(sessions.map((s) => s.group).filter(Boolean))].sort().map((g) => [g, g]);
    const macs = [...this.app.devices.values()].map((d) => [d.id, d.name || d.id]);
    const cwds = [...new Set(sessions.map((s) => s.cwd).filter(Boolean))].sort();
    const key = JSON.stringify([groups, macs, cwds]);
    if (key === this.known) return;
    this.known = key;
    fill(this.group, groups);
    fill(this.device_id, macs);
    this.folders.replaceChildren(...cwds.map((c) => h("option", { value: c })));
  }

  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms);
  }

  async run() {
    if (this.abort) this.abort.abort();
    const on = this.active();
    this.clear.hidden = !on;
    this.onActive(on);
    this.status.textContent = "";
    if (!on) { this.results.replaceChildren(); return; }
    const params = new URLSearchParams({ q: this.input.value.trim() });
    for (const f of this.fields) if (this[f].value.trim()) params.set(f, this[f].value.trim());
    this.abort = new AbortController();
    try {
      const body = await get("/api/search?" + params, { signal: this.abort.signal });
      this.status.textContent = body.note || "";
      this.searchId = body.search_id || null;
      const more = body.has_more || {};
      const part = (name, title, items, extra) => h("section.found", { dataset: { part: name } },
        title ? h("h2.group", null, title) : null,
        items.length ? h("ul.rows", null, items.map((s) => row(s, this.app.devices, true))) : h("p.muted.pad", null, t("no_results")),
        extra ? h("p.note.pad", null, t("more_results")) : null);
      this.results.replaceChildren(...(params.has("device_id") || params.has("cwd")
        ? [part("here", t("here"), body.here, more.here), part("elsewhere", t("elsewhere"), body.elsewhere, more.elsewhere)]
        : [part("all", "", [...body.here, ...body.elsewhere], more.here || more.elsewhere)]));
      // Nothing in titles, summaries, files…: the words may be in the messages themselves.
      const words = params.get("q");
      if (words.length >= 2 && !body.here.length && !body.elsewhere.length) this.results.append(conversationSearch(this.app, words));
    } catch (error) {
      if (error.name !== "AbortError") this.status.textContent = error.code === "unreachable" ? t("err_unreachable") : error.message;
    }
  }
}
