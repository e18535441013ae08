// The band under a Mac's name when its Claude Code is not one this bridge was tested with. The
// relay says where the version stands (device.claude_standing, from wire/claude_versions.py).
import { h } from "./dom.js";
import { t } from "./i18n.js";

/** Put (or take away) the band right after ``anchor`` for ``device``. */
export function placeBand(anchor, device) {
  const next = anchor.nextElementSibling;
  if (next && next.classList.contains("vband")) next.remove();
  const standing = device && device.claude_standing;
  if (!standing || standing === "tested") return;
  const version = (device.info && device.info.claude_version) || "?";
  const band = h("p.band.vband", { role: "status", dataset: { kind: "version", standing } }, t("cv_" + standing, { v: version }));
  band.style.position = "static";
  anchor.after(band);
}
