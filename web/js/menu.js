// The session menu, grouped: what is used every day first (mode, model, files, changes,
// decisions, fork, move), then information (cost, permissions, audit, read-only), then
// arranging (rename, pin, group, lock, order), and ending last and apart (rest, end, delete),
// with one line on how Rest and End differ. An entry without a group is an everyday one.

import { getLang } from "./i18n.js";
import { actionSheet } from "./ui.js";

export const GROUPS = ["everyday", "info", "arrange", "ending"];

const TEXT = {
  en: {
    everyday: "Work", info: "Information", arrange: "Arrange", ending: "Stop or remove",
    rest_vs_end: "Rest stops the terminal; your next message reopens it. End stops Claude Code and marks the session ended. Delete removes its history.",
  },
  ko: {
    everyday: "작업", info: "정보", arrange: "정리", ending: "멈추기 · 지우기",
    rest_vs_end: "휴면은 터미널을 멈추고, 다음 메시지가 다시 열어요. 끝내기는 Claude Code를 멈추고 끝남으로 표시해요. 삭제는 기록을 지워요.",
  },
};

function text(key) {
  return (TEXT[getLang()] || TEXT.en)[key] || TEXT.en[key];
}

/** Tag ``actions`` (menu entries) with ``group``. */
export function inGroup(group, actions) {
  return actions.filter(Boolean).map((a) => ({ ...a, group }));
}

/** Show the menu: entries by group, in the groups' order, each group under its heading.
 * @param {string} title
 * @param {{label: string, run: () => void, danger?: boolean, group?: string}[]} actions */
export function groupedSheet(title, actions) {
  const list = [];
  for (const group of GROUPS) {
    const items = actions.filter((a) => (GROUPS.includes(a.group) ? a.group : "everyday") === group);
    if (!items.length) continue;
    list.push({ heading: text(group), group });
    if (group === "ending" && items.some((a) => a.kind === "rest" || a.kind === "end")) list.push({ note: text("rest_vs_end") });
    list.push(...items);
  }
  return actionSheet(title, list);
}
