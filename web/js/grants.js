// The grants of a session's running claude: each card answered with "always allow this kind of
// tool", listed in the permissions panel with a way to revoke it (GET / DELETE …/grants). Unlike
// the policy's rules they end with the claude process (a reopen, a revive, a move).

import { del, get } from "./api.js";
import { ago, h } from "./dom.js";
import { t } from "./i18n.js";
import { showError, toast } from "./ui.js";

const enc = encodeURIComponent;

/** What a grant allows, in words: "Execute tools", or the tool's name. */
export function grantWhat(grant) {
  return grant.kind === "category" ? t("gr_cat", { cat: t("cat_" + grant.name) }) : grant.name;
}

/** The panel's section: the grants as the Mac holds them now, each with "Revoke". */
export function grantsSection(id, readOnly) {
  const list = h("ul.list.grants", { "aria-live": "polite" }, h("li.muted", null, t("loading")));
  const draw = (grants) => {
    if (!grants.length) { list.replaceChildren(h("li.muted.gr-none", null, t("gr_none"))); return; }
    list.replaceChildren(...grants.map((g) => {
      const what = grantWhat(g);
      const revoke = h("button.small", { type: "button", disabled: readOnly, "aria-label": t("gr_revoke_label", { what }) }, t("gr_revoke"));
      revoke.addEventListener("click", async () => {
        revoke.disabled = true;
        try {
          const answer = await del(`/api/sessions/${enc(id)}/grants/${enc(g.id)}`);
          toast(t("gr_revoked"));
          draw(answer.grants || []);
        } catch (error) {
          if (error.code === "unknown_grant") load(); else { revoke.disabled = false; showError(error); }
        }
      });
      return h("li.grant", { dataset: { grant: g.id } },
        h("span.row-title", null, what),
        h("span.row-meta", null, t("gr_from", { tool: g.tool, ago: ago(g.granted, t) })), revoke);
    }));
  };
  const load = async () => {
    try {
      const body = await get(`/api/sessions/${enc(id)}/grants`);
      if (!body.device_online) list.replaceChildren(h("li.muted", null, t("gr_offline")));
      else draw(body.grants || []);
    } catch (error) { list.replaceChildren(h("li.error", null, error.message)); }
  };
  load();
  return h("fieldset.pol.grants", null, h("legend", null, t("gr_title")), list, h("p.note", null, t("gr_note")));
}
