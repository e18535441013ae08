// Memory with a tap (#/memory, from Settings): facts proposed from a project's sessions — a
// correction given twice, a constraint pinned in two sessions, a decision marked "remember" —
// each with where it was found. The person edits the text, picks the file (CLAUDE.local.md, the
// personal default, or CLAUDE.md, shared), sees the diff, and only then accepts; or dismisses.
// GET /api/memory?project=, GET /api/memory/{id}/diff, POST /api/memory/{id}.

import { get, post } from "./api.js";
import { folderName, h, shortPath } from "./dom.js";
import { parseDiff } from "./files.js";
import { getLang } from "./i18n.js";
import { modal, showError, toast } from "./ui.js";

const LABELS = {
  en: {
    title: "Memory", menu: "Project memory",
    note: "Facts Claude should keep for a project, found in its sessions. Nothing is written until you accept one; it applies from each session's next start.",
    project: "Project", all: "All projects", none: "No memory candidates yet. A correction you give twice, a constraint you pin in two sessions or a decision you mark “Remember” shows up here.",
    proposed: "Proposed", decided: "Decided", fact: "Fact", file: "Write to",
    f_local: "CLAUDE.local.md — only you", f_shared: "CLAUDE.md — shared with the project",
    review: "Review and accept", dismiss: "Dismiss", found: "Found in", seq: "message {n}",
    r_pinned_twice: "Pinned in 2 sessions", r_remembered: "Marked “Remember”", r_corrected_twice: "Corrected twice",
    s_proposed: "Proposed", s_accepted: "Accepted", s_edited: "Accepted, edited", s_dismissed: "Dismissed",
    diff_title: "Change to {file}", diff_none: "The file already says this: nothing to change.",
    applies: "Applies from each session's next start: Claude Code reads this file when a session starts.",
    write: "Write to {file}", cancel: "Cancel", written: "Written to {file}", dismissed_ok: "Dismissed",
    remove: "Remove from {file}", more: "{n} more places", in_file: "In {path} — applies from each session's next start",
  },
  ko: {
    title: "메모리", menu: "프로젝트 메모리",
    note: "세션에서 찾은, 프로젝트에서 Claude가 기억할 사실이에요. 수락하기 전에는 아무것도 쓰지 않아요. 각 세션이 다음에 시작할 때부터 적용돼요.",
    project: "프로젝트", all: "모든 프로젝트", none: "아직 메모리 후보가 없어요. 두 번 한 수정, 두 세션에서 고정한 제약, “기억”으로 표시한 결정이 여기에 나타나요.",
    proposed: "제안됨", decided: "결정됨", fact: "사실", file: "쓸 파일",
    f_local: "CLAUDE.local.md — 나만", f_shared: "CLAUDE.md — 프로젝트와 공유",
    review: "검토하고 수락", dismiss: "무시", found: "찾은 곳", seq: "메시지 {n}",
    r_pinned_twice: "두 세션에서 고정", r_remembered: "“기억”으로 표시", r_corrected_twice: "두 번 수정",
    s_proposed: "제안됨", s_accepted: "수락됨", s_edited: "수정해서 수락", s_dismissed: "무시됨",
    diff_title: "{file} 변경", diff_none: "파일에 이미 있어요. 바꿀 것이 없어요.",
    applies: "각 세션이 다음에 시작할 때부터 적용돼요. Claude Code는 세션을 시작할 때 이 파일을 읽어요.",
    write: "{file}에 쓰기", cancel: "취소", written: "{file}에 썼어요", dismissed_ok: "무시했어요",
    remove: "{file}에서 빼기", more: "{n}곳 더", in_file: "{path}에 있어요 — 각 세션이 다음에 시작할 때부터 적용돼요",
  },
};

