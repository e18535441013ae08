// One session: its conversation (cached on the phone, caught up by seq, live over SSE), its card,
// held messages, the in-progress preview and the composer; its cost, permissions, pin and title.
// A read-only view (#/s/<id>/read) and an archived session have no way to send.

import { del, get, post, patch } from "./api.js";
import * as cache from "./cache.js";
import { renderCard } from "./cards.js";
import { Conversation } from "./conversation.js";
import { ago, costText, folderName, h, shortPath } from "./dom.js";
import { attachPinning, dt, showDecisions } from "./decisions.js";
import { stateLabel, t } from "./i18n.js";
import { LiveStream } from "./live.js";
import { offerQueue, offlineLabel, queuedItems } from "./offline.js";
import { contactLost, unknownLabel } from "./connection.js";
import { heldButtons, sendHeldNow } from "./heldactions.js";
import { failureBox, failureText } from "./failure.js";
import { modeName } from "./modes.js";
import { groupedSheet, inGroup } from "./menu.js";
import { confirmBox, promptBox, showError, toast } from "./ui.js";
import { placeBand } from "./versionband.js";
import { Attachments, heldDetails, modeModelActions, upload } from "./composer.js";
import { moveAction, moveBand } from "./move.js";

const PAGE = 500; // first page and catch-up (the relay's catchup_page)
const OLDER_PAGE = 200;
const MAX_CATCH_UP = 1500; // further behind than this, the cache is dropped and the newest page read
const KEEP_DRAWN = 4000;

export class SessionView {
  constructor(app, id, { readOnly = false } = {}) {
    this.app = app;
    this.id = id;
    this.readOnly = readOnly;
    this.snap = app.sessions.get(id) || null;
    this.held = [];
    this.sending = []; // messages posted but not yet answered: {id, text}
    this.preview = "";
    this.stream = null;
    this.streamState = "connecting";
    this.destroyed = false;
    this.loading = null;
    this.olderDone = false;
    this.queue = [];
    this.toSave = [];
    this.build();
    this.convo = new Conversation(this.list, { onAgent: (agent) => { location.hash = `#/s/${encodeURIComponent(id)}${readOnly ? "/read" : ""}/agent/${encodeURIComponent(agent)}`; },
      onFull: (seq) => get(`/api/sessions/${encodeURIComponent(id)}/events/${seq}/full`) });
    attachPinning(this);
    this.start();
  }

  // -- layout

  archived() {
    return Boolean(this.snap && this.snap.stage === "archived");
  }

