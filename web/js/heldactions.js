// What the person can do with one waiting message: remove it, or send it now. A message held on
// the Mac is taken back (it then shows "Cancelled") or sent now (relay route …/held/<id>/now:
// taken back and sent again as "Send now", the messages held with it typed in the same block);
// one queued on the relay for an offline Mac can be removed.

import { del, post } from "./api.js";
import { h } from "./dom.js";
import { getLang } from "./i18n.js";
import { actionSheet, showError, toast } from "./ui.js";

const PREVIEW_CHARS = 80; // of the message, as the choices' title

const TEXT = {
  en: {
    remove: "Remove", now: "Send now", removed: "Removed: it will not be sent",
    sent_now: "Sent now", sent_now_block: "Sent now, with {n} other held messages as one block",
    menu_label: "What to do with this message",
  },
  ko: {
    remove: "빼기", now: "지금 보내기", removed: "뺐어요: 보내지 않아요",
    sent_now: "지금 보냈어요", sent_now_block: "지금 보냈어요: 붙잡은 다른 글 {n}개와 한 번에",
    menu_label: "이 글을 어떻게 할까요",
  },
};

function text(key, n = 0) {
  const table = TEXT[getLang()] || TEXT.en;
  return (table[key] || TEXT.en[key]).replace("{n}", String(n));
}

const path = (sessionId, ...parts) =>
  `/api/sessions/${encodeURIComponent(sessionId)}/` + parts.map(encodeURIComponent).join("/");

/** Send the held message ``id`` now; ``others``: how many other held messages go with it. */
export async function sendHeldNow(sessionId, id, others) {
  await post(path(sessionId, "held", id, "now"));
  toast(others ? text("sent_now_block", others) : text("sent_now"));
}

/** The button of one item of the held ledger, opening its choices (none for one that is not
 * waiting any more). One small button per row keeps the dock short above a card.
 * @param {{id: string, state: string, text: string}} item  a message held on the Mac ("held")
 *   or queued on the relay ("queued")
 * @param {{sessionId: string, others: number, readOnly: boolean, done: () => void}} ctx
 *   others: how many other messages are held on the Mac; done: read the session again */
export function heldButtons(item, ctx) {
  if (ctx.readOnly || !["held", "queued", "failed"].includes(item.state)) return null;
  const onMac = item.state === "held";
  const button = h("button.icon.held-act", { type: "button", "aria-label": text("menu_label"), title: text("menu_label") }, "⋯");
  const remove = { label: text("remove"), danger: true, run: () => run(button, async () => {
    if (onMac) await post(path(ctx.sessionId, "held", item.id, "cancel"));
    else await del(path(ctx.sessionId, "outbox", item.id));
    toast(text("removed"));
  }, ctx) };
  const now = { label: text("now"), run: () => run(button, () => sendHeldNow(ctx.sessionId, item.id, ctx.others), ctx) };
  button.addEventListener("click", () => actionSheet(preview(item.text), onMac ? [now, remove] : [remove]));
  return h("span.held-acts", null, button);
}

function preview(words) {
  const line = String(words || "").split("\n")[0];
  return line.length > PREVIEW_CHARS ? line.slice(0, PREVIEW_CHARS) + "…" : line;
}

async function run(button, work, ctx) {
  button.disabled = true;
  try { await work(); } catch (error) { showError(error); } finally {
    button.disabled = false;
    ctx.done();
  }
}
