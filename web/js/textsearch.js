// "Search in conversations": when the session search finds nothing, one tap looks for the words
// in the messages themselves (GET /api/search/text) and lists the sessions with what was found.

import { get } from "./api.js";
import { h } from "./dom.js";
import { getLang } from "./i18n.js";
import { row } from "./overview.js";

const TEXT = {
  en: {
    offer: "Search in conversations for “{q}”", none: "Not found in any conversation either.",
    title: "In conversations", more: "More matches: type more words to narrow them.", searching: "Searching the conversations…",
  },
  ko: {
    offer: "대화 내용에서 “{q}” 찾기", none: "대화 내용에서도 찾지 못했어요.",
    title: "대화 내용에서", more: "더 있어요: 단어를 더 넣어 좁혀 보세요.", searching: "대화 내용을 찾는 중…",
  },
};

function text(key, q = "") {
  return ((TEXT[getLang()] || TEXT.en)[key] || TEXT.en[key]).replace("{q}", q);
}

/** The one-tap offer, which then shows what it found in its place. */
export function conversationSearch(app, query) {
  const box = h("section.found.in-convo", { dataset: { part: "conversations" } });
  const offer = h("button.in-convo-offer", { type: "button" }, text("offer", query));
  offer.addEventListener("click", async () => {
    offer.disabled = true;
    offer.textContent = text("searching");
    try {
      const found = await get("/api/search/text?" + new URLSearchParams({ q: query }));
      const rows = found.sessions.filter((s) => app.sessions.has(s.session_id)).map((s) => {
        const item = row(app.sessions.get(s.session_id), app.devices, true);
        const link = item.querySelector("a");
        link.append(...s.hits.map((hit) => h("span.row-meta.in-convo-hit", { dataset: { seq: hit.seq } }, hit.snippet)));
        return item;
      });
      box.replaceChildren(...[h("h2.group", null, text("title")),
        rows.length ? h("ul.rows", null, rows) : h("p.muted.pad", null, text("none")),
        found.more ? h("p.note.pad", null, text("more")) : null].filter(Boolean));
    } catch (error) {
      offer.disabled = false;
      offer.textContent = text("offer", query);
      box.append(h("p.note.pad", null, error.message));
    }
  });
  box.append(offer);
  return box;
}
