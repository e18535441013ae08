"use strict";
// A first control page: Macs and sessions, live from /api/stream. Text from the relay is only
// ever set with textContent, never parsed as HTML.
(function () {
  const $ = (id) => document.getElementById(id);
  const devices = new Map();
  const sessions = new Map();

  function item(parts) {
    const li = document.createElement("li");
    for (const [cls, text] of parts) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      li.appendChild(span);
    }
    return li;
  }

  function ago(iso) {
    if (!iso) return "never";
    const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (seconds < 60) return "just now";
    if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
    if (seconds < 86400) return Math.round(seconds / 3600) + " h ago";
    return Math.round(seconds / 86400) + " d ago";
  }

  function render() {
    const deviceList = $("devices");
    deviceList.replaceChildren(
      ...[...devices.values()].map((d) =>
        item([["name", d.name || d.id], ["state " + (d.online ? "online" : "offline"),
          d.online ? "online" : "offline · last seen " + ago(d.last_seen)]])));
    const ordered = [...sessions.values()].sort((a, b) =>
      (b.needs_you - a.needs_you) || (a.position - b.position));
    $("sessions").replaceChildren(
      ...ordered.map((s) =>
        item([["state " + s.state, s.state + (s.mark ? " · " + s.mark : "")],
          ["name", s.title || s.cwd || s.id], ["meta", s.cwd + " · " + ago(s.updated_at)]])));
    const waiting = ordered.filter((s) => s.needs_you).length;
    $("needs-you").hidden = waiting === 0;
    $("needs-you").textContent = waiting + " session(s) need you";
  }

  function band(text, ok) {
    const el = $("connection");
    el.textContent = text;
    el.className = "band " + (ok ? "ok" : "warn");
  }

  async function start() {
    const me = await fetch("/api/me", { credentials: "same-origin" }).catch(() => null);
    if (!me) { band("Relay unreachable", false); setTimeout(start, 3000); return; }
    if (me.status === 401) { $("login").hidden = false; band("Not paired", false); return; }
    $("overview").hidden = false;
    const stream = new EventSource("/api/stream");
    stream.addEventListener("open", () => band("Connected", true));
    stream.addEventListener("error", () => band("Reconnecting…", false));
    stream.addEventListener("snapshot", (e) => {
      const data = JSON.parse(e.data);
      devices.clear(); sessions.clear();
      data.devices.forEach((d) => devices.set(d.id, d));
      data.sessions.forEach((s) => sessions.set(s.id, s));
      render();
    });
    stream.addEventListener("session", (e) => {
      const s = JSON.parse(e.data); sessions.set(s.id, s); render();
    });
    stream.addEventListener("device", (e) => {
      const d = JSON.parse(e.data);
      devices.set(d.id, Object.assign(devices.get(d.id) || {}, d)); render();
    });
    stream.addEventListener("revoked", () => { stream.close(); location.reload(); });
  }

  start();
})();