export function mt(key, vars) {
  let text = (LABELS[getLang()] || LABELS.en)[key] ?? LABELS.en[key] ?? key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

const FILES = ["CLAUDE.local.md", "CLAUDE.md"];

/** The session menu's way to its project's memory candidates. */
export function memoryActions(cwd) {
  if (!cwd) return [];
  return [{ label: mt("menu"), run: () => { location.hash = "#/memory/" + encodeURIComponent(cwd); } }];
}

/** A unified diff as rows that wrap (a phone is narrow): +, - and context lines, nothing else. */
export function diffView(text) {
  const rows = parseDiff(text).filter((r) => r.kind !== "meta");
  const sign = { add: "+", del: "−", ctx: " ", hunk: "" };
  return h("div.diff.memdiff", { role: "table" }, rows.map((r) => h("div.drow", { class: "d-" + r.kind },
    h("span.dsign", null, sign[r.kind]), h("span.dtext", null, r.text))));
}

export class MemoryView {
  constructor(app, project) {
    this.app = app;
    this.project = project || "";
    this.el = h("div.page.memory");
    this.load();
  }

  title() { return mt("title"); }

  destroy() {}

  async load() {
    const query = this.project ? "?" + new URLSearchParams({ project: this.project }) : "";
    try {
      this.data = await get("/api/memory" + query);
      this.draw();
    } catch (error) {
      this.el.replaceChildren(h("p.error", null, error.message));
    }
  }

  draw() {
    const { candidates, projects } = this.data;
    const pick = h("select", { id: "mem-project" },
      h("option", { value: "" }, mt("all")),
      projects.map((p) => h("option", { value: p }, folderName(p) + " — " + shortPath(p))));
    pick.value = this.project;
    pick.addEventListener("change", () => {
      location.hash = "#/memory" + (pick.value ? "/" + encodeURIComponent(pick.value) : "");
    });
    const open = candidates.filter((c) => c.state === "proposed");
    const done = candidates.filter((c) => c.state !== "proposed");
    this.el.replaceChildren(...[
      h("p.note", null, mt("note")),
      h("label.stack", null, h("span", null, mt("project")), pick),
      h("section", null, h("h2", null, mt("proposed")),
        open.length ? h("ul.mem-list", null, open.map((c) => this.item(c))) : h("p.muted", null, mt("none"))),
      done.length ? h("section", null, h("h2", null, mt("decided")), h("ul.mem-list", null, done.map((c) => this.item(c)))) : null,
    ].filter(Boolean));
  }

  item(c) {
    const open = c.state === "proposed";
    const text = h("textarea.mem-text", { rows: 2, "aria-label": mt("fact"), maxlength: 1000, readonly: !open }, c.text);
    text.value = c.text;
    const file = h("select.mem-file", { "aria-label": mt("file"), disabled: !open },
      FILES.map((f) => h("option", { value: f }, f === "CLAUDE.md" ? mt("f_shared") : mt("f_local"))));
    file.value = c.file || this.data.default_file || FILES[0];
    const rules = h("div.badges", null, c.rules.map((r) => h("span.badge.mem-rule", null, mt("r_" + r))),
      open ? null : h("span.badge.mem-state", { dataset: { state: c.state } }, mt("s_" + c.state)));
    const evidence = h("ul.mem-evidence", { "aria-label": mt("found") }, c.evidence.map((e) =>
      h("li", null, h("a", { href: "#/s/" + encodeURIComponent(e.session_id) }, e.title || e.session_id.slice(0, 8)),
        e.seq ? " · " + mt("seq", { n: e.seq }) : "")),
    c.evidence_count > c.evidence.length ? h("li.muted", null, mt("more", { n: c.evidence_count - c.evidence.length })) : null);
    const actions = h("div.row.end");
    if (open) {
      const dismiss = h("button", { type: "button", class: "mem-dismiss" }, mt("dismiss"));
      const review = h("button.primary", { type: "button", class: "mem-review" }, mt("review"));
      dismiss.addEventListener("click", () => this.decide(c, { action: "dismiss" }, mt("dismissed_ok")));
      review.addEventListener("click", () => this.review(c, text.value, file.value));
      actions.append(dismiss, review);
    } else if (c.state === "accepted" || c.state === "edited") {
      const remove = h("button.small", { type: "button", class: "mem-remove" }, mt("remove", { file: c.file }));
      remove.addEventListener("click", () => this.decide(c, { action: "dismiss" }, mt("dismissed_ok")));
      actions.append(remove);
    }
    return h("li.mem-item", { dataset: { id: c.id, state: c.state } },
      rules,
      this.project ? null : h("span.row-meta.mem-project", null, folderName(c.project) + " · " + shortPath(c.project)),
      text,
      open ? h("label.stack", null, h("span", null, mt("file")), file) : null,
      h("details.mem-found", null, h("summary", null, mt("found") + " (" + c.evidence_count + ")"), evidence),
      !open && c.path && c.state !== "dismissed" ? h("p.muted.mem-applies", null, mt("in_file", { path: shortPath(c.path) })) : null,
      actions);
  }

  /** The diff first; the write only from the dialog's button. */
  async review(c, text, file) {
    let diff;
    try {
      diff = await get(`/api/memory/${c.id}/diff?` + new URLSearchParams({ file, text }));
    } catch (error) { showError(error); return; }
    const write = h("button.primary", { type: "button", class: "mem-write" }, mt("write", { file }));
    const dialog = modal(h("div.wide.mem-review-sheet", null,
      h("h2.sheet-title", null, mt("diff_title", { file })),
      diff.path ? h("p.muted", null, shortPath(diff.path)) : null,
      diff.diff ? diffView(diff.diff) : h("p.muted", null, mt("diff_none")),
      h("p.note.mem-applies", null, mt("applies")),
      h("div.row.end", null,
        h("form", { method: "dialog" }, h("button", { value: "cancel" }, mt("cancel"))), write)));
    write.addEventListener("click", async () => {
      write.disabled = true;
      const body = { action: "accept", file };
      if (text !== c.text) body.text = text;
      const ok = await this.decide(c, body, mt("written", { file }));
      if (ok) dialog.close(); else write.disabled = false;
    });
  }

  async decide(c, body, done) {
    try {
      await post(`/api/memory/${c.id}`, body);
      toast(done);
      await this.load();
      return true;
    } catch (error) { showError(error); return false; }
  }
}
