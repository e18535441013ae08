// The composer's choices, beside its text: when a message is typed (at the next safe point, after
// this turn, or now) and the files attached to it (each uploaded to the Mac before the message
// names it); what the held-message ledger says of each; and the running session's mode and model.

import { ApiError, extraHeaders, patch } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { actionSheet, promptBox, showError, toast } from "./ui.js";
import { MODES, canonical, modeName } from "./modes.js";

// What the relay takes (wire/protocol.py ATTACHMENT_TYPES); its limit is attachment_max_bytes.
export const ATTACHMENT_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf",
  "text/plain", "text/markdown", "text/csv", "application/json"];
const MAX_FILES = 10;
// Modes a running session can be switched to with Claude Code's own mode key.

export function sizeText(bytes) {
  if (bytes < 1024) return bytes + " B";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(0) + " KB";
  return (bytes / 1024 / 1024).toFixed(1) + " MB";
}

/** A file's type as a person reads it: "PNG image", "PDF", "text". */
export function typeText(mediaType) {
  const [kind, sub] = String(mediaType || "").split("/");
  if (kind === "image") return t("att_image", { type: (sub || "").toUpperCase() });
  if (sub === "pdf") return "PDF";
  return t("att_file", { type: (sub || kind || "?").replace(/^x-/, "") });
}

/** The attach button and the chips of the files chosen; ``files()`` are those still chosen. */
export class Attachments {
  constructor(onChange) {
    this.chosen = [];
    this.onChange = onChange || (() => {});
    this.input = h("input.attach-input", { type: "file", multiple: true, accept: ATTACHMENT_TYPES.join(","), hidden: true, "aria-hidden": "true" });
    this.input.addEventListener("change", () => { this.add([...this.input.files]); this.input.value = ""; });
    this.button = h("button.attach", { type: "button", title: t("attach"), "aria-label": t("attach") }, "+");
    this.button.addEventListener("click", () => this.input.click());
    this.chips = h("ul.attach-chips", { hidden: true, "aria-label": t("attachments") });
  }

  add(files) {
    for (const file of files) {
      if (!ATTACHMENT_TYPES.includes(file.type)) { toast(t("att_bad_type", { name: file.name }), { error: true }); continue; }
      if (this.chosen.length >= MAX_FILES) { toast(t("att_too_many", { n: MAX_FILES }), { error: true }); break; }
      this.chosen.push(file);
    }
    this.render();
  }

  clear() { this.chosen = []; this.render(); }

  files() { return [...this.chosen]; }

  render() {
    this.chips.hidden = !this.chosen.length;
    this.chips.replaceChildren(...this.chosen.map((file, index) => {
      const remove = h("button.chip-x", { type: "button", "aria-label": t("att_remove", { name: file.name }) }, "×");
      remove.addEventListener("click", () => { this.chosen.splice(index, 1); this.render(); });
      return h("li.attach-chip", null, h("span.chip-name", null, file.name),
        h("span.chip-type", null, typeText(file.type) + " · " + sizeText(file.size)), remove);
    }));
    this.onChange();
  }
}

/** Upload one file for the session's next message; the Mac's answer: {id, name, media_type, size}. */
export async function upload(sessionId, file) {
  const url = `/api/sessions/${encodeURIComponent(sessionId)}/attachments?name=${encodeURIComponent(file.name)}`;
  let response;
  try {
    response = await fetch(url, { method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { ...extraHeaders(), "Content-Type": file.type }, body: file });
  } catch {
    throw new ApiError(0, "unreachable", "the relay cannot be reached");
  }
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code || "http_" + response.status, err.message || "upload failed");
  }
  return data;
}

/** The ledger's line for a held message: its kind, and its files with their types. */
export function heldDetails(message) {
  const parts = [];
  const when = message.when || "held";
  // "held" is what every message is unless said otherwise: only the others are named.
  if (when !== "held") parts.push(h("span.held-when", { class: "hw-" + when }, t("when_" + when)));
  for (const a of message.attachments || []) {
    parts.push(h("span.held-att", { title: a.media_type }, a.name + " (" + typeText(a.media_type) + ")"));
  }
  return parts;
}

/** The menu entries that change a running session's mode and model. */
export function modeModelActions(session, onChanged) {
  const path = `/api/sessions/${encodeURIComponent(session.id)}`;
  const apply = async (fields) => {
    try {
      const snap = await patch(path, fields);
      onChanged(snap);
      toast(fields.model ? t("model_set", { model: snap.model || fields.model }) : t("mode_set", { mode: modeName(snap.permission_mode || fields.permission_mode) }));
    } catch (error) { showError(error); }
  };
  return [
    { label: t("change_mode"), run: () => actionSheet(t("change_mode"), MODES.map((m) => ({
      label: modeName(m) + (m === canonical(session.permission_mode) ? " ✓" : ""),
      run: () => apply({ permission_mode: m }),
    }))) },
    { label: t("change_model"), run: async () => {
      const value = await promptBox(t("model_label"), session.model || "");
      if (value !== null && value.trim()) apply({ model: value.trim() });
    } },
  ];
}
