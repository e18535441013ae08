// Conversations begun at the desk (#/desk/<mac>[/<conversation>], from Settings › Macs): a Mac's
// Claude Code conversations, newest first per folder, the live ones marked; one read only; and
// "Continue here" as a bridge session with a resume scope — a live one only as a fork or fresh.
// GET /api/devices/{id}/conversations[/{cid}], POST …/{cid}/continue.

import { get, post } from "./api.js";
import { Conversation } from "./conversation.js";
import { ago, folderName, h, shortPath } from "./dom.js";
import { getLang, t } from "./i18n.js";
import { rt } from "./reopen.js";
import { modal, showError, toast } from "./ui.js";

const enc = encodeURIComponent;
const PAGE = 100; // events a page of a read asks for (the relay's default too)

const LABELS = {
  en: {
    title: "Conversations on {mac}", link: "Conversations on this Mac",
    note: "Claude Code conversations on this Mac, those begun in a terminal too. Read one, or continue it here.",
    none: "No Claude Code conversations on this Mac.", live: "running at the desk", bridge: "a bridge session",
    more: "{n} more not shown", read_title: "Conversation", cut: "Only its latest part was read from the Mac.",
    read_only: "Read only: begun at the desk.", empty: "Nothing to show in this conversation yet.",
    go_on: "Continue here", go_on_read: "Continue as a session…", fork: "As a fork (a new conversation with the same history; the desk's stays as it is)",
    live_why: "A claude at the desk runs this conversation now: two processes on one conversation corrupt it, so it continues as a fork, or fresh from its decisions.",
    started: "Continuing on the phone…", cancel: "Cancel", unknown_folder: "(folder not known)",
  },
  ko: {
    title: "{mac}의 대화", link: "이 맥의 대화",
    note: "이 맥의 Claude Code 대화예요. 터미널에서 시작한 것도 있어요. 읽거나 여기서 이어갈 수 있어요.",
    none: "이 맥에는 Claude Code 대화가 없어요.", live: "데스크에서 실행 중", bridge: "브리지 세션",
    more: "{n}개 더 있어요", read_title: "대화", cut: "맥에서 마지막 부분만 읽었어요.",
    read_only: "읽기 전용: 데스크에서 시작한 대화예요.", empty: "아직 보여줄 내용이 없어요.",
    go_on: "여기서 이어가기", go_on_read: "세션으로 이어가기…", fork: "포크로(같은 기록의 새 대화, 데스크의 대화는 그대로)",
    live_why: "데스크의 claude가 지금 이 대화를 실행 중이에요. 한 대화에 두 프로세스가 있으면 망가지므로 포크나 결정에서 새로 이어가요.",
    started: "폰에서 이어가는 중…", cancel: "취소", unknown_folder: "(폴더를 몰라요)",
  },
};

