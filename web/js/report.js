// The usage report (#/report, from Settings): GET /api/report?since=&until= drawn for a person —
// a few figures, a chart of sessions started and resumed per day (SVG, no library), the tokens
// re-read on resume and avoided by scope, and the same figures per Mac and per project.

import { get } from "./api.js";
import { count, folderName, h, shortPath } from "./dom.js";
import { getLang } from "./i18n.js";

const LABELS = {
  en: {
    title: "Report", period: "Period", d7: "7 days", d30: "30 days", d90: "90 days",
    started: "Started", resumed: "Resumed", resume_rate: "{p} of starts were resumes",
    reread: "Re-read on resume", avoided: "{n} tokens avoided against full resumes",
    search: "Search success", search_of: "{f} of {n} searches led to an opened session within 2 min",
    memory: "Memory", memory_of: "{p} proposed · {a} accepted · {d} dismissed",
    expiries: "Expiries", expiries_of: "{done} of {due} due were done",
    chart: "Sessions per day", chart_label: "Sessions started and resumed per day, {from} to {to}",
    new: "New", resumes: "Resumed", tokens_chart: "Tokens re-read on resume, by scope",
    full: "full", summary: "summary", fresh: "fresh", by_mac: "Per Mac", by_project: "Per project",
    none: "Nothing recorded in this period yet.", no_figure: "—",
    row: "{s} started · {r} resumed · {t} tokens re-read on resume",
    hows: "reopened {reopen}, revived {revive}, moved {move}",
  },
  ko: {
    title: "리포트", period: "기간", d7: "7일", d30: "30일", d90: "90일",
    started: "시작", resumed: "재개", resume_rate: "시작 중 {p}가 재개였어요",
    reread: "재개할 때 다시 읽은 토큰", avoided: "전체 재개보다 {n} 토큰 아꼈어요",
    search: "검색 성공", search_of: "검색 {n}번 중 {f}번이 2분 안에 세션을 열었어요",
    memory: "메모리", memory_of: "제안 {p} · 수락 {a} · 무시 {d}",
    expiries: "만료", expiries_of: "예정된 {due}개 중 {done}개 완료",
    chart: "하루 세션", chart_label: "{from}부터 {to}까지 하루에 시작하고 재개한 세션",
    new: "새로", resumes: "재개", tokens_chart: "재개할 때 다시 읽은 토큰 (범위별)",
    full: "전체", summary: "요약", fresh: "새로", by_mac: "Mac별", by_project: "프로젝트별",
    none: "이 기간에는 아직 기록이 없어요.", no_figure: "—",
    row: "시작 {s} · 재개 {r} · 재개 때 다시 읽은 토큰 {t}",
    hows: "다시 열기 {reopen}, 되살리기 {revive}, 옮기기 {move}",
  },
};

