// A session's working folder, read from its Mac: its files (#/s/<id>/files/<folder>, a file at
// #/s/<id>/file/<path>) and its git changes (#/s/<id>/changes, a file's diff at
// #/s/<id>/changes/<path>), unified or split. Every piece of text goes in as text nodes; the
// highlighter only wraps tokens in spans.

import { get } from "./api.js";
import { folderName, h, sizeText as size } from "./dom.js";
import { t } from "./i18n.js";

const ID = (id) => encodeURIComponent(id);
const link = (id, kind, path) => "#/s/" + ID(id) + "/" + kind + (path ? "/" + encodeURIComponent(path) : "");


// -- a small highlighter: comments, strings, numbers, keywords, per language

const C_LIKE = "break case catch class const continue default do else enum export extends false finally for function if import in instanceof let new null return static super switch this throw true try typeof var void while yield async await of interface type implements package private protected public struct impl fn pub mod use match mut self trait where go func chan defer map range select nil int char long float double bool void unsigned";
const LANGS = {
  py: { line: "#", triple: true, kw: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield match case self" },
  js: { line: "//", block: true, template: true, kw: C_LIKE },
  c: { line: "//", block: true, kw: C_LIKE },
  sh: { line: "#", kw: "if then else elif fi for while do done case esac in function return export local echo exit set unset" },
  rb: { line: "#", kw: "def end if elsif else unless while until for in do return class module self nil true false yield begin rescue ensure require" },
  css: { block: true, kw: "" },
  sql: { line: "--", block: true, kw: "select from where and or not insert into values update set delete create table index drop alter join left right inner outer on group by order having limit as null is primary key references distinct union" },
  conf: { line: "#", kw: "true false null yes no" },
  json: { kw: "true false null" },
  md: { kw: "" },
};
const EXT = {
  py: "py", pyi: "py", js: "js", mjs: "js", cjs: "js", jsx: "js", ts: "js", tsx: "js",
  c: "c", h: "c", cc: "c", cpp: "c", hpp: "c", java: "c", kt: "c", swift: "c", cs: "c", go: "c", rs: "c", dart: "c", scala: "c",
  sh: "sh", bash: "sh", zsh: "sh", rb: "rb", css: "css", scss: "css", sql: "sql",
  yml: "conf", yaml: "conf", toml: "conf", ini: "conf", cfg: "conf", env: "conf", json: "json", md: "md",
};

export function languageOf(path) {
  const name = folderName(path).toLowerCase();
  if (name === "makefile" || name === "dockerfile") return "sh";
  const dot = name.lastIndexOf(".");
  return EXT[dot >= 0 ? name.slice(dot + 1) : ""] || null;
}

const compiled = new Map();
function tokenizer(lang) {
  if (compiled.has(lang)) return compiled.get(lang);
  const spec = LANGS[lang];
  const parts = [];
  if (spec.triple) parts.push(String.raw`(?<s3>"""[\s\S]*?(?:"""|(?![\s\S]))|'''[\s\S]*?(?:'''|(?![\s\S])))`);
  if (spec.block) parts.push(String.raw`(?<cb>\/\*[\s\S]*?(?:\*\/|(?![\s\S])))`);
  if (spec.line) parts.push("(?<cl>" + spec.line.replace(/[/#-]/g, "\\$&") + ".*)");
  if (lang === "md") parts.push(String.raw`(?<kh>^#{1,6} .*$)`, String.raw`(?<sc>\x60[^\x60\n]*\x60)`);
  else parts.push(String.raw`(?<st>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?` + (spec.template ? String.raw`|\x60(?:\\.|[^\x60\\])*\x60?` : "") + ")");
  if (lang === "conf") parts.push(String.raw`(?<kk>^\s*[\w.-]+(?=\s*[:=]))`);
  parts.push(String.raw`(?<nu>\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b|\b0x[\da-f]+\b)`, String.raw`(?<id>[A-Za-z_$][\w$]*)`);
  const made = { re: new RegExp(parts.join("|"), "gmi"), kw: new Set(spec.kw.split(" ").filter(Boolean)) };
  compiled.set(lang, made);
  return made;
}

const CLASS = { s3: "tk-str", st: "tk-str", sc: "tk-str", cb: "tk-com", cl: "tk-com", nu: "tk-num", kh: "tk-kw", kk: "tk-kw" };

/** ``text`` as nodes: plain text nodes, tokens in <span class="tk-…">; never markup. */
export function highlight(text, lang) {
  const out = document.createDocumentFragment();
  if (!lang || !LANGS[lang] || text.length > 400000) { out.append(text); return out; }
  const { re, kw } = tokenizer(lang);
  re.lastIndex = 0;
  let last = 0;
  let plain = "";
  for (const m of text.matchAll(re)) {
    const [kind] = Object.entries(m.groups).find(([, v]) => v !== undefined) || [];
    let cls = CLASS[kind];
    if (kind === "id") cls = kw.has(lang === "sql" ? m[0].toLowerCase() : m[0]) ? "tk-kw" : null;
    plain += text.slice(last, m.index);
    last = m.index + m[0].length;
    if (!cls) { plain += m[0]; continue; }
    if (plain) { out.append(plain); plain = ""; }
    out.append(h("span", { class: cls }, m[0]));
  }
  plain += text.slice(last);
  if (plain) out.append(plain);
  return out;
}

function codeBlock(text, lang) {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  const gutter = h("pre.gutter", { "aria-hidden": "true" }, lines.map((_, i) => i + 1).join("\n"));
  return h("div.code-view", null, gutter, h("pre.code", { tabindex: "0" }, h("code", null, highlight(text, lang))));
}

// -- diffs

/** Unified diff text → rows {kind: meta|hunk|add|del|ctx, text, old, new} with line numbers. */
export function parseDiff(text) {
  const rows = [];
  let oldNo = 0;
  let newNo = 0;
  for (const line of text.split("\n")) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) { oldNo = +hunk[1]; newNo = +hunk[2]; rows.push({ kind: "hunk", text: line }); continue; }
    if (!oldNo && !newNo) { if (line) rows.push({ kind: "meta", text: line }); continue; }
    if (line.startsWith("+")) rows.push({ kind: "add", text: line.slice(1), new: newNo++ });
    else if (line.startsWith("-")) rows.push({ kind: "del", text: line.slice(1), old: oldNo++ });
    else if (line.startsWith(" ")) rows.push({ kind: "ctx", text: line.slice(1), old: oldNo++, new: newNo++ });
    else if (line.startsWith("\\")) rows.push({ kind: "meta", text: line });
    else if (line.startsWith("diff ")) { oldNo = newNo = 0; rows.push({ kind: "meta", text: line }); }
  }
  return rows;
}

/** Rows side by side: a run of deletions faces the run of additions after it. */
export function pairRows(rows) {
  const pairs = [];
  for (let i = 0; i < rows.length;) {
    const row = rows[i];
    if (row.kind === "del" || row.kind === "add") {
      const dels = [];
      const adds = [];
      while (i < rows.length && rows[i].kind === "del") dels.push(rows[i++]);
      while (i < rows.length && rows[i].kind === "add") adds.push(rows[i++]);
      for (let k = 0; k < Math.max(dels.length, adds.length); k++) pairs.push([dels[k] || null, adds[k] || null]);
    } else {
      pairs.push(row.kind === "ctx" ? [row, row] : [row, null]);
      i++;
    }
  }
  return pairs;
}

const sign = { add: "+", del: "-", ctx: " " };

function unified(rows, lang) {
  return h("div.diff.unified", { role: "table" }, rows.map((r) => r.kind === "hunk" || r.kind === "meta"
    ? h("div.drow", { class: "d-" + r.kind }, h("span.dtext", null, r.text))
    : h("div.drow", { class: "d-" + r.kind },
      h("span.dno", null, r.old ?? ""), h("span.dno", null, r.new ?? ""),
      h("span.dtext", null, sign[r.kind], highlight(r.text, lang)))));
}

function split(rows, lang) {
  const cell = (r, side) => !r ? h("div.dcell.d-none") : h("div.dcell", { class: "d-" + r.kind },
    h("span.dno", null, side === "old" ? r.old ?? "" : r.new ?? ""), h("span.dtext", null, highlight(r.text, lang)));
  return h("div.diff.split", null, pairRows(rows).map(([a, b]) => a && (a.kind === "hunk" || a.kind === "meta")
    ? h("div.drow.full", { class: "d-" + a.kind }, h("span.dtext", null, a.text))
    : h("div.drow", null, cell(a, "old"), cell(b, "new"))));
}

// -- the view

const MODE_KEY = "cb-diff-mode";

export class FilesView {
  constructor(app, id, kind, path) {
    this.app = app;
    this.id = id;
    this.kind = kind; // "files" | "file" | "changes"
    this.path = path || "";
    this.abort = new AbortController();
    this.body = h("div.files-body", { "aria-live": "polite" }, h("p.muted.pad", null, t("loading")));
    const tab = (name, label, href) => h("a.tab", { href, "aria-current": (kind === "changes") === (name === "changes") ? "page" : null }, label);
    this.el = h("div.page.fv", null,
      h("nav.tabs", { "aria-label": t("fv_title") },
        tab("files", t("fv_files"), link(id, "files")), tab("changes", t("fv_changes"), link(id, "changes"))),
      this.body);
    this.load();
  }

  title() {
    const s = this.app.sessions.get(this.id);
    const name = s ? s.title || folderName(s.cwd) : "";
    return (this.kind === "changes" ? t("fv_changes") : t("fv_files")) + (name ? " · " + name : "");
  }

  async ask(path, params) {
    const query = new URLSearchParams(params || {}).toString();
    return get("/api/sessions/" + ID(this.id) + path + (query ? "?" + query : ""), { signal: this.abort.signal });
  }

  async load() {
    try {
      if (this.kind === "files") this.show(this.folder(await this.ask("/files", { path: this.path })));
      else if (this.kind === "file") this.show(this.file(await this.ask("/files/read", { path: this.path })));
      else if (this.path) this.show(this.diff(await this.ask("/git/diff", { path: this.path })));
      else this.show(this.status(await this.ask("/git/status")));
    } catch (error) {
      if (error.name === "AbortError") return;
      const text = error.code === "not_a_repo" ? t("fv_not_repo") : error.code === "device_offline" ? t("fv_offline") : error.message;
      this.show(h("p.note.pad.fv-error", { role: "alert", dataset: { code: error.code || "" } }, text));
    }
  }

  show(...nodes) { if (!this.destroyed) this.body.replaceChildren(...nodes.flat()); }

  crumbs(path, last) {
    const parts = path ? path.split("/") : [];
    const items = [h("a.crumb", { href: link(this.id, "files") }, "⌂ " + t("fv_top"))];
    parts.forEach((name, i) => {
      const at = parts.slice(0, i + 1).join("/");
      items.push(h("span.sep", { "aria-hidden": "true" }, "/"));
      items.push(i === parts.length - 1 && last ? h("span.crumb.here", null, name) : h("a.crumb", { href: link(this.id, "files", at) }, name));
    });
    return h("nav.crumbs", { "aria-label": t("fv_path") }, items);
  }

  folder(data) {
    // A Mac's answer is not trusted to have every field: a missing list is an empty one.
    const entries = Array.isArray(data.entries) ? data.entries : [];
    const rows = entries.map((e) => {
      const icon = e.kind === "dir" ? "📁" : e.kind === "file" ? "📄" : "⛔";
      const label = h("span.fname", null, e.name + (e.kind === "dir" ? "/" : ""));
      const meta = h("span.fmeta", null, e.kind === "file" ? size(e.size) : e.kind === "outside" ? t("fv_outside") : e.kind === "dir" ? "" : t("fv_other"));
      const openable = !e.bad_name && (e.kind === "dir" || e.kind === "file");
      const inner = [h("span.ficon", { "aria-hidden": "true" }, icon), label, meta];
      return h("li", null, openable
        ? h("a.frow", { href: link(this.id, e.kind === "dir" ? "files" : "file", e.path), dataset: { kind: e.kind } }, inner)
        : h("span.frow.off", { dataset: { kind: e.kind }, title: e.bad_name ? t("fv_bad_name") : null }, inner));
    });
    return [this.crumbs(data.path, true),
      rows.length ? h("ul.flist", null, rows) : h("p.muted.pad", null, t("fv_empty")),
      data.truncated ? h("p.note.pad", null, t("fv_more", { n: entries.length, total: data.total })) : null].filter(Boolean);
  }

  file(data) {
    const head = h("p.note.pad", null, [size(data.size), data.truncated ? t("fv_cut") : ""].filter(Boolean).join(" · "));
    const dir = data.path.includes("/") ? data.path.slice(0, data.path.lastIndexOf("/")) : "";
    const crumbs = this.crumbs(dir, false);
    crumbs.append(h("span.sep", { "aria-hidden": "true" }, "/"), h("span.crumb.here", null, folderName(data.path)));
    if (data.binary) return [crumbs, head, h("p.pad.fv-binary", null, t("fv_binary"))];
    return [crumbs, head, codeBlock(data.text, languageOf(data.path))];
  }

  status(data) {
    const label = (e) => [e.staged ? h("span.badge.staged", null, t("fv_staged") + ": " + t("fv_" + e.staged)) : null,
      e.unstaged ? h("span.badge", { class: e.untracked ? "untracked" : "unstaged" }, e.untracked ? t("fv_untracked") : t("fv_" + e.unstaged)) : null];
    const entries = Array.isArray(data.entries) ? data.entries : [];
    const rows = entries.map((e) => h("li", null, e.bad_name
      ? h("span.frow.off", null, h("span.fname", null, e.path), h("span.fmeta", null, label(e)))
      : h("a.frow", { href: link(this.id, "changes", e.path) },
        h("span.fname", null, e.path, e.from ? h("span.muted", null, " ← " + e.from) : null), h("span.fmeta", null, label(e)))));
    return [h("p.note.pad", null, (data.branch ? t("fv_branch", { name: data.branch }) + " · " : "") + t("fv_n_changed", { n: data.total })),
      rows.length ? h("ul.flist.changes", null, rows) : h("p.muted.pad", null, t("fv_clean")),
      data.truncated ? h("p.note.pad", null, t("fv_more", { n: entries.length, total: data.total })) : null].filter(Boolean);
  }

  diff(data) {
    let mode = localStorage.getItem(MODE_KEY) === "split" ? "split" : "unified";
    const lang = languageOf(data.path);
    const holder = h("div.diffs");
    const draw = () => {
      const parts = [];
      for (const [key, text] of [["staged", data.staged], ["unstaged", data.unstaged]]) {
        if (!text) continue;
        const rows = parseDiff(text);
        parts.push(h("section.dpart", null, h("h3.dhead", null, data.untracked ? t("fv_untracked") : t("fv_" + key + "_diff")),
          mode === "split" ? split(rows, lang) : unified(rows, lang)));
      }
      holder.replaceChildren(...(parts.length ? parts : [h("p.muted.pad", null, t("fv_no_diff"))]));
    };
    const toggle = (value, label) => {
      const b = h("button.seg", { type: "button", "aria-pressed": String(mode === value), dataset: { mode: value } }, label);
      b.addEventListener("click", () => {
        mode = value;
        try { localStorage.setItem(MODE_KEY, value); } catch (_) { /* storage blocked */ }
        for (const other of b.parentNode.children) other.setAttribute("aria-pressed", String(other === b));
        draw();
      });
      return b;
    };
    draw();
    return [h("nav.crumbs", null, h("a.crumb", { href: link(this.id, "changes") }, "‹ " + t("fv_changes")), h("span.sep", null, "/"), h("span.crumb.here", null, data.path)),
      h("div.segs", { role: "group", "aria-label": t("fv_view") }, toggle("unified", t("fv_unified")), toggle("split", t("fv_split"))),
      data.truncated ? h("p.note.pad", null, t("fv_cut")) : null,
      data.binary ? h("p.note.pad.fv-binary", null, t("fv_binary")) : null,
      holder].filter(Boolean);
  }

  destroy() {
    this.destroyed = true;
    this.abort.abort();
  }
}

/** The session menu's ways in: its files and its changes. */
export function filesActions(id) {
  return [
    { label: t("fv_changes"), run: () => { location.hash = link(id, "changes"); } },
    { label: t("fv_files"), run: () => { location.hash = link(id, "files"); } },
  ];
}
