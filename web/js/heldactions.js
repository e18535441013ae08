// What the person can do with one waiting message: remove it, or send it now. A message held on
// the Mac is taken back (it then shows "Cancelled") or sent now (relay route …/held/<id>/now:
// taken back and sent again as "Send now", the messages held with it typed in the same block);
// one queued on the relay for an offline Mac can be removed.

import { del, post } from "./api.js";
import { h } from "./dom.js";
import { getLang } from "./i18n.js";
import { showError, toast } from "./ui.js";

const TEXT = {
  en: {
    remove: "Remove", now: "Send now", removed: "Removed: it will not be sent",
    sent_now: "Sent now", sent_now_block: "Sent now, with {n} other held messages as one block",
    remove_label: "Remove this message", now_label: "Send this message now",
  },
  ko: {
    remove: "빼기", now: "지금 보내기", removed: "뺐어요: 보내지 않아요",
    sent_now: "지금 보냈어요", sent_now_block: "지금 보냈어요: 붙잡은 다른 글 {n}개와 한 번에",
    remove_label: "이 글 빼기", now_label: "이 글 지금 보내기",
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

/** The buttons of one item of the held ledger (none for one that is not waiting any more).
 * @param {{id: string, state: string}} item  a message held on the Mac ("held") or queued on
 *   the relay ("queued")
 * @param {{sessionId: string, others: number, readOnly: boolean, done: () => void}} ctx
 *   others: how many other messages are held on the Mac; done: read the session again */
export function heldButtons(item, ctx) {
  if (ctx.readOnly || !["held", "queued", "failed"].includes(item.state)) return null;
  const onMac = item.state === "held";
  const remove = h("button.held-act.held-remove", { type: "button", "aria-label": text("remove_label"), title: text("remove_label") }, text("remove"));
  const buttons = [remove];
  remove.addEventListener("click", () => run(remove, async () => {
    if (onMac) await post(path(ctx.sessionId, "held", item.id, "cancel"));
    else await del(path(ctx.sessionId, "outbox", item.id));
    toast(text("removed"));
  }, ctx));
  if (onMac) {
    const now = h("button.held-act.held-now", { type: "button", "aria-label": text("now_label"), title: text("now_label") }, text("now"));
    now.addEventListener("click", () => run(now, () => sendHeldNow(ctx.sessionId, item.id, ctx.others), ctx));
    buttons.push(now);
  }
  return h("span.held-acts", null, ...buttons);
}

async function run(button, work, ctx) {
  const all = button.parentElement ? [...button.parentElement.querySelectorAll("button")] : [button];
  for (const b of all) b.disabled = true;
  try { await work(); } catch (error) { showError(error); } finally {
    for (const b of all) b.disabled = false;
    ctx.done();
  }
}