  build() {
    this.badge = h("span.badge");
    this.markBadge = h("span.badge.mark", { hidden: true });
    this.pinBadge = h("span.pin", { hidden: true, role: "img", title: t("pinned"), "aria-label": t("pinned") }, "📌");
    this.costButton = h("button.link.cost", { type: "button", title: t("cost") });
    this.costButton.addEventListener("click", async () => (await import("./extras.js")).showCost(this.id));
    this.meta = h("p.session-meta");
    this.summary = h("p.session-sum", { hidden: true });
    this.moveSlot = h("div.move-slot");
    this.failureSlot = h("div.failure-slot");
    this.moreButton = h("button.icon", { type: "button", "aria-label": t("actions"), title: t("actions") }, "⋯");
    this.moreButton.addEventListener("click", () => this.actions());
    this.earlier = h("button.earlier", { type: "button" }, t("earlier"));
    this.earlier.addEventListener("click", () => this.loadOlder());
    this.topNote = h("p.note.center", { hidden: true });
    this.follow = true; // keep the newest message in view until the person scrolls up
    this.newChip = h("button.new-chip", { type: "button", hidden: true }, t("new_messages"));
    this.newChip.addEventListener("click", () => { this.follow = true; this.scrollToBottom(); });
    this.onScroll = () => {
      if (this.settling) return;
      this.follow = this.nearBottom();
      if (this.follow) this.newChip.hidden = true;
    };
    window.addEventListener("scroll", this.onScroll, { passive: true });
    this.list = h("div.convo", { role: "log", "aria-live": "off", "aria-label": t("claude") });
    this.previewBox = h("div.ev.assistant.preview", { hidden: true, "aria-live": "polite" });
    this.cardSlot = h("div.card-slot");
    this.heldBox = h("section.held", { hidden: true, "aria-label": t("held_title") });
    this.composer = this.buildComposer();
    this.readOnlyNote = h("div.read-only-note", null, h("span", null, t("read_only_note")),
      h("a.button", { href: "#/s/" + encodeURIComponent(this.id) }, t("leave_read_only")));
    const pin = h("button", { type: "button" }, t("pin"));
    pin.addEventListener("click", () => this.pin(true));
    this.archivedNote = h("div.read-only-note.archived-note", { role: "note" }, h("span", null, t("archived_note")), this.readOnly ? null : pin);
    this.lockSlot = h("div");
    this.el = h("section.session", { "aria-label": t("claude") },
      h("div.session-head", null, h("div.badges", null, this.markBadge, this.pinBadge), this.meta, this.costButton, this.summary, this.failureSlot, this.moveSlot),
      h("div.older", null, this.earlier, this.topNote),
      this.list, this.previewBox,
      h("div.dock", null, this.newChip, this.cardSlot, this.heldBox, this.lockSlot));
    this.renderLock();
    this.sentinel = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && this.convo.size && !this.loading) this.loadOlder();
    }, { rootMargin: "400px 0px 0px 0px" });
  }

  buildComposer() {
    this.input = h("textarea", { rows: 1, "aria-label": t("msg_placeholder"), placeholder: t("msg_placeholder"), maxlength: 100000 });
    // While a card waits, what sending does to it is said once there is something to send.
    this.input.addEventListener("input", () => { this.grow(); this.el.classList.toggle("typing", Boolean(this.input.value.trim())); });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) { e.preventDefault(); this.send(false); }
    });
    this.sendButton = h("button.primary.send", { type: "button", title: t("held_hint") }, t("send"));
    this.sendButton.addEventListener("click", () => this.send(false));
    this.nowButton = h("button.send-now", { type: "button", title: t("send_now_hint") }, t("send_now"));
    this.nowButton.addEventListener("click", () => this.send(true));
    // "After this turn": typed only once the running turn has ended (composer.js).
    this.afterButton = h("button.send-after", { type: "button", title: t("send_after_hint") }, t("send_after"));
    this.afterButton.addEventListener("click", () => this.send("after_turn"));
    this.stopButton = h("button.interrupt", { type: "button" }, t("interrupt"));
    this.stopButton.addEventListener("click", () => this.interrupt());
    this.attachments = new Attachments();
    return h("div.composer", null, this.attachments.chips, this.attachments.input, this.attachments.button, this.input,
      h("div.composer-buttons", null, this.stopButton, this.nowButton, this.afterButton, this.sendButton));
  }

  /** What the dock ends with: the composer, or why there is none. */
  renderLock() {
    const want = [this.readOnly && this.readOnlyNote, this.archived() && this.archivedNote].filter(Boolean);
    if (!want.length) want.push(this.composer);
    const now = this.lockSlot.children;
    if (want.length !== now.length || want.some((el, i) => now[i] !== el)) this.lockSlot.replaceChildren(...want);
  }

  grow() {
    this.input.style.height = "auto";
    this.input.style.height = Math.min(this.input.scrollHeight, 220) + "px";
  }

  title() {
    const s = this.snap;
    return s ? s.title || folderName(s.cwd) || s.id.slice(0, 8) : "…";
  }

  // -- loading

  async start() {
    const started = performance.now();
    const [cachedSnap, cachedEvents] = await Promise.all([cache.loadSnapshot(this.id), cache.loadEvents(this.id)]);
    if (this.destroyed) return;
    if (!this.snap && cachedSnap) this.snap = cachedSnap;
    if (cachedSnap && cachedSnap.held) this.held = cachedSnap.held;
    if (cachedEvents.length) {
      this.convo.epoch = (cachedSnap && cachedSnap.epoch) || cachedEvents[cachedEvents.length - 1].epoch;
      this.convo.add(cachedEvents);
      if (this.convo.newAgents) this.loadAgents();
      this.scrollToBottom();
      this.drawn("cache", started);
    }
    this.renderMeta();
    await this.load();
  }

  /** Read the snapshot, reconcile the cache with it, read the newest page if needed, go live. */
  async load() {
    const started = performance.now();
    let snap = null;
    try {
      snap = await get(`/api/sessions/${encodeURIComponent(this.id)}`);
    } catch (error) {
      if (error.status === 401) { this.app.loggedOut(); return; }
      if (error.status === 404) { this.gone(error); return; }
      // unreachable: keep the cache on screen; the stream below keeps trying
    }
    if (this.destroyed) return;
    if (snap) {
      const stale = this.convo.size && (snap.epoch !== this.convo.epoch || snap.last_seq < this.convo.max ||
        snap.last_seq - this.convo.max > MAX_CATCH_UP);
      if (stale) {
        this.convo.clear();
        this.olderDone = false;
        await cache.clearSession(this.id);
      }
      this.convo.epoch = snap.epoch;
      this.setSnapshot(snap);
      if (!this.convo.size && snap.last_seq > 0) await this.firstPage(snap);
      if (this.destroyed) return;
      this.drawn("network", started);
    }
    this.openStream();
  }

  async firstPage(snap) {
    const base = `/api/sessions/${encodeURIComponent(this.id)}/events`;
    let page;
    try {
      page = await get(`${base}?before=${snap.last_seq + 1}&limit=${PAGE}&epoch=${snap.epoch}`);
    } catch (error) {
      if (error.code !== "history_unavailable") { showError(error); return; }
      // the older part is on an offline Mac: read what the relay holds
      const after = Math.max(snap.last_seq - PAGE, (error.details.oldest_seq || snap.oldest_seq || 1) - 1);
      page = await get(`${base}?after=${after}&limit=${PAGE}&epoch=${snap.epoch}`).catch(() => null);
      this.note(t("history_unavailable"));
      this.olderDone = true;
      if (!page) return;
    }
    this.ingest(page.events, { scroll: true });
    if (this.convo.min <= 1) this.olderDone = true;
  }

  async loadOlder() {
    if (this.loading || this.olderDone || !this.convo.size) return;
    if (this.convo.min <= 1) { this.olderDone = true; this.renderOlder(); return; }
    this.earlier.disabled = true;
    this.earlier.textContent = t("loading");
    const before = this.convo.min;
    this.loading = get(`/api/sessions/${encodeURIComponent(this.id)}/events?before=${before}&limit=${OLDER_PAGE}` +
      (this.convo.epoch ? `&epoch=${this.convo.epoch}` : ""));
    try {
      const page = await this.loading;
      const height = document.documentElement.scrollHeight;
      const top = window.scrollY;
      this.ingest(page.events, { scroll: false });
      window.scrollTo(0, top + document.documentElement.scrollHeight - height);
      if (!page.has_more || this.convo.min <= 1) this.olderDone = true;
      this.topNote.hidden = true;
    } catch (error) {
      if (error.code === "history_unavailable") this.note(t("history_unavailable"));
      else if (error.code === "epoch_mismatch") this.resync();
      else showError(error);
    } finally {
      this.loading = null;
      this.earlier.disabled = false;
      this.renderOlder();
    }
  }

  renderOlder() {
    const more = this.convo.size && !this.olderDone && this.convo.min > 1;
    this.earlier.hidden = !more;
    this.earlier.textContent = t("earlier");
    if (!more && this.convo.size && this.convo.min <= 1 && this.topNote.hidden) {
      this.topNote.textContent = t("start_of_history");
      this.topNote.hidden = false;
    }
    if (more) this.sentinel.observe(this.earlier); else this.sentinel.disconnect();
  }

  note(text) {
    this.topNote.textContent = text;
    this.topNote.hidden = false;
  }

  /** Timings of the first drawing, for the tests (window.__cbRender). */
  drawn(source, started) {
    const entry = { source, events: this.convo.size, ms: performance.now() - started, at: performance.now() };
    window.__cbRender = window.__cbRender || [];
    window.__cbRender.push(entry);
    requestAnimationFrame(() => setTimeout(() => { entry.painted = performance.now() - started; }, 0));
    this.renderOlder();
  }

  // -- live

  streamUrl() {
    const epoch = this.convo.epoch ? `&epoch=${encodeURIComponent(this.convo.epoch)}` : "";
    return `/api/sessions/${encodeURIComponent(this.id)}/stream?after=${this.convo.max || 0}${epoch}`;
  }

  openStream() {
    if (this.destroyed) return;
    if (this.stream) { this.stream.restart(); return; }
    this.stream = new LiveStream(() => this.streamUrl(), {
      hello: (data) => {
        if (this.convo.epoch && data.epoch !== this.convo.epoch && this.convo.size) { this.resync(); return; }
        this.convo.epoch = data.epoch;
      },
      event: (ev) => this.enqueue(ev),
      history_unavailable: () => this.note(t("history_gap")),
      resync: () => this.resync(),
      revoked: () => { this.stream.close(); this.app.loggedOut(); },
    }, {
      onState: (state) => {
        this.streamState = state;
        this.app.updateBand();
        if (state === "open") this.refreshSnapshot();
      },
      check: () => this.checkStream(),
    });
  }

  /** The stream was refused: find out why before opening it again. */
  async checkStream() {
    try {
      const epoch = this.convo.epoch ? `&epoch=${this.convo.epoch}` : "";
      await get(`/api/sessions/${encodeURIComponent(this.id)}/events?after=${this.convo.max || 0}&limit=1${epoch}`);
      return true;
    } catch (error) {
      if (error.code === "epoch_mismatch" || error.code === "after_beyond_last") { this.resync(); return false; }
      if (error.status === 401) { this.app.loggedOut(); return false; }
      if (error.status === 404) { this.gone(error); return false; }
      return true;
    }
  }

  /** The session's history restarted (or this page fell behind): start over from the relay. */
  async resync() {
    if (this.stream) this.stream.end();
    this.queue = [];
    this.convo.clear();
    this.convo.epoch = null;
    this.olderDone = false;
    this.topNote.hidden = true;
    await cache.clearSession(this.id);
    await this.load();
  }

  enqueue(ev) {
    this.queue.push(ev);
    if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), 30);
  }

  flush() {
    this.flushTimer = null;
    const batch = this.queue;
    this.queue = [];
    this.ingest(batch, { scroll: this.follow });
  }

  ingest(events, { scroll }) {
    const wasEmpty = !this.convo.size;
    const fresh = this.convo.add(events);
    if (!fresh.length) return;
    if (fresh.some((ev) => ev.kind === "assistant")) this.showPreview("");
    this.convo.trim(KEEP_DRAWN);
    this.toSave.push(...fresh);
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => this.save(), 300);
    if (scroll || wasEmpty) this.scrollToBottom();
    else this.newChip.hidden = false;
    this.renderOlder();
    if (this.convo.newAgents) this.loadAgents();
  }

  /** One line per subagent, read again when a subagent appears or speaks. */
  loadAgents() {
    this.convo.newAgents = false;
    clearTimeout(this.agentTimer);
    this.agentTimer = setTimeout(async () => {
      try {
        const { subagents } = await get(`/api/sessions/${encodeURIComponent(this.id)}/subagents`);
        if (!this.destroyed) this.convo.setAgents(subagents);
      } catch (_) { /* the lines stay as they were */ }
    }, 300);
  }

  async save() {
    const events = this.toSave;
    this.toSave = [];
    await cache.saveEvents(events);
    await cache.trimEvents(this.id);
  }

  nearBottom(slack = 160) {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - slack;
  }

  /** To the end, again until it holds: content-visibility placeholders grow as they are drawn, so
   * one jump lands short of the end. */
  scrollToBottom() {
    this.newChip.hidden = true;
    this.settling = true;
    let stable = 0;
    let tries = 0;
    const step = () => {
      if (this.destroyed) return;
      const end = this.list.lastElementChild;
      if (end) end.scrollIntoView({ block: "end" });
      window.scrollTo(0, document.documentElement.scrollHeight);
      stable = this.nearBottom(4) ? stable + 1 : 0;
      if (stable < 3 && ++tries < 60) requestAnimationFrame(step);
      else { this.settling = false; this.follow = this.nearBottom(); }
    };
    requestAnimationFrame(step);
  }

  gone(error) {
    this.list.replaceChildren(h("p.empty", null, error.message));
    if (this.stream) this.stream.close();
  }

  // -- what the account stream says

  onSession(session) {
    this.snap = { ...(this.snap || {}), ...session };
    if (this.snap.state !== "busy") this.showPreview(""); // the turn ended: nothing is being written
    this.renderMeta();
    this.refreshSnapshot();
  }

  onDevice(device) {
    if (this.snap && device.id === this.snap.device_id) {
      this.renderMeta();
      this.refreshSnapshot();
    }
  }

  onPreview(text) {
    this.showPreview(text || "");
  }

  refreshSnapshot() {
    clearTimeout(this.snapTimer);
    this.snapTimer = setTimeout(async () => {
      try {
        const snap = await get(`/api/sessions/${encodeURIComponent(this.id)}`);
        if (this.destroyed) return;
        if (this.convo.epoch && snap.epoch !== this.convo.epoch && this.convo.size) { this.resync(); return; }
        this.setSnapshot(snap);
      } catch (_) { /* the band says what is wrong */ }
    }, 80);
  }

  setSnapshot(snap) {
    this.snap = snap;
    this.held = snap.held || [];
    if (snap.state !== "busy") this.showPreview("");
    else if (snap.preview) this.showPreview(snap.preview);
    cache.saveSnapshot(snap);
    this.renderMeta();
  }

  macOffline() {
    if (!this.snap || contactLost()) return false; // unknown, not offline, while the relay is not heard
    const device = this.app.devices.get(this.snap.device_id);
    if (device) return !device.online;
    return this.snap.mark === "offline";
  }

  device() {
    return this.snap ? this.app.devices.get(this.snap.device_id) : null;
  }

  // -- drawing the live side

  renderMeta() {
    const s = this.snap;
    this.app.setTitle(this.title());
    if (!s) return;
    const offline = this.macOffline();
    const stale = contactLost(); // the relay is not heard: the last known state, greyed
    const state = offline ? "unknown" : s.state;
    this.badge.className = "badge st-" + state + (s.activity && !stale ? " act-" + s.activity : "") + (stale ? " stale" : "");
    this.badge.textContent = offline ? offlineLabel(this.device()) : stateLabel(s);
    const mark = stale ? "unknown" : offline ? "offline" : s.mark;
    this.markBadge.hidden = !mark;
    this.markBadge.textContent = stale ? unknownLabel() : mark ? t("mk_" + mark) : "";
    this.markBadge.className = "badge mark mk-" + (mark || "");
    this.pinBadge.hidden = !s.pinned;
    this.costButton.textContent = costText(s.cost, t);
    const note = s.failure ? s.summary : s.error || s.summary; // a failure says it in its box
    this.summary.hidden = !note;
    this.summary.textContent = note || "";
    const box = failureBox(s);
    this.failureSlot.replaceChildren(...(box ? [box] : []));
    this.renderLock();
    const band = moveBand(s.move, this.app.devices);
    this.moveSlot.replaceChildren(...(band ? [band] : []));
    const device = this.device();
    const parts = [shortPath(s.cwd)];
    if (device) parts.push(device.name || device.id);
    if (s.permission_mode) parts.push(modeName(s.permission_mode));
    if (s.branch) parts.push("⎇ " + s.branch);
    if (s.parent_id) {
      const parent = this.app.sessions.get(s.parent_id);
      parts.push(t("fork_of", { title: (parent && parent.title) || String(s.parent_id).slice(0, 8) }));
    }
    if (s.model) parts.push(s.model);
    if (s.locked) parts.push("🔒 " + t("locked"));
    this.meta.textContent = parts.filter(Boolean).join(" · ");
    placeBand(this.meta, device);
    this.renderCard();
    this.renderHeld();
    this.renderComposer();
    this.app.updateBand();
  }

  renderCard() {
    const card = this.snap && !this.macOffline() ? this.snap.card : null;
    const current = this.cardSlot.firstElementChild;
    if (!card) { if (current) current.remove(); return; }
    if (current && current.dataset.cardId === card.id) return; // keep its pending state
    const el = renderCard(card, {
      readOnly: this.readOnly || this.archived(),
      answer: (body) => this.answer(card, body),
      message: (text) => this.post(text, false, this.newId()),
      plan: card.kind === "plan" ? this.lastPlan() : undefined,
    });
    this.cardSlot.replaceChildren(el);
  }

  /** The plan of the newest ExitPlanMode call in the conversation. */
  lastPlan() {
    let best = null;
    for (const ev of this.convo.events.values()) {
      if (ev.kind === "tool_use" && ev.tool === "ExitPlanMode" && ev.input && ev.input.plan && (!best || ev.seq > best.seq)) best = ev;
    }
    return best ? String(best.input.plan) : undefined;
  }

  async answer(card, body) {
    try {
      return await post(`/api/sessions/${encodeURIComponent(this.id)}/cards/${encodeURIComponent(card.id)}`, body);
    } catch (error) {
      if (error.code === "card_closed") this.refreshSnapshot();
      throw error;
    }
  }

  renderHeld() {
    // Typed ones are in the conversation now, as the person's message.
    const settled = [...queuedItems(this.snap), ...this.held.filter((m) => m.state !== "typed")];
    // A message the relay or the Mac already holds is shown there, never also as "Sending…".
    const known = new Set([...settled, ...this.held].map((m) => m.id));
    const items = [...this.sending.filter((m) => !known.has(m.id)).map((m) => ({ ...m, state: "sending" })), ...settled];
    this.heldBox.hidden = !items.length;
    if (!items.length) { this.heldBox.replaceChildren(); return; }
    const waiting = this.held.filter((m) => m.state === "held").length;
    const ctx = { sessionId: this.id, others: Math.max(0, waiting - 1), readOnly: this.readOnly || this.archived(), done: () => this.refreshSnapshot() };
    this.heldBox.replaceChildren(
      h("h2.held-title", { title: t("held_hint") }, t("held_title")),
      h("ul.held-list", null, items.map((m) => h("li.held-item", { class: "hs-" + m.state, dataset: { id: m.id, state: m.state } },
        h("span.held-text", null, m.text), ...heldDetails(m), m.whole ? m.whole() : null, h("span.held-state", null, m.label || (this.snap && this.snap.failure && m.state === "held" ? failureText("not_delivered") : t("hs_" + m.state))),
        heldButtons(m, ctx)))));
  }

  renderComposer() {
    if (this.readOnly || !this.snap || this.archived()) return;
    const s = this.snap;
    const stopped = s.state === "ended" || ["ended", "resting"].includes(s.mark);
    this.input.placeholder = stopped ? t("msg_placeholder_ended") : t("msg_placeholder");
    const running = s.state === "busy" && !this.macOffline();
    this.stopButton.hidden = !running;
    this.nowButton.hidden = !(running || s.state === "waiting");
    // While a card takes the dock, the composer keeps to one row: its answer comes first.
    this.afterButton.hidden = !running;
    this.attachments.button.hidden = s.state === "waiting" && !this.attachments.files().length;
  }

  showPreview(text) {
    this.preview = text;
    const on = Boolean(text) && (!this.snap || this.snap.state === "busy");
    this.previewBox.hidden = !on;
    if (!on) { this.previewBox.replaceChildren(); return; }
    this.previewBox.replaceChildren(h("p.writing", null, t("writing")), h("p.plain", null, text));
    if (this.follow) this.scrollToBottom();
  }

  // -- actions

  async send(choice) {
    // true / false: "Send now" / "Send" (at the next safe point); or "after_turn".
    const when = choice === true ? "now" : choice || "held";
    const now = when === "now";
    const files = this.attachments.files();
    const text = this.input.value.trim() || files.map((f) => f.name).join(", ");
    const waiting = this.held.filter((m) => m.state === "held");
    if (!text && now && waiting.length) {
      // "Send now" with nothing typed: what is held goes now (the newest carries the others).
      try { await sendHeldNow(this.id, waiting[waiting.length - 1].id, waiting.length - 1); }
      catch (error) { this.refused(error); } finally { this.refreshSnapshot(); }
      return;
    }
    if (!text) { this.input.focus(); return; }
    // A retry keeps its id: never typed twice.
    const local = this.failed?.text === text ? this.failed : { id: this.newId(), text, when };
    // "Send now" types every held message with this one, as one block: say so.
    const joined = now ? this.held.filter((m) => m.state === "held" && m.id !== local.id).length : 0;
    this.sending.push(local);
    this.input.value = "";
    this.el.classList.remove("typing");
    this.grow();
    this.renderHeld();
    try {
      // Files first: the Mac keeps each and answers with the id the message names.
      const ids = [];
      for (const file of files) ids.push((await upload(this.id, file)).id);
      this.attachments.clear();
      const extra = { ...(when === "after_turn" ? { when } : {}), ...(ids.length ? { attachments: ids } : {}) };
      const result = await this.post(text, now, local.id, extra);
      this.failed = null;
      if (result && result.reopened && result.permission_mode) toast(t("reopened_in", { mode: modeName(result.permission_mode) }));
      else if (result && result.reopened) toast(t("reopened"));
      else if (joined) toast(t("sent_as_one", { n: joined + 1 }));
    } catch (error) {
      // Offline, "Send now" is offered the relay's queue too: it then goes as a normal message.
      if (error.code === "device_offline" && await offerQueue(this.id, local, { now }).catch((e) => { showError(e); return false; })) {
        this.failed = null;
      } else {
        this.failed = local;
        if (!this.input.value) this.input.value = text;
        this.grow();
        if (error.code !== "device_offline") this.refused(error);
      }
    } finally {
      this.sending = this.sending.filter((m) => m !== local);
      this.renderHeld();
      this.refreshSnapshot();
    }
  }

  newId() {
    return "m" + Date.now() + Math.random().toString(36).slice(2, 6);
  }

  post(text, now, id, extra = {}) {
    return post(`/api/sessions/${encodeURIComponent(this.id)}/messages`, { text, now, id, ...extra });
  }

  /** A command was refused; an archived session says so where the composer was. */
  refused(error) {
    if (error.code !== "session_archived") { showError(error); return; }
    this.snap = { ...this.snap, stage: "archived" };
    this.renderMeta();
    toast(t("archived_note"), { error: true });
  }

  async interrupt() {
    try { await post(`/api/sessions/${encodeURIComponent(this.id)}/interrupt`); }
    catch (error) { this.refused(error); }
  }

  async life(name, question) {
    if (question && !(await confirmBox(question, t(name)))) return;
    try {
      await post(`/api/sessions/${encodeURIComponent(this.id)}/${name}`);
      this.refreshSnapshot();
    } catch (error) { this.refused(error); }
  }

  /** Change the session (PATCH unless ``call`` is given); show what the relay answered. */
  async change(fields, call = () => patch(`/api/sessions/${encodeURIComponent(this.id)}`, fields)) {
    try {
      const snap = await call();
      this.snap = { ...this.snap, ...snap };
      this.app.sessions.set(this.id, { ...(this.app.sessions.get(this.id) || {}), ...snap });
      this.renderMeta();
      return true;
    } catch (error) { showError(error); return false; }
  }

  /** A new session with this one's history on the same Mac (POST …/fork); opens it. */
  async fork() {
    try {
      const created = await post(`/api/sessions/${encodeURIComponent(this.id)}/fork`, {});
      if (created.session) this.app.sessions.set(created.id, created.session);
      toast(t("forked"));
      location.hash = "#/s/" + encodeURIComponent(created.id);
    } catch (error) { this.refused(error); }
  }

  /** End the session and delete it with its events, here and on its Mac, once confirmed. */
  async remove() {
    if (!(await confirmBox(t("confirm_delete"), t("delete")))) return;
    try {
      await del(`/api/sessions/${encodeURIComponent(this.id)}`);
      this.app.sessions.delete(this.id);
      await cache.clearSession(this.id);
      toast(t("deleted_ok"));
      location.hash = "#/";
    } catch (error) { showError(error); }
  }

  async pin(on) {
    if (await this.change(null, () => post(`/api/sessions/${encodeURIComponent(this.id)}/${on ? "pin" : "unpin"}`))) toast(t(on ? "pinned_ok" : "unpinned_ok"));
  }

  async actions() {
    const s = this.snap || {};
    const stopped = s.state === "ended" || ["ended", "resting"].includes(s.mark);
    const looks = inGroup("info", [
      { label: t("cost"), run: async () => (await import("./extras.js")).showCost(this.id) },
      { label: t("perms"), run: async () => (await import("./extras.js")).showPolicy(this.id, this.readOnly || this.archived()) },
      { label: t("audit"), run: async () => (await import("./audit.js")).showAudit(this.id) },
    ]);
    // The decisions ledger is an everyday entry (issue 22): with files and changes.
    const decisions = { label: dt("title"), group: "everyday", run: () => showDecisions(this) };
    if (this.readOnly) {
      groupedSheet(this.title(), [decisions, ...looks, { label: t("leave_read_only"), group: "info", run: () => { location.hash = "#/s/" + encodeURIComponent(this.id); } }]);
      return;
    }
    // What this menu opens comes from the relay the first time (chunks of their own, relay/bundle.py).
    let reopen, files, memory;
    try {
      [reopen, files, memory] = await Promise.all([import("./reopen.js"), import("./files.js"), import("./memory.js")]);
    } catch (error) { showError(error); return; }
    const { reopenDialog, scopeAction } = reopen;
    const archived = this.archived();
    const moving = s.mark === "moving" || (s.move && s.move.state === "moving");
    const move = !archived && !s.locked && !moving && moveAction({ ...s, id: this.id }, this.app.devices, (m) => {
      this.snap = { ...this.snap, move: m, mark: "moving" };
      this.renderMeta();
    });
    const list = [
      ...inGroup("everyday", [
        !archived && stopped ? { label: t("reopen"), run: () => reopenDialog({ ...s, id: this.id }, () => this.refreshSnapshot()) } : null,
        // A stopped session takes them at its next start.
        ...(archived ? [] : modeModelActions({ ...s, id: this.id }, (snap) => {
          this.snap = { ...this.snap, ...snap };
          this.renderMeta();
        })),
        ...(archived ? [] : [scopeAction({ ...s, id: this.id }, (snap) => { this.snap = { ...this.snap, ...snap }; })]),
        ...files.filesActions(this.id),
        decisions,
        ...memory.memoryActions(s.cwd),
        !archived ? { label: t("fork"), run: () => this.fork() } : null,
        move || null,
      ]),
      ...looks,
      ...inGroup("info", [{ label: t("open_read_only"), run: () => { location.hash = "#/s/" + encodeURIComponent(this.id) + "/read"; } }]),
      ...inGroup("arrange", [
        { label: t("rename"), run: async () => { const v = await promptBox(t("rename_label"), s.title || ""); if (v !== null && v.trim()) this.change({ title: v.trim() }); } },
        { label: t("reset_title"), run: () => this.change(null, () => del(`/api/sessions/${encodeURIComponent(this.id)}/title`)) },
        { label: t("regen_title"), run: () => this.change(null, async () => { const r = await post(`/api/sessions/${encodeURIComponent(this.id)}/title/regenerate`); toast(t("regen_title_ok", { title: r.title })); return { title: r.title }; }) },
        { label: s.pinned ? t("unpin") : t("pin"), run: () => this.pin(!s.pinned) },
        { label: t("group"), run: async () => { const v = await promptBox(t("group_label"), s.group || ""); if (v !== null) this.change({ group: v.trim() }); } },
        { label: s.locked ? t("unlock") : t("lock"), run: () => this.change({ locked: !s.locked }) },
        { label: t("move_up"), run: () => this.move(-1) },
        { label: t("move_down"), run: () => this.move(1) },
      ]),
      ...inGroup("ending", [
        !archived && !s.locked && s.mark !== "resting" && s.state !== "ended" ? { label: t("rest"), kind: "rest", run: () => this.life("rest", t("confirm_rest")) } : null,
        !archived && !s.locked && s.mark !== "ended" ? { label: t("end"), kind: "end", danger: true, run: () => this.life("end", t("confirm_end")) } : null,
        !s.locked ? { label: t("delete"), danger: true, run: () => this.remove() } : null,
      ]),
    ];
    groupedSheet(this.title(), list);
  }

  /** Reorder within its Mac and group: a position between the neighbours one step away. */
  move(step) {
    const s = this.snap;
    const siblings = [...this.app.sessions.values()]
      .filter((o) => o.device_id === s.device_id && (o.group || "") === (s.group || ""))
      .sort((a, b) => a.position - b.position || String(a.created_at).localeCompare(String(b.created_at)));
    const index = siblings.findIndex((o) => o.id === s.id);
    const target = index + step;
    if (index < 0 || target < 0 || target >= siblings.length) return;
    const near = siblings[target];
    const far = siblings[target + step];
    const position = far ? (near.position + far.position) / 2 : near.position + step;
    this.change({ position });
  }

  destroy() {
    this.destroyed = true;
    window.removeEventListener("scroll", this.onScroll);
    if (this.stream) this.stream.close();
    this.sentinel.disconnect();
    clearTimeout(this.snapTimer);
    clearTimeout(this.flushTimer);
    clearTimeout(this.agentTimer);
    if (this.toSave.length) this.save();
  }

  lastSeenText() {
    const device = this.device();
    return { name: device ? device.name || device.id : "Mac", ago: ago(device && device.last_seen, t) };
  }
}
