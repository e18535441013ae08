// Resume scope (issue 23): how a stopped session starts again, and what each way re-reads.
// - the reopen card (Reopen on an ended or resting session): the three scopes with their
//   estimated tokens (GET /api/sessions/{id}/reopen), one picked, POST …/reopen {"scope"};
// - the session menu's "Resume scope…": the session's own (PUT …/resume_scope, null = the account's);
// - Settings: the account's default (GET/PUT /api/settings/resume_scope).

import { api, get, post } from "./api.js";
import { count, h } from "./dom.js";
import { getLang } from "./i18n.js";
import { modal, showError, toast } from "./ui.js";

const enc = encodeURIComponent;
const SCOPES = ["full", "summary", "fresh"];

const LABELS = {
  en: {
    title: "Reopen this session",
    note: "How should Claude pick up? Figures are estimates of what its first request reads.",
    full: "Full conversation", full_d: "Claude Code resumes everything said so far.",
    summary: "From a summary", summary_d: "Claude Code resumes, then compacts the conversation (/compact) before your messages.",
    fresh: "Fresh, from the decisions", fresh_d: "A new conversation whose first message is the handoff: decisions ({d}) and constraints ({c}) verbatim, open items, files and the last exchange.",
    tokens: "≈ {n} tokens", tokens_least: "at least {n} tokens", no_answer: "nothing to re-read yet",
    too_big: "The decisions and constraints alone need ≈ {n} tokens, more than handoff_max_tokens ({b}): the handoff holds just them.",
    fresh_short: "A new conversation whose first message is the handoff of its decisions and constraints.",
    keep: "Use this for this session from now on",
    go: "Reopen", save: "Save", cancel: "Cancel", reopening: "Reopening ({scope})…",
    current: "this session's", account: "your default",
    menu: "Resume scope…", menu_title: "When this session starts again",
    menu_note: "Used whenever it starts again: a message to it, Reopen, after the Mac restarts, after a move.",
    follow: "Your default ({scope})", saved: "Resume scope: {scope}", mac_later: "Saved; its Mac is offline and hears of it when it reopens from here.",
    setting: "Resume scope", setting_note: "How a stopped session starts again, unless it has its own.",
    loading: "Loading…",
  },
  ko: {
    title: "세션 다시 열기",
    note: "Claude가 어떻게 이어갈까요? 숫자는 첫 요청이 읽을 토큰의 추정치예요.",
    full: "대화 전체", full_d: "Claude Code가 지금까지의 대화를 모두 이어가요.",
    summary: "요약에서", summary_d: "Claude Code가 이어간 뒤, 메시지 전에 대화를 압축해요(/compact).",
    fresh: "결정에서 새로", fresh_d: "인계문으로 시작하는 새 대화: 결정({d})과 제약({c}) 그대로, 열린 항목, 파일, 마지막 대화.",
    tokens: "≈ {n} 토큰", tokens_least: "최소 {n} 토큰", no_answer: "아직 다시 읽을 것이 없어요",
    too_big: "결정과 제약만으로 ≈ {n} 토큰이 필요해 handoff_max_tokens({b})보다 많아요: 인계문에는 그것만 들어가요.",
    fresh_short: "결정과 제약의 인계문으로 시작하는 새 대화.",
    keep: "이 세션은 앞으로 이렇게",
    go: "다시 열기", save: "저장", cancel: "취소", reopening: "다시 여는 중({scope})…",
    current: "이 세션", account: "기본값",
    menu: "이어가기 방식…", menu_title: "이 세션이 다시 시작할 때",
    menu_note: "다시 시작할 때마다 써요: 메시지, 다시 열기, 맥 재시작, 이동 후.",
    follow: "기본값 따르기({scope})", saved: "이어가기 방식: {scope}", mac_later: "저장했어요. 맥이 오프라인이라 여기서 다시 열 때 알려줘요.",
    setting: "이어가기 방식", setting_note: "세션에 따로 정하지 않았을 때, 멈춘 세션이 다시 시작하는 방식이에요.",
    loading: "불러오는 중…",
  },
};