export function rt(key, vars) {
  let text = (LABELS[getLang()] || LABELS.en)[key] ?? LABELS.en[key] ?? key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

const SCOPES = ["full", "summary", "fresh"];
const DAY_MS = 86400000;
const PERIODS = [7, 30, 90];
const SVG = "http://www.w3.org/2000/svg";
// The chart's drawing box (the SVG scales to the page's width).
const W = 360;
const H = 170;
const PAD = { left: 28, right: 6, top: 10, bottom: 22 };

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const pct = (v) => (v === null || v === undefined ? rt("no_figure") : Math.round(v * 100) + "%");
const resumedOf = (fig) => SCOPES.reduce((n, s) => n + fig.sessions.resumed[s], 0);
const rereadText = (fig) => (SCOPES.some((s) => fig.tokens[s].resumes)
  ? count(SCOPES.reduce((n, s) => n + fig.tokens[s].reread, 0), true) : rt("no_figure"));
const day = (iso) => new Date(iso).toLocaleDateString(document.documentElement.lang, { month: "short", day: "numeric" });

/** Stacked bars per period: new starts under resumes, with the top value and the first and last
 * dates on the axes. */
export function sessionsChart(series) {
  const top = Math.max(1, ...series.map((p) => p.started + SCOPES.reduce((n, s) => n + p.resumed[s], 0)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / Math.max(1, series.length);
  const bar = Math.max(1, slot * 0.7);
  const y = (v) => PAD.top + innerH - (v / top) * innerH;
  const bars = series.map((p, i) => {
    const resumed = SCOPES.reduce((n, s) => n + p.resumed[s], 0);
    const x = PAD.left + i * slot + (slot - bar) / 2;
    const tip = `${day(p.until)}: ${rt("new")} ${p.started}, ${rt("resumes")} ${resumed}`;
    return svg("g", { class: "bar", "data-started": p.started, "data-resumed": resumed },
      svg("title", null, tip),
      p.started ? svg("rect", { class: "c-new", x, y: y(p.started), width: bar, height: y(0) - y(p.started) }) : null,
      resumed ? svg("rect", { class: "c-resumed", x, y: y(p.started + resumed), width: bar, height: y(p.started) - y(p.started + resumed) }) : null);
  });
  const first = series[0];
  const last = series[series.length - 1];
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart sessions-chart", role: "img",
    "aria-label": rt("chart_label", { from: first ? day(first.until) : "", to: last ? day(last.until) : "" }) },
  svg("line", { class: "axis", x1: PAD.left, y1: y(0), x2: W - PAD.right, y2: y(0) }),
  svg("line", { class: "grid", x1: PAD.left, y1: y(top), x2: W - PAD.right, y2: y(top) }),
  svg("text", { class: "tick", x: PAD.left - 4, y: y(top) + 4, "text-anchor": "end" }, String(top)),
  svg("text", { class: "tick", x: PAD.left - 4, y: y(0), "text-anchor": "end" }, "0"),
  first ? svg("text", { class: "tick", x: PAD.left, y: H - 6 }, day(first.until)) : null,
  last ? svg("text", { class: "tick", x: W - PAD.right, y: H - 6, "text-anchor": "end" }, day(last.until)) : null,
  bars);
}

/** One horizontal bar per scope: tokens re-read on resume. */
export function tokensChart(tokens) {
  const top = Math.max(1, ...SCOPES.map((s) => tokens[s].reread));
  const rowH = 26;
  const labelW = 70;
  const valueW = 60;
  const barW = W - labelW - valueW;
  return svg("svg", { viewBox: `0 0 ${W} ${rowH * SCOPES.length}`, class: "chart tokens-chart", role: "img", "aria-label": rt("tokens_chart") },
    SCOPES.map((s, i) => svg("g", { class: "scope", "data-scope": s },
      svg("text", { class: "tick", x: 0, y: i * rowH + 17 }, rt(s)),
      svg("rect", { class: "c-" + s, x: labelW, y: i * rowH + 6, height: 14, width: Math.max(tokens[s].reread ? 2 : 0, (tokens[s].reread / top) * barW), rx: 3 }),
      svg("text", { class: "tick", x: W, y: i * rowH + 17, "text-anchor": "end" }, count(tokens[s].reread, true)))));
}

function tile(name, big, small) {
  return h("div.tile", { dataset: { figure: name } }, h("span.tile-name", null, rt(name)), h("span.tile-big", null, big), h("span.tile-small", null, small));
}

function figuresRow(name, sub, fig) {
  return h("li", null, h("span.row-title", null, name), sub ? h("span.row-meta", null, sub) : null,
    h("span.row-meta", null, rt("row", { s: fig.sessions.started, r: resumedOf(fig), t: rereadText(fig) })));
}

export class ReportView {
  constructor(app, days) {
    this.app = app;
    this.days = PERIODS.includes(Number(days)) ? Number(days) : 30;
    this.el = h("div.page.report");
    this.load();
  }

  title() { return rt("title"); }

  destroy() {}

  async load() {
    const until = Date.now();
    const params = new URLSearchParams({ since: String((until - this.days * DAY_MS) / 1000), until: String(until / 1000) });
    try {
      this.data = await get("/api/report?" + params);
      this.draw();
    } catch (error) {
      this.el.replaceChildren(h("p.error", null, error.message));
    }
  }

  draw() {
    const d = this.data;
    const all = d.totals;
    const periods = h("div.segs", { role: "group", "aria-label": rt("period") }, PERIODS.map((n) => {
      const b = h("button.seg", { type: "button", "aria-pressed": String(n === this.days) }, rt("d" + n));
      b.addEventListener("click", () => { location.hash = "#/report/" + n; });
      return b;
    }));
    const avoided = SCOPES.reduce((n, s) => n + all.tokens[s].avoided, 0);
    const m = all.memory;
    const tiles = h("div.tiles", null,
      tile("started", count(all.sessions.started), ""),
      tile("resumed", count(resumedOf(all)), [
        all.sessions.resume_rate === null ? "" : rt("resume_rate", { p: pct(all.sessions.resume_rate) }),
        resumedOf(all) ? rt("hows", d.starts_by_how || {}) : "",
      ].filter(Boolean).join(" · ")),
      tile("reread", rereadText(all), rt("avoided", { n: count(avoided, true) })),
      tile("search", pct(all.search.success_rate), rt("search_of", { f: all.search.followed, n: all.search.searches })),
      tile("memory", count(m.accepted), rt("memory_of", { p: m.proposed, a: m.accepted, d: m.dismissed })),
      tile("expiries", pct(all.retention.done_rate), rt("expiries_of", { done: all.retention.done, due: all.retention.due })));
    const empty = !all.sessions.started && !resumedOf(all) && !all.search.searches && !m.proposed && !all.retention.due;
    const macs = Object.entries(d.by_mac);
    const projects = Object.entries(d.by_project);
    this.el.replaceChildren(...[
      periods,
      empty ? h("p.muted", null, rt("none")) : null,
      tiles,
      h("section", null, h("h2", null, rt("chart")), sessionsChart(d.series),
        h("p.legend", null, h("span.key.c-new"), rt("new"), h("span.key.c-resumed"), rt("resumes"))),
      h("section", null, h("h2", null, rt("tokens_chart")), tokensChart(all.tokens)),
      macs.length ? h("section", null, h("h2", null, rt("by_mac")), h("ul.list.report-macs", null,
        macs.map(([id, fig]) => figuresRow((d.macs || {})[id] || id, "", fig)))) : null,
      projects.length ? h("section", null, h("h2", null, rt("by_project")), h("ul.list.report-projects", null,
        projects.map(([path, fig]) => figuresRow(folderName(path), shortPath(path), fig)))) : null,
    ].filter(Boolean));
  }
}
