// Building DOM nodes without HTML: every piece of text goes in as a text node, so nothing from a
// transcript can ever become markup.

/** Bytes for a person: "812 B", "9.5 KB", "48.3 MB". */
export function sizeText(n) {
  if (n === undefined || n === null) return "";
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KB";
  return (n / 1024 / 1024).toFixed(1) + " MB";
}

/** h("button.primary", {type: "button", onclick}, "Send") → <button class="primary">Send</button> */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name || "div");
  if (classes.length) el.className = classes.join(" ");
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on") && typeof value === "function") {
        el.addEventListener(key.slice(2), value);
      } else if (key === "class") {
        el.className += (el.className ? " " : "") + value;
      } else if (key === "dataset") {
        Object.assign(el.dataset, value);
      } else if (key === "text") {
        el.textContent = value;
      } else if (value === true) {
        el.setAttribute(key, "");
      } else if (key in el && typeof value !== "string") {
        el[key] = value;
      } else {
        el.setAttribute(key, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/** A short, honest "how long ago" for an ISO time, in the page's language. */
export function ago(iso, t) {
  if (!iso) return t("never");
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 45) return t("just_now");
  if (seconds < 3600) return t("min_ago", { n: Math.round(seconds / 60) });
  if (seconds < 86400) return t("h_ago", { n: Math.round(seconds / 3600) });
  return t("d_ago", { n: Math.round(seconds / 86400) });
}

export function folderName(path) {
  if (!path) return "";
  const parts = String(path).replace(/\/+$/, "").split("/");
  return parts[parts.length - 1] || path;
}

export function shortPath(path) {
  return String(path || "").replace(/^\/(Users|home)\/[^/]+/, "~");
}

/** USD as the lists show it; "—" when the price is unknown. */
export function usd(value) {
  if (value === null || value === undefined) return "—";
  return value === 0 ? "$0" : "$" + value.toFixed(value >= 1 ? 2 : 4);
}

export function count(n, compact = false) {
  return new Intl.NumberFormat(document.documentElement.lang, compact ? { notation: "compact", maximumFractionDigits: 1 } : {}).format(n || 0);
}

/** A session's compact cost {usd, tokens, source}: "≈$0.0452 · 52.7K tok" ("≈" = estimated). */
export function costText(cost, t) {
  if (!cost) return "—";
  const money = (cost.source === "estimate" && cost.usd ? "≈" : "") + usd(cost.usd);
  return cost.tokens ? money + " · " + count(cost.tokens, true) + " " + t("tok") : money;
}

/** Words with `commands` in backticks, as a person reads them: each command in a <code>, the
 * backticks gone; everything stays text. "Run `claude` once" → ["Run ", <code>claude</code>, " once"] */
export function withCode(text) {
  const parts = String(text).split("`");
  if (parts.length < 3 || parts.length % 2 === 0) return [String(text)]; // none, or unpaired: as it is
  return parts.map((part, i) => (i % 2 && part ? h("code", null, part) : part)).filter((part) => part !== "");
}
