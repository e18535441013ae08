// A session's audit log (GET /api/audit?session_id=…): every decision on its cards, newest first —
// who answered (the phone, its token, its address) or which rule did, the card, the answer.

import { get } from "./api.js";
import { append, h } from "./dom.js";
import { getLang, t } from "./i18n.js";
import { modal } from "./ui.js";

const PAGE = 50;

function answerText(a) {
  if (a.decision) return t("aud_" + a.decision);
  if (a.closed_by === "message") return t("aud_closed_by_message", { text: a.text || "" });
  const parts = (a.keys || []).map((k, i) => `${(a.labels || [])[i] || "?"} [${k}]`);
  if (a.text) parts.push(`“${a.text}”`);
  return parts.join(", ") + (a.always ? " · " + t("aud_always") : "");
}

function byText(e) {
  if (e.who) return t("aud_by_phone", { name: e.who.name || e.who.phone_id, token: e.who.token_id, addr: e.who.address || "?" });
  return t("aud_by_rule", { source: t("aud_src_" + e.source), rule: e.rule || "?" });
}

function entryItem(e) {
  const card = e.card || {};
  const at = new Date(e.at).toLocaleString(getLang(), { dateStyle: "short", timeStyle: "medium" });
  const what = [card.tool || card.title || t("ck_" + card.kind), card.summary].filter(Boolean).join(" · ");
  return h("li.audit-entry", { dataset: { id: String(e.id), source: e.source } },
    h("span.row-title", null, what),
    h("span.row-meta", null, `${at} · ${answerText(e.answer || {})}`),
    h("span.row-meta.audit-by", null, byText(e)),
    card.input_digest ? h("span.row-meta", { title: card.input_digest }, "sha256 " + card.input_digest.slice(0, 12)) : null);
}

/** The session menu's "Audit": its decisions a page at a time ("Older" asks for the next). */
export async function showAudit(id) {
  const list = h("ul.list.audit", { "aria-live": "polite" });
  const status = h("p.muted", null, t("loading"));
  const more = h("button.small", { type: "button", hidden: true }, t("aud_older"));
  modal(h("div.wide", null, h("h2.sheet-title", null, t("audit")), h("p.note", null, t("aud_note")), status, list, more,
    h("form", { method: "dialog" }, h("button.sheet-cancel", null, t("close")))));
  let before = null;
  const load = async () => {
    more.disabled = true;
    try {
      const params = new URLSearchParams({ session_id: id, limit: String(PAGE) });
      if (before !== null) params.set("before", String(before));
      const page = await get("/api/audit?" + params);
      append(list, page.entries.map(entryItem));
      status.textContent = list.children.length ? "" : t("aud_none");
      status.hidden = Boolean(list.children.length);
      before = page.next_before;
      more.hidden = before === null;
    } catch (error) {
      status.hidden = false;
      status.className = "error";
      status.textContent = error.message;
    }
    more.disabled = false;
  };
  more.addEventListener("click", load);
  await load();
}
