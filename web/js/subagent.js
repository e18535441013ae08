// One subagent's full history (GET /api/sessions/{id}/subagents/{agent}/events), paged like a
// session's: the newest page first, earlier pages on request.

import { get } from "./api.js";
import { Conversation } from "./conversation.js";
import { h, usd } from "./dom.js";
import { t } from "./i18n.js";
import { showError } from "./ui.js";

const PAGE = 100;

export class SubagentView {
  constructor(app, sessionId, agentId) {
    this.app = app;
    this.base = `/api/sessions/${encodeURIComponent(sessionId)}/subagents`;
    this.agentId = agentId;
    this.destroyed = false;
    this.head = h("div.sub-head");
    this.earlier = h("button.earlier", { type: "button", hidden: true }, t("earlier"));
    this.earlier.addEventListener("click", () => this.older());
    this.topNote = h("p.note.center", { hidden: true });
    this.list = h("div.convo", { role: "log", "aria-label": t("subagent") });
    this.convo = new Conversation(this.list);
    this.el = h("section.session.subagent", { "aria-label": t("subagent") }, this.head,
      h("div.older", null, this.earlier, this.topNote), this.list);
    this.start();
  }

  events(query) {
    return get(`${this.base}/${encodeURIComponent(this.agentId)}/events?${query}&limit=${PAGE}`);
  }

  async start() {
    try {
      const { subagents } = await get(this.base);
      this.info = subagents.find((a) => a.agent_id === this.agentId) || { agent_id: this.agentId };
      this.drawHead();
      if (!this.info.last_seq) { this.note(t("sa_none")); return; }
      const page = await this.events(`before=${this.info.last_seq + 1}`);
      if (this.destroyed) return;
      this.add(page);
      window.scrollTo(0, document.documentElement.scrollHeight);
    } catch (error) {
      if (!this.destroyed) this.note(error.message);
    }
  }

  drawHead() {
    const a = this.info;
    this.app.setTitle(t("subagent") + (a.description ? ": " + a.description : ""));
    this.head.replaceChildren(
      h("p.sub-what", null, [a.agent_type, a.description].filter(Boolean).join(" · ") || a.agent_id),
      h("p.badges", null, a.status ? h("span.badge", { class: "ss-" + a.status }, t("sa_" + a.status)) : null,
        a.cost ? h("span.badge", null, usd(a.cost.usd)) : null),
      a.prompt ? h("details.sub-task", null, h("summary", null, t("sa_task")), h("p.plain", null, a.prompt)) : null);
  }

  add(page) {
    this.convo.epoch = page.epoch;
    this.convo.add(page.events);
    this.earlier.hidden = !page.has_more;
    if (!page.has_more) this.note(t("start_of_history"));
  }

  async older() {
    this.earlier.disabled = true;
    try {
      const height = document.documentElement.scrollHeight;
      const top = window.scrollY;
      this.add(await this.events(`before=${this.convo.min}`));
      window.scrollTo(0, top + document.documentElement.scrollHeight - height);
    } catch (error) { showError(error); }
    this.earlier.disabled = false;
  }

  note(text) {
    this.topNote.textContent = text;
    this.topNote.hidden = false;
  }

  destroy() {
    this.destroyed = true;
  }
}
