// One EventSource with honest state. The browser reconnects by itself after a network error
// (sending Last-Event-ID); after an error answer from the relay we reopen it after a pause,
// asking ``check`` first what went wrong.
// A read-only view marks every request, so it reads streams with fetch (EventSource has no headers).

import { extraHeaders } from "./api.js";

export class LiveStream {
  /**
   * @param {() => string} url  the address to (re)open, built at each attempt
   * @param {Record<string, (data: any, ev: MessageEvent) => void>} handlers  SSE event → handler
   * @param {{onState?: (s: string) => void, check?: () => Promise<boolean>}} options
   *   onState: "connecting" | "open" | "error"; check: resolves false to stop reopening
   */
  constructor(url, handlers, { onState, check } = {}) {
    this.url = url;
    this.handlers = handlers;
    this.onState = onState || (() => {});
    this.check = check;
    this.state = "connecting";
    this.delay = 1000;
    this.timer = null;
    this.closed = false;
    this.source = null;
    this.connect();
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.onState(state);
  }

  connect() {
    if (this.closed) return;
    const headers = extraHeaders();
    if (Object.keys(headers).length) { this.connectFetch(headers); return; }
    const source = new EventSource(this.url(), { withCredentials: true });
    this.source = source;
    source.onopen = () => { this.delay = 1000; this.setState("open"); };
    source.onerror = () => {
      if (this.closed || source !== this.source) return;
      this.setState("error");
      if (source.readyState === EventSource.CLOSED) this.reopenLater();
    };
    for (const [name, handler] of Object.entries(this.handlers)) {
      source.addEventListener(name, (ev) => {
        if (source !== this.source) return;
        let data = null;
        try { data = ev.data ? JSON.parse(ev.data) : null; } catch (_) { return; }
        handler(data, ev);
      });
    }
  }

  async connectFetch(headers) {
    const abort = new AbortController();
    const source = { close: () => abort.abort() };
    this.source = source;
    try {
      const response = await fetch(this.url(), { headers, cache: "no-store", signal: abort.signal });
      if (!response.ok || !response.body) throw new Error("refused");
      if (source !== this.source) return;
      this.delay = 1000;
      this.setState("open");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
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
    this.setState("error");
    this.reopenLater();
  }

  dispatch(frame) {
    const name = (frame.match(/^event: ?(.*)$/m) || [])[1] || "message";
    const data = [...frame.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]).join("\n");
    let parsed;
    try { parsed = JSON.parse(data); } catch (_) { return; }
    if (this.handlers[name]) this.handlers[name](parsed);
  }

  reopenLater() {
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      if (this.closed) return;
      if (this.check && !(await this.check().catch(() => true))) return;
      this.connect();
    }, this.delay);
    this.delay = Math.min(this.delay * 2, 15000);
  }

  /** Close now and open again at once (e.g. after a resync). */
  restart() {
    if (this.source) this.source.close();
    clearTimeout(this.timer);
    this.delay = 1000;
    this.setState("connecting");
    this.connect();
  }

  /** End the stream; a handler may call this (e.g. on resync or revoked). */
  end() {
    if (this.source) this.source.close();
    this.source = null;
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.end();
  }
}
