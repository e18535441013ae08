// Whether a Mac can run Claude Code at all, from what its agent reported (DeviceInfo:
// claude_found, claude_standing, claude_install_hint). A Mac without it says so under its name
// with the install line, and the new-session form explains instead of starting nothing.

import { h, withCode } from "./dom.js";
import { getLang } from "./i18n.js";

const TEXT = {
  en: {
    missing: "Claude Code is not installed on {mac}.",
    missing_do: "Install it on that Mac, then run `claude` once there to log in:",
    logged_out: "Claude Code on {mac} is not logged in.",
    logged_out_do: "Run `claude` once in a terminal on that Mac and log in.",
    start_off: "Start is off: {why}",
    no_mac: "No Mac is online: start the agent on a Mac (claude-bridge agent) and it appears here.",
    none_can: "No online Mac can run Claude Code:",
  },
  ko: {
    missing: "{mac}에 Claude Code가 설치되어 있지 않아요.",
    missing_do: "그 맥에 설치한 뒤 터미널에서 `claude`를 한 번 실행해 로그인하세요:",
    logged_out: "{mac}의 Claude Code가 로그인되어 있지 않아요.",
    logged_out_do: "그 맥의 터미널에서 `claude`를 한 번 실행해 로그인하세요.",
    start_off: "시작할 수 없어요: {why}",
    no_mac: "연결된 맥이 없어요: 맥에서 에이전트(claude-bridge agent)를 켜면 여기에 나타나요.",
    none_can: "Claude Code를 실행할 수 있는 맥이 없어요:",
  },
};

export const DEFAULT_INSTALL = "npm install -g @anthropic-ai/claude-code";

function text(key, mac = "") {
  const table = TEXT[getLang()] || TEXT.en;
  return (table[key] || TEXT.en[key]).replace("{mac}", mac).replace("{why}", mac);
}

/** What keeps ``device`` from running Claude Code: "missing", "logged_out" or null. */
export function claudeTrouble(device) {
  const info = (device && device.info) || {};
  if (info.claude_found === false || info.claude_standing === "missing") return "missing";
  if (info.claude_standing === "logged_out") return "logged_out";
  return null;
}

/** One sentence for why ``device`` cannot start a session, or "". */
export function troubleSentence(device) {
  const trouble = claudeTrouble(device);
  return trouble ? text(trouble, (device && (device.name || device.id)) || "Mac") : "";
}

/** The note saying what is wrong and what to do (the install line to copy), or null. */
export function troubleNote(device) {
  const trouble = claudeTrouble(device);
  if (!trouble) return null;
  const info = device.info || {};
  const parts = [h("strong", null, troubleSentence(device)), " ", ...withCode(text(trouble + "_do"))];
  if (trouble === "missing") parts.push(h("code.install-line", null, info.claude_install_hint || DEFAULT_INSTALL));
  return h("p.note.claude-trouble", { role: "status", dataset: { trouble } }, ...parts);
}

/** Put (or take away) the note right after ``anchor`` (a Mac's heading). */
export function placeTrouble(anchor, device) {
  for (let next = anchor.nextElementSibling; next && next.classList.contains("claude-trouble"); next = anchor.nextElementSibling) next.remove();
  const note = troubleNote(device);
  if (note) anchor.after(note);
}

/** Why the new-session form cannot start on ``device`` now, or "" (it can).
 * @param {object|undefined} device  the chosen Mac
 * @param {boolean} anyOnline  whether any Mac of the account is online */
export function whyNoStart(device, anyOnline) {
  if (!anyOnline) return text("no_mac");
  if (!device || !device.online) return text("no_mac");
  const sentence = troubleSentence(device);
  return sentence ? text("start_off", sentence) : "";
}
