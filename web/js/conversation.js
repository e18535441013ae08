// A session's conversation drawn from its numbered events. Events are kept by seq: one seen twice
// is drawn once, an older page goes on top, a gap filled later goes in its place. A tool's result
// is drawn inside its tool use. Text goes in as text nodes or through the safe Markdown renderer.
// With onAgent (a session), each subagent is ONE line (type, task, outcome, cost: GET …/subagents)
// in its Agent call, or where its events start, instead of its events; the line opens them.

import { h, usd } from "./dom.js";
import { t } from "./i18n.js";
import { markdown } from "./md.js";
import { snapshotLine } from "./decisions.js";
import { sentence } from "./ui.js";
import { pathLabel } from "./pathlabel.js";

const RESULT_LINES = 12;
const RESULT_CHARS = 1200;
const DIFF_LINES = 80;

export class Conversation {
  constructor(root, { onAgent, onFull } = {}) {
    this.root = root;
    this.onAgent = onAgent;
    this.onFull = onFull; // seq → {text}: the whole text of an event the relay cut
    this.agents = new Map(); // agent_id → {seqs, line}
    this.calls = new Map(); // tool_use_id of an Agent/Task call → its line's slot
    this.info = new Map(); // agent_id and tool_use_id → the subagent's summary
    this.newAgents = false; // the summaries need reading
    this.events = new Map(); // seq → event
    this.nodes = new Map(); // seq → top-level element
    this.tools = new Map(); // tool_use_id → result slot
    this.min = Infinity;
    this.max = 0;
    this.epoch = null;
  }

  get size() { return this.events.size; }

  has(seq) { return this.events.has(seq); }

  clear() {
    this.events.clear(); this.nodes.clear(); this.tools.clear(); this.agents.clear(); this.calls.clear();
    this.min = Infinity; this.max = 0;
    this.root.replaceChildren();
  }

  /** Add events (any order, duplicates ignored); returns the ones that were new. */
  add(list) {
    const fresh = [];
    for (const ev of list) {
      if (!ev || typeof ev.seq !== "number" || this.events.has(ev.seq)) continue;
      if (this.epoch && ev.epoch && ev.epoch !== this.epoch) continue;
      this.events.set(ev.seq, ev);
      fresh.push(ev);
    }
    if (!fresh.length) return fresh;
    fresh.sort((a, b) => a.seq - b.seq);
    const tail = [];
    const head = [];
    for (const ev of fresh) {
      if (ev.seq > this.max) tail.push(ev);
      else if (ev.seq < this.min) head.push(ev);
      else this.insert(ev);
    }
    if (head.length) {
      const frag = document.createDocumentFragment();
      for (const ev of head) this.draw(ev, frag);
      this.root.prepend(frag);
    }
    if (tail.length) {
      const frag = document.createDocumentFragment();
      for (const ev of tail) this.draw(ev, frag);
      this.root.append(frag);
    }
    for (const ev of fresh) {
      if (ev.seq > this.max) this.max = ev.seq;
      if (ev.seq < this.min) this.min = ev.seq;
    }
    if (this.agents.size) this.placeAgents();
    for (const a of this.info.values()) if (a.status === "running") this.newAgents = true; // it may have ended
    return fresh;
  }

  /** The subagents' summaries arrived (or changed): draw their lines. */
  setAgents(list) {
    this.info.clear();
    for (const a of list) {
      if (a.agent_id) this.info.set(a.agent_id, a);
      if (a.tool_use_id) this.info.set(a.tool_use_id, a);
    }
    this.placeAgents();
  }

  placeAgents() {
    for (const [id, slot] of this.calls) {
      const a = this.info.get(id);
      if (a) slot.replaceChildren(this.agentLine(a.agent_id, a));
    }
    for (const [id, agent] of this.agents) {
      const a = this.info.get(id);
      const seqs = [...agent.seqs].filter((s) => this.events.has(s));
      const first = seqs.length ? this.nodes.get(Math.min(...seqs)) : null;
      if (!first || (a && this.calls.has(a.tool_use_id))) { if (agent.line) agent.line.remove(); agent.line = null; continue; }
      agent.line = agent.line || h("div.ev.sub-ev");
      agent.line.replaceChildren(this.agentLine(id, a));
      first.before(agent.line);
    }
  }

