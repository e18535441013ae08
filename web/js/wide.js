// Wider screens (≥ 1,024 px): the session list stays beside the open session, its files and
// its subagents. Below that width the list is not drawn at all (the phone layout is unchanged).

import { h } from "./dom.js";
import { t } from "./i18n.js";
import { renderOverview } from "./overview.js";

const WIDE = matchMedia("(min-width: 1024px)");
const BESIDE = new Set(["session", "subagent", "files"]);
let side = null;

/** Draw (or remove) the list beside the screen ``app`` shows; called as screens and lists change. */
export function placeSide(app) {
  const on = WIDE.matches && BESIDE.has(app.screen) && app.paired !== false;
  document.body.classList.toggle("wide", on);
  if (!on) { if (side) { side.remove(); side = null; } return; }
  if (!side) {
    side = h("aside.side", { id: "side", "aria-label": t("wd_sessions") });
    app.main.before(side);
  }
  const keep = side.scrollTop;
  const open = location.hash.split("/")[2] ? decodeURIComponent(location.hash.split("/")[2]) : "";
  const list = renderOverview(app);
  for (const a of list.querySelectorAll("a.session-row")) {
    if (a.dataset.id === open) a.setAttribute("aria-current", "page");
  }
  side.replaceChildren(h("a.button.side-new", { href: "#/new" }, "+ " + t("new_session")), list);
  side.scrollTop = keep;
}

export function watchWidth(app) {
  WIDE.addEventListener("change", () => placeSide(app));
}
