// Moving a session to another Mac of the account (POST …/move): the "Move to…" dialog, and the
// band that shows the move's progress, or why it failed, on the session's screen. The relay drives
// the move; its progress arrives as the session's `move` field on the account stream.

import { post } from "./api.js";
import { h, sizeText } from "./dom.js";
import { t } from "./i18n.js";
import { modal, sentence, showError, toast } from "./ui.js";

const enc = encodeURIComponent;
// The relay's steps of a move (relay/features/moves.py), each with words in i18n.js.
const STEPS = ["starting", "probing", "waiting", "stopping", "packing", "sending", "resuming", "finishing", "aborting"];

/** The "Move to…" action of a session's menu, or null when no other Mac is paired. */
export function moveAction(session, devices, onMoved) {
  const others = [...devices.values()].filter((d) => d.id !== session.device_id);
  if (!others.length) return null;
  return { label: t("mv_action"), run: () => moveDialog(session, others, onMoved) };
}

function moveDialog(session, others, onMoved) {
  const online = others.filter((d) => d.online);
  const macs = h("fieldset.mv-macs", null, h("legend", null, t("mv_to")),
    ...others.map((d, i) => h("label.check", null,
      h("input", { type: "radio", name: "mac", value: d.id, disabled: !d.online, checked: d.online && d.id === (online[0] || {}).id ? true : undefined }),
      h("span", null, d.name || d.id, d.online ? null : h("span.muted", null, " · " + t("mv_offline"))))));
  const folder = h("input", { type: "text", name: "cwd", value: session.cwd || "", spellcheck: "false", autocapitalize: "off" });
  const when = h("fieldset.mv-when", null, h("legend", null, t("mv_when")),
    h("label.check", null, h("input", { type: "radio", name: "when", value: "idle", checked: true }), h("span", null, t("mv_idle"))),
    h("label.check", null, h("input", { type: "radio", name: "when", value: "now" }), h("span", null, t("mv_now"))));
  const go = h("button.primary", { type: "submit", value: "move", disabled: !online.length }, t("mv_go"));
  const form = h("form.mv-form", { method: "dialog" },
    h("h2", null, t("mv_title")),
    h("p.note", null, t("mv_explain")),
    online.length ? null : h("p.note.err", { role: "alert" }, t("mv_none_online")),
    macs,
    h("label", null, h("span", null, t("mv_folder")), folder),
    when,
    h("div.row.end", null, h("button", { type: "submit", value: "cancel", formnovalidate: true }, t("cancel")), go));
  const dialog = modal(form);
  form.addEventListener("submit", async (event) => {
    if (event.submitter !== go) return; // Cancel closes the dialog
    event.preventDefault();
    const mac = form.querySelector("input[name=mac]:checked");
    if (!mac) return;
    go.disabled = true;
    const body = { device_id: mac.value, when: form.querySelector("input[name=when]:checked").value };
    const cwd = folder.value.trim();
    if (cwd && cwd !== session.cwd) body.cwd = cwd;
    try {
      const answer = await post(`/api/sessions/${enc(session.id)}/move`, body);
      dialog.close();
      toast(t("mv_begun"));
      onMoved(answer.move);
    } catch (error) {
      go.disabled = false;
      showError(error);
    }
  });
}

/** The band under a session's title while it moves, or when its last move failed: what the move
 * is doing and how much it carried, or the reason it failed (the session stayed where it was). */
export function moveBand(move, devices) {
  if (!move) return null;
  const name = targetName(move, devices);
  if (move.state === "failed") {
    const reason = move.error ? sentence(move.error.message) : "";
    return h("p.move-band.failed", { role: "status" }, t("mv_failed", { mac: name }) + (reason ? " " + reason : ""));
  }
  if (move.state !== "moving") return null;
  const total = Number(move.total) || 0;
  const done = Math.min(Number(move.bytes) || 0, total);
  const step = STEPS.includes(move.step) ? t("mv_step_" + move.step) : "";
  const text = t("mv_moving", { mac: name }) + (step ? " · " + step : "") + (total ? ` · ${sizeText(done)} / ${sizeText(total)}` : "");
  return h("div.move-band", { role: "status" },
    h("span", null, text),
    total ? h("progress", { max: total, value: done, "aria-label": t("mv_progress") }) : null);
}

/** The name of the Mac a move goes to (its id's start when that Mac is not known here). */
export function targetName(move, devices) {
  const to = devices.get(move.to);
  return (to && (to.name || to.id)) || String(move.to || "").slice(0, 8);
}