  agentLine(id, a) {
    a = a || {};
    const cost = a.cost ? usd(a.cost.usd) : "";
    const task = a.description || firstLine(a.prompt || "");
    const button = h("button.subline", { type: "button", disabled: !id, title: t("sa_open"), dataset: { agent: id || "" } },
      h("span.tag", null, t("subagent")),
      h("span.sub-what", null, [a.agent_type, task].filter(Boolean).join(" · ") || id),
      a.status ? h("span.sub-status", { class: "ss-" + a.status }, t("sa_" + a.status)) : null,
      a.outcome ? h("span.sub-out", null, firstLine(a.outcome)) : null,
      cost ? h("span.sub-cost", null, cost) : null);
    button.addEventListener("click", () => id && this.onAgent(id));
    return button;
  }

  insert(ev) {
    let next = null;
    for (let s = ev.seq + 1; s <= this.max; s++) {
      const node = this.nodes.get(s);
      if (node && node.parentNode === this.root) { next = node; break; }
    }
    const frag = document.createDocumentFragment();
    this.draw(ev, frag);
    this.root.insertBefore(frag, next);
  }

  draw(ev, parent) {
    if (this.onAgent && ev.agent_id) { // drawn as its subagent's line (placeAgents)
      const el = h("i", { hidden: true, dataset: { seq: ev.seq } });
      parent.append(el);
      this.nodes.set(ev.seq, el);
      const agent = this.agents.get(ev.agent_id) || { seqs: new Set(), line: null };
      if (!this.agents.has(ev.agent_id)) { this.agents.set(ev.agent_id, agent); this.newAgents = true; }
      agent.seqs.add(ev.seq);
      if (ev.kind === "assistant") this.newAgents = true; // its outcome may have changed
      return;
    }
    if (ev.kind === "tool_result" && ev.tool_use_id && this.tools.has(ev.tool_use_id)) {
      const slot = this.tools.get(ev.tool_use_id);
      const el = toolResult(ev, slot.tool, this.onFull);
      if (slot.outcome) slot.outcome.replaceChildren(outcome(ev));
      el.dataset.seq = ev.seq;
      slot.append(el);
      this.nodes.set(ev.seq, el);
      return;
    }
    const el = render(ev, this);
    el.dataset.seq = ev.seq;
    parent.append(el);
    this.nodes.set(ev.seq, el);
  }

  /** Drop events beyond ``keep`` from the top (long live sessions stay light). */
  trim(keep) {
    if (this.events.size <= keep) return;
    const seqs = [...this.events.keys()].sort((a, b) => a - b);
    for (const seq of seqs.slice(0, seqs.length - keep)) {
      const node = this.nodes.get(seq);
      if (node) node.remove();
      this.nodes.delete(seq);
      this.events.delete(seq);
    }
    this.min = Math.min(...this.events.keys());
    if (this.agents.size) this.placeAgents();
  }
}

function firstLine(text) {
  const line = String(text).trim().split("\n")[0];
  return line.length > 140 ? line.slice(0, 139) + "…" : line;
}

function render(ev, convo) {
  switch (ev.kind) {
    case "user":
      return h("div.ev.user", null, h("div.bubble", null, h("p.plain", null, ev.text)));
    case "assistant":
      return h("div.ev.assistant", null, markdown(ev.text));
    case "thinking":
      return h("details.ev.thinking", null, h("summary", null, t("thinking")), h("p.plain", null, ev.text));
    case "tool_use":
      return toolUse(ev, convo);
    case "tool_result":
      return h("div.ev.tool.orphan", null, toolResult(ev, undefined, convo.onFull));
    case "snapshot":
      return snapshotLine(ev);
    case "marker":
    default:
      return marker(ev);
  }
}

// The relay's and the agent's fixed marker lines (relay/convert.py, agent/daemon.py), drawn in the
// page's language; any other marker text is shown as it came.
const MARKER_TEXT = {
  "📦 context compacted": "ml_compacted",
  "🧹 /clear · conversation cleared": "ml_cleared",
  "Interrupted by user": "ml_interrupted",
  "Interrupted by user during a tool use": "ml_interrupted_tool",
  "Rejected by user": "ml_rejected",
  "🔁 The Mac restarted, so the session was reopened in the same conversation": "ml_revived",
};

