// One vocabulary for permission modes, the names Claude Code shows on its own screen (Manual,
// Accept edits, Plan, Auto, Bypass): in the new-session form, the session's header and the mode
// menu alike. A raw value (acceptEdits) is never shown. "default" is what Claude Code shows as
// manual mode.

import { getLang, t } from "./i18n.js";

/** The modes a person picks from, in Claude Code's own order. */
export const MODES = ["manual", "acceptEdits", "plan", "auto", "bypassPermissions"];

const HINTS = {
  en: {
    manual: "asks before each tool that changes something",
    acceptEdits: "edits files without asking; other tools ask",
    plan: "plans first and changes nothing until you approve",
    auto: "Claude decides: it runs what it judges safe and blocks the rest",
    bypassPermissions: "never asks (the Mac refuses it as root outside a sandbox)",
    dontAsk: "never shows a dialog; what is not allowed is refused",
    claude_default: "Claude Code's own default on the Mac: Auto (since 2.1.332), or the defaultMode of its ~/.claude/settings.json",
    starts_in: "Starts in {mode}: {hint}.",
    default_option: "Claude Code's default (Auto)",
    unknown: "Other mode",
  },
  ko: {
    manual: "바꾸는 도구마다 먼저 물어요",
    acceptEdits: "파일 수정은 묻지 않고, 다른 도구는 물어요",
    plan: "먼저 계획을 세우고, 승인하기 전에는 아무것도 바꾸지 않아요",
    auto: "Claude가 판단해 안전한 것만 실행하고 나머지는 막아요",
    bypassPermissions: "묻지 않아요 (샌드박스가 아니면 root에서는 거부돼요)",
    dontAsk: "확인 창 없이, 허용되지 않은 것은 거부해요",
    claude_default: "맥의 Claude Code 기본값: 자동 (2.1.332부터), 또는 ~/.claude/settings.json의 defaultMode",
    starts_in: "{mode}(으)로 시작해요: {hint}.",
    default_option: "Claude Code 기본값 (자동)",
    unknown: "다른 모드",
  },
};

function hintText(key) {
  return (HINTS[getLang()] || HINTS.en)[key] || HINTS.en[key] || "";
}

/** The same mode under its two spellings ("default" is manual mode on Claude Code's screen). */
export function canonical(mode) {
  return mode === "default" ? "manual" : mode;
}

/** A mode's name as Claude Code shows it; never the raw value. */
export function modeName(mode) {
  if (!mode) return hintText("default_option");
  const key = "pm_" + canonical(mode);
  const name = t(key);
  return name === key ? hintText("unknown") : name;
}

/** "Starts in Plan: plans first …" for the form; "" = Claude Code's own default. */
export function startsIn(mode) {
  if (!mode) return hintText("claude_default") + ".";
  return hintText("starts_in").replace("{mode}", modeName(mode)).replace("{hint}", hintText(canonical(mode)));
}

/** The form's first choice: no flag, so the Mac's Claude Code picks, as the drop-in does. */
export function defaultOptionLabel() { return hintText("default_option"); }
