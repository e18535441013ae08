// A session whose claude ended before it was ever live (SessionInfo.failure, agent/startfail.py):
// what happened in Claude Code's own words, and what to do, on the session and in the list.
// Its held messages stay, marked not delivered.

import { h, withCode } from "./dom.js";
import { getLang } from "./i18n.js";

const TEXT = {
  en: { title: "Claude Code could not start", short: "Did not start", lines: "What the terminal showed", not_delivered: "Not delivered: waiting for a start that works" },
  ko: { title: "Claude Code를 시작하지 못했어요", short: "시작 못 함", lines: "터미널에 나온 내용", not_delivered: "전달 안 됨: 제대로 시작되길 기다려요" },
};

export function failureText(key) {
  return (TEXT[getLang()] || TEXT.en)[key] || TEXT.en[key];
}

/** The list row's line: "Did not start: <reason>", or null. */
export function failureLine(session) {
  const f = session && session.failure;
  if (!f) return null;
  return h("span.row-failure", { role: "status" }, failureText("short") + ": " + (f.reason || f.code));
}

/** The session view's box: reason, what to do, and the terminal's last lines; or null. */
export function failureBox(session) {
  const f = session && session.failure;
  if (!f) return null;
  const lines = (f.last_lines || []).filter((l) => l && l.trim());
  return h("section.failure", { role: "alert", dataset: { code: f.code || "" } },
    h("h2.failure-title", null, failureText("title")),
    f.reason ? h("p.failure-reason", null, f.reason) : null,
    f.action ? h("p.failure-action", null, ...withCode(f.action)) : null,
    lines.length ? h("details.failure-lines", null, h("summary", null, failureText("lines")), h("pre", null, lines.join("\n"))) : null);
}