function marker(ev) {
  const raw = String(ev.text || ev.marker || "");
  const key = MARKER_TEXT[raw.split("\n")[0]];
  const text = key ? t(key) + raw.slice(raw.split("\n")[0].length) : raw;
  const [first, ...rest] = text.split("\n");
  const el = h("div.ev.marker", { class: ev.marker ? "m-" + ev.marker : "" }, h("span", null, first));
  if (rest.length) el.append(h("details", null, h("summary", null, "…"), h("pre", null, rest.join("\n"))));
  return el;
}

function toolUse(ev, convo) {
  const input = ev.input || {};
  const tool = ev.tool || "tool";
  const head = h("summary.tool-head", null, h("span.tool-name", null, tool));
  const body = h("div.tool-body");
  const file = input.file_path || input.notebook_path || input.path;
  if (tool === "Bash") {
    if (input.description) head.append(h("span.tool-sum", null, input.description));
    body.append(h("pre.cmd", null, h("code", null, input.command || ev.summary || "")));
  } else if (tool === "Write" && typeof input.content === "string") {
    head.append(pathLabel(file || ev.summary || ""), h("span.tag", null, t("new_file")));
    body.append(diffView(lineDiff("", input.content)));
  } else if ((tool === "Edit" || tool === "MultiEdit") && (input.old_string !== undefined || input.edits)) {
    head.append(pathLabel(file || ev.summary || ""));
    const edits = Array.isArray(input.edits) ? input.edits : [input];
    for (const edit of edits) {
      body.append(diffView(lineDiff(String(edit.old_string || ""), String(edit.new_string || ""))));
    }
  } else if (tool === "NotebookEdit" && typeof input.new_source === "string") {
    head.append(h("span.tool-sum.path", null, file || ""));
    body.append(diffView(lineDiff("", input.new_source)));
  } else if (tool === "ExitPlanMode" && input.plan) {
    body.append(markdown(input.plan));
  } else if (tool === "AskUserQuestion" && Array.isArray(input.questions)) {
    for (const q of input.questions) {
      body.append(h("p.q", null, q.question || ""),
        h("ul.opts", null, (q.options || []).map((o) => h("li", null, o.label || "",
          o.description ? h("span.muted", null, " — " + o.description) : null))));
    }
  } else if (tool === "TodoWrite" && Array.isArray(input.todos)) {
    body.append(h("ul.todos", null, input.todos.map((todo) =>
      h("li", { class: "todo-" + (todo.status || "pending") }, todo.content || todo.activeForm || ""))));
  } else {
    if (ev.summary) head.append(h("span.tool-sum", null, ev.summary));
    // The call opens to its input as it is (the line already names a lone path)
    const keys = Object.keys(input).filter((k) => !(["file_path", "path", "notebook_path"].includes(k) && input[k] === ev.summary));
    if (keys.length) body.append(h("pre.input", { "aria-label": t("input") }, JSON.stringify(input, null, 2)));
  }
  const slot = h("div.tool-results");
  slot.tool = tool;
  slot.outcome = h("span.tool-out");
  head.append(slot.outcome);
  if (ev.tool_use_id) convo.tools.set(ev.tool_use_id, slot);
  let line = null;
  if (convo.onAgent && (tool === "Agent" || tool === "Task") && ev.tool_use_id) {
    line = h("div.sub-slot", null, convo.agentLine(null, { agent_type: input.subagent_type, description: input.description }));
    convo.calls.set(ev.tool_use_id, line);
    convo.newAgents = true;
    body.replaceChildren();
  }
  if (line) return h("div.ev.tool", null, h("div.tool-head", null, ...head.childNodes), line, slot);
  // One line (tool, target, outcome) that opens to the input and the result.
  return h("details.ev.tool", null, head, body.childNodes.length ? body : null, slot);
}

/** What a tool's result came to, in a word or two, for its one line. */
function outcome(ev) {
  if (ev.is_error) return h("span.out-err", null, t("tool_failed"));
  const text = String(ev.text || "");
  const lines = text ? text.replace(/\n$/, "").split("\n").length : 0;
  return lines ? t(lines === 1 ? "tool_line" : "tool_lines", { n: lines }) : t("tool_done");
}

