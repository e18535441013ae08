// What the page knows of the relay now, said the same way on every screen.
//
// "Live" only while something came on the account stream in the last LIVE_WINDOW_MS: the relay
// sends a heartbeat event every stream_heartbeat_interval (wire/config.py), so a frozen relay
// (its sockets open, nothing sent) stops being "Live" within 10 s. When the page cannot hear the
// relay (unreachable, reconnecting, silent) it cannot know the Macs either: every Mac and session
// is "unknown since" the last time it heard the relay, with its last known state greyed — never
// "Mac offline", which only the relay can say.

import { getLang } from "./i18n.js";
import { seenAt } from "./offline.js";

export const LIVE_WINDOW_MS = 10000;
const CHECK_MS = 1000; // how often the page looks whether the last word got too old

const TEXT = {
  en: {
    live: "Live", connecting: "Connecting…", reconnecting: "Reconnecting…",
    silent: "No word since {time}", unreachable: "Unreachable",
    unknown_since: "Unknown since {time}", unknown: "Unknown",
    mac_unknown: "unknown since {time}", mac_unknown_never: "unknown",
    band_silent: "No word from the relay since {time}: showing what was last known",
    band_unreachable: "Relay unreachable since {time}: showing what this phone saved",
    band_reconnecting: "Reconnecting… (last word from the relay {time})",
  },
  ko: {
    live: "연결됨", connecting: "연결하는 중…", reconnecting: "다시 연결하는 중…",
    silent: "{time}부터 응답 없음", unreachable: "연결 안 됨",
    unknown_since: "{time}부터 모름", unknown: "모름",
    mac_unknown: "{time}부터 모름", mac_unknown_never: "모름",
    band_silent: "{time}부터 릴레이 응답이 없어요: 마지막으로 알던 상태를 보여 줘요",
    band_unreachable: "{time}부터 릴레이에 연결할 수 없어요: 폰에 저장된 내용을 보여 줘요",
    band_reconnecting: "다시 연결하는 중… (릴레이의 마지막 응답 {time})",
  },
};

export function words(key, time = "") {
  const table = TEXT[getLang()] || TEXT.en;
  return (table[key] || TEXT.en[key]).replace("{time}", time);
}

let heardAt = 0; // Date.now() when the relay last sent something on the account stream
let savedAt = 0; // when what the page shows was saved, when it came from the phone's cache
let state = { lost: false, live: false, kind: "connecting" };

/** Something came from the relay on the account stream (a heartbeat, an event, the snapshot). */
export function heard(when = Date.now()) { heardAt = when; }

/** What is on screen came from the phone's cache, saved at ``when`` (ms). */
export function restored(when) { if (when > 0) savedAt = when; }

/** Whether the last word from the relay is older than the live window (or there was none). */
export function silent(now = Date.now()) { return !heardAt || now - heardAt > LIVE_WINDOW_MS; }

/**
 * Work out the connection's state from what the app knows and keep it for the drawing code.
 * @param {{paired: boolean|null, relayOk: boolean, account: string}} app  account: the account
 *   stream's state ("connecting" | "open" | "error")
 * @returns {{lost: boolean, live: boolean, kind: string}} kind: live | connecting | reconnecting
 *   | silent | unreachable
 */
export function assess({ paired, relayOk, account }) {
  let kind;
  if (!relayOk) kind = "unreachable";
  else if (account === "open") kind = silent() ? "silent" : "live";
  else if (account === "error") kind = "reconnecting";
  else kind = heardAt || savedAt ? "reconnecting" : "connecting";
  // Only a page that had word of the account (heard or restored) has something to call unknown.
  const lost = paired !== false && kind !== "live" && kind !== "connecting" && Boolean(heardAt || savedAt);
  state = { lost, live: kind === "live" && paired !== false, kind };
  return state;
}

/** The time the page last knew the account (HH:MM, with the date when not today), or "". */
export function knownAt() {
  const when = heardAt || savedAt;
  return when ? seenAt(new Date(when).toISOString()) : "";
}

/** True when Macs and sessions must be shown as unknown (the page cannot hear the relay). */
export function contactLost() { return state.lost; }

/** The header's word for the connection (the same on the overview and in a session). */
export function pillText() {
  const time = knownAt();
  if (state.kind === "silent") return words("silent", time);
  if (state.kind === "unreachable") return words("unreachable");
  return words(state.kind === "live" ? "live" : state.kind === "reconnecting" ? "reconnecting" : "connecting");
}

/** The band's sentence for a lost connection, or "" (then the app's own band rules apply). */
export function bandText() {
  if (!state.lost) return "";
  return words("band_" + state.kind, knownAt());
}

/** A session's or Mac's "Unknown since 21:04" while the relay is not heard. */
export function unknownLabel(mac = false) {
  const time = knownAt();
  if (mac) return time ? words("mac_unknown", time) : words("mac_unknown_never");
  return time ? words("unknown_since", time) : words("unknown");
}

/** Call ``onFlip`` whenever the last word from the relay gets too old (or fresh again). */
export function watchSilence(onFlip) {
  let was = silent();
  setInterval(() => {
    const now = silent();
    if (now !== was) { was = now; onFlip(); }
  }, CHECK_MS);
}
