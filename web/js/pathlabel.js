// A file path in a narrow row: the folder gives way (cut with "…") before the file's name does.

import { h } from "./dom.js";

/** ``path`` as two parts, the folder (shrinks first) and the name (kept whole). */
export function pathLabel(path, cls = "span.tool-sum.path") {
  const text = String(path || "");
  const cut = text.lastIndexOf("/", text.length - 2);
  const dir = cut >= 0 ? text.slice(0, cut + 1) : "";
  const name = cut >= 0 ? text.slice(cut + 1) : text;
  return h(cls, { title: text }, dir ? h("span.path-dir", null, dir) : null, h("span.path-name", null, name));
}
