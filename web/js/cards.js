// Cards: the dialogs Claude Code drew in the terminal, answered with one tap. A card stays on the
// page, marked as answered, until the agent reports that the dialog really closed (the next
// snapshot without it); a 409 card_closed / card_changed says it closed / another dialog came.
// A card whose dialog is not drawn yet (answerable: false) is shown, not answerable.

import { h } from "./dom.js";
import { t } from "./i18n.js";
import { markdown } from "./md.js";
import { lineDiff } from "./conversation.js";

const FREE_TEXT = /^type something\.?$/i;
const CHAT = /^chat about this/i;
const NO = /^no\b/i;
// Keyboard hints drawn for the terminal ("(shift+tab)", "(esc)") mean nothing on a phone; the
// agent still answers with the keys.
const KEY_HINT = /\s*\((?:[^()]*\b(?:shift|ctrl|cmd|alt|tab|esc|enter)\b[^()]*|[⇧⌃⌘⏎])\)/gi;
const CLAMP_LINES = 3;
const CLAMP_CHARS = 160;

/** An option's label for the phone: no checkbox mark, no keyboard hint. */
export function shownLabel(label) {
  return String(label || "").replace(/^\[.\]\s*/, "").replace(KEY_HINT, "").trim();
}

/**
 * @param card the session's open card
 * @param {{readOnly: boolean, answer: (body: object) => Promise<any>, message?: (text: string) => Promise<any>, plan?: string}} options
 *   ``message`` sends a message instead of an answer (a plan kept in planning, with feedback);
 *   ``plan`` is the plan from the conversation when the card does not carry it.
 */
export function renderCard(card, { readOnly, answer, message, plan }) {
  const status = h("p.card-status", { role: "status", "aria-live": "polite" });
  const el = h("section.card", { class: "card-" + card.kind, "aria-label": t("ck_" + card.kind), dataset: { cardId: card.id } });
  const controls = [];

  async function send(body, call = () => answer(body)) {
    if (el.classList.contains("pending")) return;
    el.classList.add("pending");
    el.classList.remove("failed");
    controls.forEach((c) => { c.disabled = true; });
    status.textContent = t("card_pending");
    try {
      await call();
      el.classList.add("answered");
      status.textContent = t("card_waiting");
    } catch (error) {
      el.classList.remove("pending");
      el.classList.add("failed");
      controls.forEach((c) => { c.disabled = false; });
      status.textContent = /^card_(closed|changed|not_ready)$/.test(error.code) ? t(error.code) : error.message;
    }
  }

  // The top bar already names the kind ("Permission"): a permission card starts with its tool.
  const head = h("header.card-head", null, card.kind === "permission" && card.tool ? null : h("span.badge.waiting", null, t("ck_" + card.kind)));
  if (card.tool && ["permission", "denied"].includes(card.kind)) head.append(h("span.card-tool", null, card.tool));
  if (card.kind === "permission" && card.tool_input && card.tool_input.description) head.append(h("span.card-desc", null, String(card.tool_input.description)));
  el.append(head);
  // "Bash command" under "Bash" says nothing new
  const sameAsTool = card.tool && card.title && card.title.toLowerCase().startsWith(card.tool.toLowerCase());
  if (card.title && !sameAsTool && card.kind !== "denied") el.append(h("h3.card-title", null, card.title));

  const input = card.tool_input || {};
  if (card.kind === "denied") { // auto mode refused the call: its reason, then the call
    el.append(h("p.card-text.denied-reason", null, card.text || ""), toolInput(card.tool, input));
  } else if (card.kind === "permission") {
    el.append(toolInput(card.tool, input));
    const text = withoutRepeats(card.text, [input.command, input.description, input.file_path]);
    if (text) el.append(h("p.card-text", null, text));
    if (card.source === "screen") el.append(h("p.note.card-warning", null, t("card_from_screen")));
  } else if (card.kind === "plan") {
    const shown = typeof input.plan === "string" && input.plan ? input.plan : plan;
    if (shown) el.append(expandable(h("div.plan-body", null, markdown(shown)), shown.split("\n").length > 8 || shown.length > 500));
    else if (card.text) el.append(h("p.card-text", null, card.text));
  } else if (card.text) {
    el.append(h("p.card-text", null, card.text));
  }
  if (card.kind === "question") {
    const questions = Array.isArray(input.questions) ? input.questions : [];
    const at = questions.findIndex((q) => q && (q.header === card.title || q.question === card.text));
    if (questions.length > 1 && at >= 0) head.append(h("span.card-step", null, t("card_step", { n: at + 1, of: questions.length })));
  }

  const body = h("div.card-body");
  el.append(body);
  if (readOnly) {
    body.append(h("ul.opts", null, card.options.map((o) => h("li", null, o.label))), h("p.note", null, t("card_read_only")));
    return el;
  }

  if (card.answerable === false) {
    body.append(h("p.note.card-not-ready", null, t("card_not_ready")));
    return el;
  }

  const options = card.options || [];
  const free = options.find((o) => FREE_TEXT.test(shownLabel(o.label)));
  const chat = options.find((o) => CHAT.test(shownLabel(o.label)));
  const no = card.kind === "plan" ? options.find((o) => NO.test(shownLabel(o.label))) : null;
  const choices = options.filter((o) => o !== free && o !== chat && o !== no);

  if (card.kind === "stuck") {
    const area = h("textarea", { rows: 2, "aria-label": t("ck_stuck"), placeholder: t("msg_placeholder") });
    const go = h("button.primary", { type: "button" }, t("card_send"));
    go.addEventListener("click", () => { const text = area.value.trim(); if (text) send({ text }); });
    controls.push(area, go);
    body.append(area, h("div.row", null, go));
  } else if (card.kind === "question" && card.multi_select) {
    const boxes = choices.map((o) => {
      const box = h("input", { type: "checkbox", value: o.key });
      controls.push(box);
      return h("label.check", null, box, h("span", null, shownLabel(o.label)));
    });
    body.append(h("fieldset.multi", null, h("legend.sr", null, card.title || t("ck_question")), boxes));
    let input = null;
    if (free) {
      input = h("input", { type: "text", placeholder: t("card_type"), "aria-label": t("card_type") });
      controls.push(input);
      body.append(input);
    }
    const submit = h("button.primary", { type: "button" }, t("card_submit"));
    submit.addEventListener("click", () => {
      const text = input ? input.value.trim() : "";
      if (text) { send({ text }); return; }
      const keys = boxes.map((l) => l.querySelector("input")).filter((b) => b.checked).map((b) => b.value);
      if (keys.length) send({ keys });
    });
    controls.push(submit);
    body.append(h("div.row", null, submit));
  } else {
    let always = null;
    if (card.kind === "permission") {
      always = h("input", { type: "checkbox" });
      controls.push(always);
    }
    const list = h("div.options");
    for (const o of choices) {
      const button = h("button.option", { type: "button", dataset: { key: o.key } },
        card.kind === "denied" ? null : h("span.key", { "aria-hidden": "true" }, o.key), h("span", null, shownLabel(o.label)));
      button.addEventListener("click", () => send(always && always.checked ? { key: o.key, always: true } : { key: o.key }));
      controls.push(button);
      list.append(button);
    }
    body.append(list);
    if (free) {
      const input = h("input", { type: "text", placeholder: t("card_type"), "aria-label": t("card_type") });
      const go = h("button", { type: "button" }, t("card_answer"));
      const submit = () => { const text = input.value.trim(); if (text) send({ text }); };
      go.addEventListener("click", submit);
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") submit(); });
      controls.push(input, go);
      body.append(h("div.row.free", null, input, go));
    }
    if (always) body.append(h("label.check.small", null, always, h("span", null, t("card_always"))));
  }
  if (no) body.append(keepPlanning(no, send, message, controls));
  if (chat) {
    // Not an answer like the others: it leaves the question to talk it over.
    const talk = h("button.link.chat", { type: "button", dataset: { key: chat.key } }, shownLabel(chat.label));
    talk.addEventListener("click", () => send({ key: chat.key }));
    controls.push(talk);
    body.append(h("div.row.card-chat", null, talk));
  }
  if (card.kind === "denied") body.append(h("p.note", null, t("card_denied_note")));
  else if (card.kind !== "stuck") {
    body.append(h("p.note.card-send-note", null, t(["question", "plan", "dialog"].includes(card.kind) ? "card_send_dismiss" : "card_send_held")));
  }
  el.append(status);
  return el;
}

