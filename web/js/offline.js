// A session on a Mac that is offline: its state is unknown since the Mac was last seen, and what
// was last known of it (a question waiting for you) is kept and shown as such.

import { get, post } from "./api.js";
import { h } from "./dom.js";
import { getLang, t } from "./i18n.js";
import { confirmBox, toast } from "./ui.js";
import { dateTimeText } from "./dates.js";

const TEXT = {
  en: {
    since: "State unknown since {time} (Mac offline)", unknown: "State unknown (Mac offline)",
    offer: "The Mac is offline. Queue this message on the relay? It is sent once, in order, when the Mac is back.",
    offer_now: "The Mac is offline, so nothing can be interrupted now. Queue this message on the relay? When the Mac is back it is sent once, in order, as a normal message (no interrupt).",
    queue: "Queue until the Mac is back", queued: "Queued on the relay", queued_ok: "Queued: sent when the Mac is back",
    refused: "Not sent: {why}",
  },
  ko: {
    since: "{time}부터 상태 모름 (맥 연결 끊김)", unknown: "상태 모름 (맥 연결 끊김)",
    offer: "맥 연결이 끊겼어요. 이 글을 릴레이에 맡길까요? 맥이 돌아오면 순서대로 한 번만 보내요.",
    offer_now: "맥 연결이 끊겨서 지금은 중단할 수 없어요. 이 글을 릴레이에 맡길까요? 맥이 돌아오면 중단 없이 보통 글로 순서대로 한 번만 보내요.",
    queue: "맥이 돌아오면 보내기", queued: "릴레이에서 기다리는 중", queued_ok: "맡겼어요: 맥이 돌아오면 보내요",
    refused: "못 보냄: {why}",
  },
};

function text(key, time = "") {
  const table = TEXT[getLang()] || TEXT.en;
  return table[key].replace("{time}", time).replace("{why}", time);
}

/** "HH:MM" in local time (with the date when it was not today), or "" when unknown. */
export function seenAt(iso) {
  if (!iso) return "";
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return "";
  const lang = document.documentElement.lang || getLang();
  const time = when.toLocaleTimeString(lang, { hour: "2-digit", minute: "2-digit", hour12: false });
  const today = new Date().toDateString() === when.toDateString();
  return today ? time : dateTimeText(iso);
}

/** The badge of a session whose Mac is offline ("State unknown since 21:04 (Mac offline)"). */
export function offlineLabel(device) {
  const time = seenAt(device && device.last_seen);
  return time ? text("since", time) : text("unknown");
}

/** Whether a session on an offline Mac was last waiting for you: the relay's ``last_known``,
 * or, when the page saw the Mac go away, what it was told while the Mac was there. */
export function stillNeedsYou(session) {
  if (!session) return false;
  return Boolean(session.last_known ? session.last_known.needs_you : session.needs_you);
}

/** The send was refused because the Mac is offline: offer to queue it on the relay (same id, so a
 * retry is never queued twice). With ``now`` ("Send now") it says it will not interrupt: a queued
 * message is delivered as a normal one. Resolves true when it was queued. */
export async function offerQueue(sessionId, message, { now = false } = {}) {
  if (!(await confirmBox(text(now ? "offer_now" : "offer"), text("queue")))) return false;
  await post(`/api/sessions/${encodeURIComponent(sessionId)}/outbox`, { text: message.text, id: message.id });
  toast(text("queued_ok"));
  return true;
}

const whole = new Map(); // texts read whole: they stay open when the ledger is drawn again

/** The session's messages queued on the relay, as ledger items: a preview of each, and a button
 * reading one cut short whole. */
export function queuedItems(snap) {
  return ((snap && snap.queued) || []).map((m) => {
    const key = snap.id + " " + m.id, read = whole.get(key);
    return {
      id: m.id, state: m.error ? "failed" : "queued",
      text: read ?? m.preview + (m.truncated ? "…" : ""),
      label: m.error ? text("refused", m.error) : text("queued"),
      whole: m.truncated && read === undefined ? () => wholeButton(snap.id, m, key) : null,
    };
  });
}

function wholeButton(sessionId, m, key) {
  const button = h("button.link.queued-whole", { type: "button" }, t("show_all", { n: m.length }));
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const read = await get(`/api/sessions/${encodeURIComponent(sessionId)}/outbox/${encodeURIComponent(m.id)}`);
      whole.set(key, read.text);
      // The list may have been drawn again while the text was read: this button's item is then
      // gone, and the item on screen is the new one.
      for (const item of document.querySelectorAll(`.held-item[data-id="${CSS.escape(m.id)}"]`)) {
        item.querySelector(".held-text").textContent = read.text;
        item.querySelector(".queued-whole")?.remove();
      }
      button.remove();
    } catch (error) {
      button.disabled = false;
      button.textContent = t("full_failed", { why: error.message });
    }
  });
  return button;
}
