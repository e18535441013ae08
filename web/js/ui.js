// Small pieces of interface shared by the screens: a toast for errors, and modal dialogs built on
// <dialog> (real focus handling, Escape closes) instead of the browser's blocking prompt().

import { h } from "./dom.js";
import { t } from "./i18n.js";

let toastTimer = null;

/** A short message at the bottom; errors stay longer. */
export function toast(text, { error = false } = {}) {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = text;
  el.className = "toast show" + (error ? " error" : "");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = "toast"; }, error ? 7000 : 3500);
}

export function showError(error) {
  if (!error) return;
  if (error.code === "unreachable") toast(t("err_unreachable"), { error: true });
  else toast(sentence(error.message || String(error)), { error: true });
}

/** A message as a sentence for a person: it starts with a capital letter (the relay's errors start
 * lower case), and a `command` in it is quoted, not shown with Markdown's backticks. */
export function sentence(text) {
  const s = String(text || "").replace(/`([^`]+)`/g, "“$1”");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function modal(content, { onClose } = {}) {
  const dialog = h("dialog.modal", null, content);
  document.body.append(dialog);
  dialog.addEventListener("close", () => { dialog.remove(); if (onClose) onClose(dialog.returnValue); });
  dialog.showModal();
  return dialog;
}

/** Ask yes/no; resolves true when confirmed. */
export function confirmBox(text, okLabel) {
  return new Promise((resolve) => {
    const form = h("form", { method: "dialog" },
      h("p", null, text),
      h("div.row.end", null,
        h("button", { value: "cancel", type: "submit" }, t("cancel")),
        h("button.primary", { value: "ok", type: "submit" }, okLabel || "OK")));
    modal(form, { onClose: (value) => resolve(value === "ok") });
  });
}

/** Ask for a line of text; resolves the text, or null when cancelled. */
export function promptBox(label, value = "") {
  return new Promise((resolve) => {
    const input = h("input", { type: "text", value, "aria-label": label });
    const form = h("form", { method: "dialog" },
      h("label", null, h("span", null, label), input),
      h("div.row.end", null,
        h("button", { value: "cancel", type: "submit", formnovalidate: true }, t("cancel")),
        h("button.primary", { value: "ok", type: "submit" }, t("save"))));
    const dialog = modal(form, { onClose: (v) => resolve(v === "ok" ? input.value : null) });
    dialog.addEventListener("submit", () => { /* method=dialog closes with the button's value */ });
    input.select();
  });
}

/** A sheet of actions; each is {label, run, danger?}. */
export function actionSheet(title, actions) {
  const list = h("div.sheet");
  const dialog = modal(h("div", null, h("h2.sheet-title", null, title), list,
    h("form", { method: "dialog" }, h("button.sheet-cancel", { value: "cancel" }, t("cancel")))));
  for (const action of actions) {
    // A group's heading or a line about it (web/js/menu.js): words, not buttons.
    if (action.heading) { list.append(h("h3.sheet-group", { dataset: { group: action.group || "" } }, action.heading)); continue; }
    if (action.note) { list.append(h("p.sheet-note", null, action.note)); continue; }
    const button = h("button.sheet-item", { type: "button", class: action.danger ? "danger" : "" }, action.label);
    // Removed now, not on "close": the action may open the next dialog first.
    button.addEventListener("click", () => { dialog.close(); dialog.remove(); action.run(); });
    list.append(button);
  }
  return dialog;
}

/** The browser's own bar takes the page's background, light or dark as the system is. */
export function followTheme() {
  const dark = matchMedia("(prefers-color-scheme: dark)");
  const paint = () => {
    let meta = document.querySelector('meta[name="theme-color"]');
    if (!meta) { meta = h("meta", { name: "theme-color" }); document.head.append(meta); }
    meta.setAttribute("content", getComputedStyle(document.documentElement).getPropertyValue("--bg").trim() || (dark.matches ? "#1c1b19" : "#faf9f7"));
  };
  paint();
  dark.addEventListener("change", paint);
}
followTheme();
