// One server-sent event stream with honest state, read with fetch so that every byte counts:
// the relay writes a keep-alive comment at least every X-CB-Keepalive seconds (EventSource
// hides comments), so no byte for two intervals means the connection is dead even when the
// socket still looks open (a phone that lost its network, a proxy that froze). The stream is
// then cut and opened again; ``url`` is built at each attempt so it asks for what came after
// the last event seen. The browser's online/offline and a page coming back into view (a phone
// waking from sleep) are checked at once instead of waiting for the timer.
// After an error answer from the relay it reopens after a pause, asking ``check`` first.

import { extraHeaders } from "./api.js";

const DEFAULT_KEEPALIVE = 15; // seconds, until the relay's header says otherwise
const SILENT_INTERVALS = 2;   // keep-alive intervals without a byte before the stream counts as dead

export class LiveStream {
  /**
   * @param {() => string} url  the address to (re)open, built at each attempt
   * @param {Record<string, (data: any) => void>} handlers  SSE event → handler
   * @param {{onState?: (s: string) => void, check?: () => Promise<boolean>}} options
   *   onState: "connecting" | "open" | "error"; check: resolves false to stop reopening;
   *   onHeard: every event (the relay's heartbeat too) and every opening: the relay is writing now
   */
  constructor(url, handlers, { onState, check, onHeard } = {}) {
    this.url = url;
    this.handlers = handlers;
    this.onState = onState || (() => {});
    this.check = check;
    this.onHeard = onHeard || (() => {});
    this.state = "connecting";
    this.delay = 1000;
    this.timer = null;
    this.watchdog = null;
    this.keepalive = DEFAULT_KEEPALIVE;
    this.lastByte = Date.now();
    this.closed = false;
    this.source = null;
    this.onOffline = () => this.cut();
    this.onOnline = () => { if (this.state !== "open") this.restart(); };
    this.onVisible = () => {
      if (document.visibilityState !== "visible" || !this.source) return;
      // Timers sleep with the phone: one interval without a byte is enough to look again.
      if (Date.now() - this.lastByte > this.keepalive * 1000) this.cut();
    };
    window.addEventListener("offline", this.onOffline);
    window.addEventListener("online", this.onOnline);
    document.addEventListener("visibilitychange", this.onVisible);
    this.connect();
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.onState(state);
  }

  /** A byte arrived (or an attempt started): the connection is alive for two more intervals. */
  alive() {
    this.lastByte = Date.now();
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.cut(), this.keepalive * SILENT_INTERVALS * 1000);
  }

  /** The connection is dead or in doubt: say so and open it again at once. */
  cut() {
    if (this.closed || !this.source) return;
    this.source.close();
    this.source = null;
    clearTimeout(this.watchdog);
    this.setState("error");
    this.delay = 1000;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { if (!this.closed && !this.source) this.connect(); }, 0);
  }

  connect() {
    if (this.closed) return;
    const abort = new AbortController();
    const source = { close: () => abort.abort() };
    this.source = source;
    this.alive(); // an attempt that hangs is cut like a silent stream
    this.read(source, abort);
  }

  async read(source, abort) {
    try {
      const response = await fetch(this.url(), {
        headers: { Accept: "text/event-stream", ...extraHeaders() },
        credentials: "same-origin",
        cache: "no-store",
        signal: abort.signal,
      });
      if (!response.ok || !response.body) throw new Error("refused");
      if (source !== this.source) return;
      const every = parseFloat(response.headers.get("X-CB-Keepalive") || "");
      if (every > 0) this.keepalive = every;
      this.alive();
      this.delay = 1000;
      this.onHeard();
      this.setState("open");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done || source !== this.source) break;
        this.alive();
        buffer = (buffer + value).replace(/\r\n/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (source !== this.source) return;
          this.dispatch(frame);
        }
      }
    } catch (_) { /* refused or cut: below */ }
    if (abort.signal.aborted || this.closed || source !== this.source) return;
    this.source = null;
    clearTimeout(this.watchdog);
    this.setState("error");
    this.reopenLater();
  }

  dispatch(frame) {
    const name = (frame.match(/^event: ?(.*)$/m) || [])[1] || "message";
    const lines = [...frame.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]);
    if (!lines.length) return; // a keep-alive comment
    this.onHeard(); // the heartbeat event (relay/sse.py) has no handler: it only counts here
    let parsed;
    try { parsed = JSON.parse(lines.join("\n")); } catch (_) { return; }
    if (this.handlers[name]) this.handlers[name](parsed);
  }

  reopenLater(ms = this.delay) {
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      if (this.closed || this.source) return;
      if (this.check && !(await this.checkInTime())) return;
      if (!this.closed && !this.source) this.connect();
    }, ms);
    this.delay = Math.min(this.delay * 2, 15000);
  }

  /** ``check``, or true when it does not answer within two intervals (a frozen network). */
  checkInTime() {
    const wait = new Promise((resolve) => setTimeout(() => resolve(true), this.keepalive * SILENT_INTERVALS * 1000));
    return Promise.race([this.check().catch(() => true), wait]);
  }

  /** Close now and open again at once (e.g. after a resync). */
  restart() {
    if (this.source) this.source.close();
    this.source = null;
    clearTimeout(this.timer);
    this.delay = 1000;
    this.setState("connecting");
    this.connect();
  }

  /** End the stream; a handler may call this (e.g. on resync or revoked). */
  end() {
    if (this.source) this.source.close();
    this.source = null;
    clearTimeout(this.watchdog);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.end();
    window.removeEventListener("offline", this.onOffline);
    window.removeEventListener("online", this.onOnline);
    document.removeEventListener("visibilitychange", this.onVisible);
  }
}
