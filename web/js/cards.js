// Cards: the dialogs Claude Code drew in the terminal, answered with one tap. A card stays on the
// page, marked as answered, until the agent reports that the dialog really closed (the next
// snapshot without it); a 409 card_closed / card_changed says it closed / another dialog came.
// A card whose dialog is not drawn yet (answerable: false) is shown, not answerable.

import { h } from "./dom.js";
import { t } from "./i18n.js";
import { markdown } from "./md.js";
import { lineDiff } from "./conversation.js";

const FREE_TEXT = /^type something\.?$/i;

/**
 * @param card the session's open card
 * @param {{readOnly: boolean, answer: (body: object) => Promise<any>}} options
 */
export function renderCard(card, { readOnly, answer }) {
  const status = h("p.card-status", { role: "status", "aria-live": "polite" });
  const el = h("section.card", { class: "card-" + card.kind, "aria-label": t("ck_" + card.kind), dataset: { cardId: card.id } });
  const controls = [];

  async function send(body) {
    if (el.classList.contains("pending")) return;
    el.classList.add("pending");
    el.classList.remove("failed");
    controls.forEach((c) => { c.disabled = true; });
    status.textContent = t("card_pending");
    try {
      await answer(body);
      el.classList.add("answered");
      status.textContent = t("card_waiting");
    } catch (error) {
      el.classList.remove("pending");
      el.classList.add("failed");
      controls.forEach((c) => { c.disabled = false; });
      status.textContent = /^card_(closed|changed|not_ready)$/.test(error.code) ? t(error.code) : error.message;
    }
  }

  const head = h("header.card-head", null, h("span.badge.waiting", null, t("ck_" + card.kind)));
  if (card.tool) head.append(h("span.card-tool", null, card.tool));
  el.append(head);
  if (card.title && card.title !== card.tool) el.append(h("h3.card-title", null, card.title));

  if (card.kind === "permission") {
    el.append(toolInput(card.tool, card.tool_input || {}));
    if (card.text) el.append(h("p.card-text", null, card.text));
    if (card.source === "screen") el.append(h("p.note.card-warning", null, t("card_from_screen")));
  } else if (card.kind === "plan") {
    if (card.text) el.append(h("div.card-plan", null, markdown(card.text)));
  } else if (card.text) {
    el.append(h("p.card-text", null, card.text));
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
  const free = options.find((o) => FREE_TEXT.test(o.label.replace(/^\[.\]\s*/, "")));
  const choices = options.filter((o) => o !== free);

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
      return h("label.check", null, box, h("span", null, o.label.replace(/^\[.\]\s*/, "")));
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
        h("span.key", { "aria-hidden": "true" }, o.key), h("span", null, o.label));
      button.addEventListener("click", () => send(always && always.checked ? { key: o.key, always: true } : { key: o.key }));
      controls.push(button);
      list.append(button);
    }
    body.append(list);
    if (free) {
      const input = h("input", { type: "text", placeholder: t("card_type"), "aria-label": t("card_type") });
      const go = h("button", { type: "button" }, t("card_send"));
      const submit = () => { const text = input.value.trim(); if (text) send({ text }); };
      go.addEventListener("click", submit);
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") submit(); });
      controls.push(input, go);
      body.append(h("div.row.free", null, input, go));
    }
    if (always) body.append(h("label.check.small", null, always, h("span", null, t("card_always"))));
  }
  el.append(status);
  return el;
}

function toolInput(tool, input) {
  const box = h("div.card-input");
  const file = input.file_path || input.notebook_path;
  if (input.command) {
    box.append(h("p.label", null, t("command")), h("pre.cmd", null, h("code", null, String(input.command))));
    if (input.description) box.append(h("p.muted", null, String(input.description)));
  } else if (file) {
    box.append(h("p.label", null, t("file")), h("p.path", null, String(file)));
    if (typeof input.content === "string" || input.old_string !== undefined) {
      const ops = lineDiff(String(input.old_string || ""), String(input.new_string ?? input.content ?? ""));
      const diff = h("div.diff");
      for (const [sign, text] of ops.slice(0, 200)) {
        diff.append(h("div.dl." + (sign === "+" ? "add" : sign === "-" ? "del" : "ctx"), null,
          h("span.sign", { "aria-hidden": "true" }, sign), text));
      }
      box.append(diff);
    }
  } else if (Object.keys(input).length) {
    box.append(h("pre", null, JSON.stringify(input, null, 2).slice(0, 4000)));
  }
  return box;
}
