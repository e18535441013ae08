// One way to write a date on every screen: the page's language, the month in words, 24-hour time
// ("5 Dec 2026, 07:48" in English), the year left out when it is this year.

import { getLang } from "./i18n.js";

function lang() { return document.documentElement.lang || getLang(); }

/** A day ("5 Dec" / "5 Dec 2025"), or "" when ``iso`` is not a date. */
export function dayText(iso) {
  const when = new Date(iso);
  if (iso === null || iso === undefined || Number.isNaN(when.getTime())) return "";
  const options = { day: "numeric", month: "short" };
  if (when.getFullYear() !== new Date().getFullYear()) options.year = "numeric";
  return when.toLocaleDateString(lang(), options);
}

/** A day and its time ("5 Dec, 07:48"), or "". */
export function dateTimeText(iso) {
  const day = dayText(iso);
  if (!day) return "";
  const time = new Date(iso).toLocaleTimeString(lang(), { hour: "2-digit", minute: "2-digit", hour12: false });
  return day + ", " + time;
}