export function rt(key, vars) {
  let text = (LABELS[getLang()] || LABELS.en)[key] ?? LABELS.en[key] ?? key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

function tokensText(scope, figures) {
  const n = figures.scopes[scope].tokens;
  if (n === null || n === undefined) return rt("no_answer");
  return rt(figures.fixed === null ? "tokens_least" : "tokens", { n: count(n, true) });
}

/** The reopen card: pick a scope, see what each re-reads, reopen. */
export async function reopenDialog(session, onDone) {
  let figures;
  try {
    figures = await get(`/api/sessions/${enc(session.id)}/reopen`);
  } catch (error) { showError(error); return; }
  const fresh = figures.scopes.fresh;
  const choices = SCOPES.map((scope) => {
    const why = scope === "fresh" ? rt("fresh_d", { d: fresh.decisions, c: fresh.constraints }) : rt(scope + "_d");
    const tag = scope === figures.session_scope ? rt("current") : (!figures.session_scope && scope === (figures.account_scope || "full") ? rt("account") : null);
    return h("label.check.ro-scope", { "data-scope": scope },
      h("input", { type: "radio", name: "scope", value: scope, checked: scope === figures.scope ? true : undefined }),
      h("span.ro-body", null,
        h("span.ro-head", null, h("strong", null, rt(scope)), tag ? h("span.muted", null, " · " + tag) : null),
        h("span.ro-tokens", null, tokensText(scope, figures)),
        h("span.muted.ro-why", null, why),
        scope === "fresh" && !fresh.fits ? h("span.note.err", { role: "alert" }, rt("too_big", { n: count(fresh.needed, true), b: count(figures.budget, true) })) : null));
  });
  const keep = h("input", { type: "checkbox", name: "keep" });
  const go = h("button.primary", { type: "submit", value: "go" }, rt("go"));
  const form = h("form.ro-form", { method: "dialog" },
    h("h2", null, rt("title")),
    h("p.note", null, rt("note")),
    h("fieldset.ro-scopes", null, ...choices),
    h("label.check", null, keep, h("span", null, rt("keep"))),
    h("div.row.end", null, h("button", { type: "submit", value: "cancel", formnovalidate: true }, rt("cancel")), go));
  const dialog = modal(form);
  form.addEventListener("submit", async (event) => {
    if (event.submitter !== go) return;
    event.preventDefault();
    const scope = form.querySelector("input[name=scope]:checked").value;
    go.disabled = true;
    try {
      if (keep.checked) await api(`/api/sessions/${enc(session.id)}/resume_scope`, { method: "PUT", body: { scope } });
      await post(`/api/sessions/${enc(session.id)}/reopen`, { scope });
      dialog.close();
      toast(rt("reopening", { scope: rt(scope) }));
      if (onDone) onDone(scope);
    } catch (error) {
      go.disabled = false;
      showError(error);
    }
  });
}

function scopeRadios(name, current, extra) {
  return h("fieldset.ro-scopes", null, ...[...(extra ? [extra] : []), ...SCOPES.map((scope) =>
    h("label.check", null, h("input", { type: "radio", name, value: scope, checked: scope === current ? true : undefined }),
      h("span", null, h("strong", null, rt(scope)), h("br"), h("span.muted", null, scope === "fresh" ? rt("fresh_short") : rt(scope + "_d")))))]);
}

/** The session menu's "Resume scope…" action. */
export function scopeAction(session, onChanged) {
  return { label: rt("menu"), run: () => scopeDialog(session, onChanged) };
}

async function scopeDialog(session, onChanged) {
  let account;
  try { account = await get("/api/settings/resume_scope"); } catch (error) { showError(error); return; }
  const own = session.resume_scope || "";
  const follow = h("label.check", null, h("input", { type: "radio", name: "scope", value: "", checked: own === "" ? true : undefined }),
    h("span", null, rt("follow", { scope: rt(account.scope) })));
  const save = h("button.primary", { type: "submit", value: "save" }, rt("save"));
  const form = h("form.ro-form", { method: "dialog" },
    h("h2", null, rt("menu_title")), h("p.note", null, rt("menu_note")),
    scopeRadios("scope", own, follow),
    h("div.row.end", null, h("button", { type: "submit", value: "cancel", formnovalidate: true }, rt("cancel")), save));
  const dialog = modal(form);
  form.addEventListener("submit", async (event) => {
    if (event.submitter !== save) return;
    event.preventDefault();
    const value = form.querySelector("input[name=scope]:checked").value || null;
    try {
      const answer = await api(`/api/sessions/${enc(session.id)}/resume_scope`, { method: "PUT", body: { scope: value } });
      dialog.close();
      toast(answer.mac_told ? rt("saved", { scope: rt(answer.scope) }) : rt("mac_later"));
      if (onChanged) onChanged({ resume_scope: value });
    } catch (error) { showError(error); }
  });
}

/** Settings: the account's default resume scope. */
export function scopeSetting() {
  const pick = h("select", { id: "set-resume-scope", disabled: true }, SCOPES.map((s) => h("option", { value: s }, rt(s))));
  get("/api/settings/resume_scope").then((answer) => { pick.value = answer.scope; pick.disabled = false; }, showError);
  pick.addEventListener("change", async () => {
    try {
      const answer = await api("/api/settings/resume_scope", { method: "PUT", body: { scope: pick.value } });
      toast(rt("saved", { scope: rt(answer.scope) }));
    } catch (error) { showError(error); }
  });
  return h("section", null, h("h2", null, h("label", { for: "set-resume-scope" }, rt("setting"))),
    h("p.muted", null, rt("setting_note")), pick);
}