/** ``cat -n`` numbering (Read's results: "     1\tline"), split into a gutter and the line. */
function numbered(text) {
  const lines = text.replace(/\n$/, "").split("\n");
  const rows = [];
  for (const line of lines) {
    const m = /^\s*(\d+)[\t→](.*)$/.exec(line);
    if (!m) return null;
    rows.push([m[1], m[2]]);
  }
  return rows.length ? rows : null;
}

function numberedView(rows) {
  return h("div.numbered", null, rows.map(([n, line]) => h("div.nl", null, h("span.ln", { "aria-hidden": "true" }, n), h("span.lt", null, line))));
}

function toolResult(ev, tool, full) {
  let text = String(ev.text || "");
  const el = h("div.result", { class: ev.is_error ? "err" : "" });
  let lines = text.split("\n");
  // A text the relay cut: "Show all" reads it whole from the Mac (GET …/events/{seq}/full).
  const cut = Boolean(ev.truncated && ev.full_length > text.length && full);
  const long = cut || lines.length > RESULT_LINES || text.length > RESULT_CHARS;
  const rowsOf = (value) => (tool === "Read" && !ev.is_error ? numbered(value) : null);
  let rows = rowsOf(text);
  const pre = rows ? h("pre.read", null, numberedView(long ? rows.slice(0, RESULT_LINES) : rows)) : h("pre", null, long ? clip(text, lines) : text);
  el.append(pre);
  const note = ev.truncated && ev.full_length ? h("p.note", null, t("cut_at", { n: text.length, full: ev.full_length })) : null;
  if (long) {
    let open = false;
    let whole = !cut;
    const label = () => t("show_all", { n: whole ? text.length : ev.full_length });
    const button = h("button.link", { type: "button", "aria-expanded": "false" }, label());
    button.addEventListener("click", async () => {
      if (!open && !whole) {
        button.disabled = true;
        button.textContent = t("full_loading");
        try {
          text = String((await full(ev.seq)).text || "");
          lines = text.split("\n");
          rows = rowsOf(text);
          whole = true;
          pre.classList.add("whole"); // a big text scrolls in its own block
          if (note) note.replaceChildren(t("full_read", { full: text.length }));
        } catch (error) {
          if (note) { note.classList.add("err"); note.replaceChildren(t("full_failed", { why: sentence(error.message || String(error)) })); }
          button.disabled = false;
          button.textContent = label();
          return;
        }
        button.disabled = false;
      }
      open = !open;
      if (rows) pre.replaceChildren(numberedView(open ? rows : rows.slice(0, RESULT_LINES)));
      else pre.textContent = open ? text : clip(text, lines);
      button.textContent = open ? t("show_less") : label();
      button.setAttribute("aria-expanded", String(open));
    });
    el.append(button);
  }
  if (note) el.append(note);
  if (!text) el.classList.add("empty");
  return el;
}

function clip(text, lines) {
  let out = lines.slice(0, RESULT_LINES).join("\n");
  if (out.length > RESULT_CHARS) out = out.slice(0, RESULT_CHARS);
  return out + " …";
}

/** Line diff (longest common subsequence); big inputs fall back to "all removed, all added". */
export function lineDiff(before, after) {
  const a = before ? before.replace(/\n$/, "").split("\n") : [];
  const b = after ? after.replace(/\n$/, "").split("\n") : [];
  if (!a.length) return b.map((l) => ["+", l]);
  if (a.length * b.length > 250000) return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}

function diffView(ops) {
  const cls = { "+": "add", "-": "del", " ": "ctx" };
  const rows = (list) => list.map(([sign, text]) => h("div.dl." + cls[sign], null, h("span.sign", { "aria-hidden": "true" }, sign), h("span.dt", null, text)));
  const el = h("div.diff", { role: "group" });
  if (ops.length <= DIFF_LINES) {
    el.append(...rows(ops));
    return el;
  }
  el.append(...rows(ops.slice(0, DIFF_LINES)));
  const button = h("button.link", { type: "button" }, t("show_all_lines", { n: ops.length }));
  button.addEventListener("click", () => { button.replaceWith(...rows(ops.slice(DIFF_LINES))); });
  el.append(button);
  return el;
}