/** "Keep planning": the plan is turned down and, with feedback, the feedback goes to Claude as
 * the next message (a message on an open plan dialog closes it with Esc, the same "No", and is
 * typed into the prompt: Claude Code sends it with the rejection). */
function keepPlanning(no, send, message, controls) {
  const area = h("textarea.plan-feedback", { rows: 2, "aria-label": t("plan_feedback"), placeholder: t("plan_feedback") });
  const go = h("button.keep-planning", { type: "button" }, t("plan_keep"));
  go.addEventListener("click", () => {
    const text = area.value.trim();
    if (text && message) send({ message: text }, () => message(text));
    else send({ key: no.key });
  });
  controls.push(area, go);
  return h("div.card-keep", null, area, h("div.row", null, go));
}

/** Text without the parts already shown above it (the screen repeats the command and its description). */
function withoutRepeats(text, shown) {
  const seen = shown.filter((s) => typeof s === "string" && s.trim()).map((s) => s.replace(/\s+/g, " ").trim());
  if (!text || !seen.length) return text || "";
  return String(text).split("\n").filter((line) => {
    const flat = line.replace(/\s+/g, " ").trim();
    return flat && !seen.some((s) => s.includes(flat));
  }).join("\n");
}

/** A block cut to a few lines, the whole of it one tap away. */
function expandable(block, long) {
  if (!long) return block;
  block.classList.add("clamped");
  const more = h("button.link.expand", { type: "button", "aria-expanded": "false" }, t("card_show_all"));
  more.addEventListener("click", () => {
    const open = block.classList.toggle("clamped") === false;
    more.textContent = t(open ? "show_less" : "card_show_all");
    more.setAttribute("aria-expanded", String(open));
  });
  return h("div.expandable", null, block, more);
}

function toolInput(tool, input) {
  const box = h("div.card-input");
  const file = input.file_path || input.notebook_path;
  if (input.command) {
    const command = String(input.command);
    box.append(expandable(h("pre.cmd", { "aria-label": t("command") }, h("code", null, command)),
      command.split("\n").length > CLAMP_LINES || command.length > CLAMP_CHARS));
  } else if (file) {
    box.append(h("p.path", { title: t("file") }, String(file)));
    if (typeof input.content === "string" || input.old_string !== undefined) {
      const ops = lineDiff(String(input.old_string || ""), String(input.new_string ?? input.content ?? ""));
      const diff = h("div.diff");
      for (const [sign, text] of ops) {
        diff.append(h("div.dl." + (sign === "+" ? "add" : sign === "-" ? "del" : "ctx"), null,
          h("span.sign", { "aria-hidden": "true" }, sign), h("span.dt", null, text)));
      }
      box.append(expandable(diff, ops.length > CLAMP_LINES + 1));
    }
  } else if (Object.keys(input).length) {
    const text = JSON.stringify(input, null, 2);
    box.append(expandable(h("pre", null, text), text.split("\n").length > CLAMP_LINES + 1));
  }
  return box;
}