export function dt(key, vars) {
  let text = (LABELS[getLang()] || LABELS.en)[key] ?? LABELS.en[key] ?? key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

/** Settings › Macs: the link to a Mac's conversations. */
export function deskLink(device) {
  return h("a.button.desk-link", { href: `#/desk/${enc(device.id)}` }, dt("link"));
}

export class DeskView {
  constructor(app, deviceId, conversationId) {
    this.app = app;
    this.deviceId = deviceId;
    this.conversationId = conversationId || "";
    this.el = h("div.page.desk", null, h("p.muted", null, t("loading")));
    this.load();
  }

  mac() {
    const device = this.app.devices.get(this.deviceId);
    return device ? device.name || device.id : "Mac";
  }

  title() { return this.conversationId ? dt("read_title") : dt("title", { mac: this.mac() }); }

  destroy() {}

  async load() {
    try {
      if (this.conversationId) await this.read();
      else await this.list();
    } catch (error) {
      this.el.replaceChildren(h("p.note.err", { role: "alert" }, error.message || String(error)));
    }
  }

  async list() {
    const listing = await get(`/api/devices/${enc(this.deviceId)}/conversations`);
    const folders = listing.folders || [];
    this.el.replaceChildren(...[
      h("p.note", null, dt("note")),
      folders.length ? null : h("p.muted", null, dt("none")),
      ...folders.map((folder) => h("section.desk-folder", null,
        h("h2", { title: folder.cwd || "" }, folder.cwd ? folderName(folder.cwd) : dt("unknown_folder"),
          folder.cwd ? h("span.muted", null, " · " + shortPath(folder.cwd)) : null),
        h("ul.list", null, folder.conversations.map((c) => h("li.desk-row", { "data-id": c.id },
          h("a.row-title", { href: `#/desk/${enc(this.deviceId)}/${enc(c.id)}` }, c.title || c.id),
          h("span.row-meta", null, [
            ago(new Date(c.last_activity * 1000).toISOString(), t),
            c.git_branch && c.git_branch !== "HEAD" ? c.git_branch : "",
            c.live ? dt("live") : "", c.by_bridge ? dt("bridge") : "",
          ].filter(Boolean).join(" · ")),
          c.live ? h("span.badge.live", null, dt("live")) : null))))),
      listing.truncated ? h("p.muted", null, dt("more", { n: listing.found - folders.reduce((n, f) => n + f.conversations.length, 0) })) : null,
    ].filter(Boolean));
  }

  /** One conversation read only, drawn by the session's own renderer (conversation.js): the
   * newest page first, earlier pages on request, like a read-only session. */
  async read() {
    const page = await this.page(null);
    const go = h("button.primary", { type: "button", id: "desk-continue" }, dt("go_on_read"));
    go.addEventListener("click", () => this.continueDialog(page.live === true));
    this.earlier = h("button.earlier", { type: "button", hidden: true }, t("earlier"));
    this.earlier.addEventListener("click", () => this.older());
    this.topNote = h("p.note.center", { hidden: true });
    this.list = h("div.convo.desk-events", { role: "log", "aria-label": dt("read_title") });
    this.convo = new Conversation(this.list);
    this.convo.epoch = typeof page.epoch === "string" ? page.epoch : null;
    this.el.replaceChildren(...[
      h("div.read-only-note", null, h("span", null, dt("read_only")), go),
      page.live ? h("p.note", null, dt("live_why")) : null,
      h("section.session.desk-read", { "aria-label": dt("read_title") },
        h("div.older", null, this.earlier, this.topNote), this.list),
    ].filter(Boolean));
    this.add(page);
    window.scrollTo(0, document.documentElement.scrollHeight);
  }

  page(before) {
    const query = before ? `?before=${before}&limit=${PAGE}` : `?limit=${PAGE}`;
    return get(`/api/devices/${enc(this.deviceId)}/conversations/${enc(this.conversationId)}${query}`);
  }

  add(page) {
    this.convo.add(Array.isArray(page.events) ? page.events : []);
    this.earlier.hidden = !page.has_more;
    if (page.has_more) return;
    this.topNote.textContent = page.cut ? dt("cut") : t("start_of_history");
    this.topNote.hidden = false;
    if (!this.convo.size) { this.topNote.textContent = dt("empty"); }
  }

  async older() {
    this.earlier.disabled = true;
    try {
      const height = document.documentElement.scrollHeight;
      const top = window.scrollY;
      this.add(await this.page(this.convo.min));
      window.scrollTo(0, top + document.documentElement.scrollHeight - height);
    } catch (error) { showError(error); }
    this.earlier.disabled = false;
  }

  continueDialog(live) {
    const scopes = ["full", "summary", "fresh"].map((scope) => h("label.check", null,
      h("input", { type: "radio", name: "scope", value: scope, checked: scope === (live ? "fresh" : "full") ? true : undefined, disabled: live && scope !== "fresh" ? true : undefined }),
      h("span", null, h("strong", null, rt(scope)))));
    const fork = h("input", { type: "checkbox", name: "fork", checked: live ? true : undefined });
    const sync = () => scopes.forEach((label) => {
      const input = label.querySelector("input");
      input.disabled = live && !fork.checked && input.value !== "fresh";
      if (input.disabled && input.checked) label.parentElement.querySelector("input[value=fresh]").checked = true;
    });
    fork.addEventListener("change", sync);
    const go = h("button.primary", { type: "submit", value: "go" }, dt("go_on"));
    const form = h("form.ro-form", { method: "dialog" },
      h("h2", null, dt("go_on")),
      live ? h("p.note", null, dt("live_why")) : null,
      h("fieldset.ro-scopes", null, ...scopes),
      h("label.check", null, fork, h("span", null, dt("fork"))),
      h("div.row.end", null, h("button", { type: "submit", value: "cancel", formnovalidate: true }, dt("cancel")), go));
    const dialog = modal(form);
    form.addEventListener("submit", async (event) => {
      if (event.submitter !== go) return;
      event.preventDefault();
      go.disabled = true;
      const scope = form.querySelector("input[name=scope]:checked").value;
      try {
        const answer = await post(`/api/devices/${enc(this.deviceId)}/conversations/${enc(this.conversationId)}/continue`, { scope, fork: fork.checked });
        dialog.close();
        toast(dt("started"));
        location.hash = "#/s/" + enc(answer.id);
      } catch (error) {
        go.disabled = false;
        showError(error);
      }
    });
  }
}
