// A small, safe Markdown renderer: it builds DOM nodes (text nodes only, never HTML), so a
// transcript cannot inject markup. Fenced code, headings, lists (nested), quotes, rules, simple
// tables, inline code, bold, italic, strike-through and links (http and https only).

import { h } from "./dom.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

/** Render Markdown ``text`` into a new <div class="md">. */
export function markdown(text) {
  const root = h("div.md");
  blocks(String(text || "").replace(/\r\n?/g, "\n").split("\n"), root);
  return root;
}

function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++;
      const code = h("code", null, body.join("\n"));
      if (m[2]) code.dataset.lang = m[2];
      parent.append(h("pre.code", null, code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const el = h("p.md-h.md-h" + m[1].length);
      inline(m[2], el);
      parent.append(el);
      i++;
      continue;
    }
    if (RULE.test(line)) { parent.append(h("hr")); i++; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) { body.push(m[1]); i++; }
      const quote = h("blockquote");
      blocks(body, quote);
      parent.append(quote);
      continue;
    }
    if ((m = ITEM.exec(line))) { i = list(lines, i, parent); continue; }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
      i = table(lines, i, parent);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) para.push(lines[i++]);
    if (!para.length) para.push(lines[i++]);
    const p = h("p");
    para.forEach((text, k) => {
      if (k) p.append(h("br"));
      inline(text.trim(), p);
    });
    parent.append(p);
  }
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) || (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]));
}

function list(lines, i, parent) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const el = h(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) el.start = parseInt(first[2], 10);
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    i++;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        // a blank line continues the item only if an indented line follows
        if (i + 1 < lines.length && /^\s+\S/.test(lines[i + 1]) && leading(lines[i + 1]) > indent) {
          body.push(""); i++; continue;
        }
        break;
      }
      const next = ITEM.exec(line);
      if (next && next[1].length <= indent) break;
      if (!next && leading(line) <= indent && startsBlock(lines, i)) break;
      body.push(line.slice(Math.min(leading(line), indent + 2)));
      i++;
    }
    const li = h("li");
    if (body.length === 1 || !body.slice(1).some((l) => ITEM.test(l) || FENCE.test(l))) {
      body.forEach((text, k) => { if (k) li.append(h("br")); inline(text.trim(), li); });
    } else {
      blocks(body, li);
    }
    el.append(li);
  }
  parent.append(el);
  return i;
}

function leading(line) { return line.length - line.trimStart().length; }

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

function table(lines, i, parent) {
  const head = cells(lines[i]);
  const tableEl = h("table");
  const tr = h("tr");
  head.forEach((c) => { const th = h("th"); inline(c, th); tr.append(th); });
  tableEl.append(h("thead", null, tr));
  const body = h("tbody");
  i += 2;
  while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
    const row = h("tr");
    cells(lines[i]).forEach((c) => { const td = h("td"); inline(c, td); row.append(td); });
    body.append(row);
    i++;
  }
  tableEl.append(body);
  parent.append(h("div.table-wrap", null, tableEl));
  return i;
}

/** A safe link target: only absolute http(s) URLs; anything else stays plain text. */
export function safeUrl(raw) {
  try {
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch (_) {
    return null;
  }
}

function link(href, parent, label) {
  const a = h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" });
  if (label === undefined) a.textContent = href; else inline(label, a);
  parent.append(a);
}

const ESCAPABLE = "\\`*_{}[]()#+-.!~>|<";
const WORD = /[\p{L}\p{N}]/u;

/** Inline Markdown of ``text`` appended to ``parent`` as nodes. */
export function inline(text, parent) {
  let buf = "";
  const flush = () => { if (buf) { parent.append(document.createTextNode(buf)); buf = ""; } };
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === "\\" && i + 1 < n && ESCAPABLE.includes(text[i + 1])) { buf += text[i + 1]; i += 2; continue; }
    if (c === "`") {
      let run = 1;
      while (text[i + run] === "`") run++;
      const fence = "`".repeat(run);
      const end = text.indexOf(fence, i + run);
      if (end > 0) {
        flush();
        parent.append(h("code", null, text.slice(i + run, end).replace(/^ (.*) $/, "$1")));
        i = end + run;
        continue;
      }
      buf += fence; i += run; continue;
    }
    if ((c === "*" || c === "_" || c === "~") && i + 1 < n) {
      const double = text[i + 1] === c;
      if (c === "~" && !double) { buf += c; i++; continue; }
      const mark = double ? c + c : c;
      const start = i + mark.length;
      const before = i > 0 ? text[i - 1] : " ";
      if (text[start] && text[start] !== " " && !(c === "_" && WORD.test(before))) {
        let end = text.indexOf(mark, start + 1);
        while (end > 0 && (text[end - 1] === " " || (!double && text[end + 1] === c) ||
          (c === "_" && end + 1 < n && WORD.test(text[end + 1])))) {
          end = text.indexOf(mark, end + 1);
        }
        if (end > start) {
          flush();
          const el = h(c === "~" ? "del" : double ? "strong" : "em");
          inline(text.slice(start, end), el);
          parent.append(el);
          i = end + mark.length;
          continue;
        }
      }
      buf += mark; i += mark.length; continue;
    }
    if (c === "[") {
      const close = findClose(text, i);
      if (close > 0 && text[close + 1] === "(") {
        const end = text.indexOf(")", close + 2);
        if (end > 0) {
          const label = text.slice(i + 1, close);
          const target = text.slice(close + 2, end).trim().split(/\s+/)[0] || "";
          const href = safeUrl(target.replace(/^<|>$/g, ""));
          flush();
          if (href) link(href, parent, label); else inline(label, parent);
          i = end + 1;
          continue;
        }
      }
    }
    if (c === "<") {
      const m = /^<(https?:\/\/[^\s<>]+)>/.exec(text.slice(i, i + 2100));
      if (m && safeUrl(m[1])) { flush(); link(safeUrl(m[1]), parent); i += m[0].length; continue; }
    }
    if (c === "h" && (i === 0 || !WORD.test(text[i - 1])) && text.startsWith("http", i)) {
      const m = /^https?:\/\/[^\s<>"'`]+/.exec(text.slice(i, i + 2100));
      if (m) {
        const url = m[0].replace(/[.,;:!?)\]]+$/, "");
        const href = safeUrl(url);
        if (href) { flush(); link(href, parent); i += url.length; continue; }
      }
    }
    buf += c;
    i++;
  }
  flush();
}

function findClose(text, open) {
  let depth = 0;
  for (let k = open; k < text.length; k++) {
    if (text[k] === "\\") { k++; continue; }
    if (text[k] === "[") depth++;
    else if (text[k] === "]" && --depth === 0) return k;
  }
  return -1;
}
