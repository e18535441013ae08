// The overview: "needs you" on top, then every Mac (online or when it was last seen) with its
// sessions grouped by group, in list order.

import { ago, costText, folderName, h, shortPath } from "./dom.js";
import { stateLabel, t } from "./i18n.js";
import { placeBand } from "./versionband.js";
import { offlineLabel, stillNeedsYou } from "./offline.js";
import { targetName } from "./move.js";
import { contactLost, unknownLabel } from "./connection.js";
import { placeTrouble } from "./standing.js";
import { dayText } from "./dates.js";
import { failureLine } from "./failure.js";

const byOrder = (a, b) => a.position - b.position || String(a.created_at).localeCompare(String(b.created_at));

export function sessionState(session, devices) {
  if (contactLost()) {
    // The relay is not heard: the last known state, greyed, "unknown since" (never "Mac offline").
    return { state: session.state, mark: "unknown", needsYou: stillNeedsYou(session), stale: true };
  }
  const device = devices.get(session.device_id);
  const offline = device ? !device.online : session.mark === "offline";
  return {
    state: offline ? "unknown" : session.state,
    mark: offline ? "offline" : session.mark,
    needsYou: offline ? stillNeedsYou(session) : Boolean(session.needs_you),
  };
}

/** One session in a list; ``found`` (a search result) adds its Mac, date and files; ``withMac``
 * (in "needs you", the only place a waiting session is listed) adds its Mac. */
export function row(session, devices, found = false, withMac = false) {
  const { state, mark, needsYou, stale } = sessionState(session, devices);
  const label = state === "unknown" ? offlineLabel(devices.get(session.device_id)) : state === session.state ? stateLabel(session) : t("st_" + state);
  const title = session.title || folderName(session.cwd) || session.id.slice(0, 8);
  const device = devices.get(session.device_id);
  const where = found ? [session.mac || (device && device.name) || session.device_id, shortPath(session.cwd), dayText(session.updated_at)]
    : [withMac ? (device && device.name) || session.device_id : null, shortPath(session.cwd), ago(session.updated_at, t)].filter(Boolean);
  if (session.branch) where.push("⎇ " + session.branch);
  if (session.parent_id) where.push("↳ " + t("fork"));
  const archived = session.stage === "archived";
  const moving = session.move && session.move.state === "moving" ? session.move : null;
  return h("li", null, h("a.session-row", { href: "#/s/" + encodeURIComponent(session.id), class: needsYou ? "needs-row" : "", dataset: { id: session.id, state } },
    h("span.badges", null,
      h("span.badge", { class: "st-" + state + (session.activity && !stale ? " act-" + session.activity : "") + (stale ? " stale" : "") }, label),
      mark ? h("span.badge.mark", { class: "mk-" + mark }, stale ? unknownLabel() : t("mk_" + mark)) : null,
      archived ? h("span.badge.mark.archived", null, t("archived")) : null,
      session.pinned ? h("span.pin", { title: t("pinned"), "aria-label": t("pinned"), role: "img" }, "📌") : null,
      session.locked ? h("span.lock", { title: t("locked"), "aria-label": t("locked") }, "🔒") : null),
    h("span.row-title", null, title),
    failureLine(session),
    session.summary ? h("span.row-sum", null, session.summary) : null,
    moving ? h("span.row-meta.moving", null, t("mv_moving", { mac: targetName(moving, devices) })
      + (moving.total ? ` · ${Math.floor((100 * Math.min(moving.bytes, moving.total)) / moving.total)} %` : "")) : null,
    found && session.files && session.files.length ? h("span.row-meta.files", null, session.files.slice(0, 3).map(folderName).join(", ")) : null,
    h("span.row-meta", null, where.join(" · ") + " · ", h("span.cost", { title: session.cost ? t("src_" + session.cost.source.replace("-", "_")) : null }, costText(session.cost, t)))));
}

export function renderOverview(app) {
  const devices = app.devices;
  const sessions = [...app.sessions.values()].sort(byOrder);
  const waiting = sessions.filter((s) => sessionState(s, devices).needsYou);
  const root = h("div.overview");

  const count = waiting.length;
  const top = h("section.needs", { class: count ? "on" : "", "aria-label": t("st_waiting") },
    h("h2.needs-count", { id: "needs-count", dataset: { count } },
      count ? t(count === 1 ? "needs_you_n" : "needs_you_n_pl", { n: count }) : t("nothing_needs_you")));
  if (count) top.append(h("ul.rows", null, waiting.map((s) => row(s, devices, false, true))));
  root.append(top);

  const macs = [...devices.values()].sort((a, b) => (b.online - a.online) || String(a.name).localeCompare(String(b.name)));
  const unknown = [...new Set(sessions.map((s) => s.device_id))].filter((id) => !devices.has(id));
  for (const id of unknown) macs.push({ id, name: id, online: false, last_seen: null });
  if (!macs.length) root.append(h("p.empty", null, t("no_macs")));
  for (const device of macs) {
    const all = sessions.filter((s) => s.device_id === device.id);
    const mine = all.filter((s) => !waiting.includes(s)); // a waiting one is in "needs you" already
    const groups = new Map();
    for (const s of mine) {
      const key = s.group || "";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(s);
    }
    const section = h("section.mac", { "aria-label": device.name || device.id, dataset: { device: device.id } },
      h("header.mac-head", null,
        h("h2", null, device.name || device.id),
        contactLost() ? h("span.conn.unknown", null, unknownLabel(true))
          : h("span.conn", { class: device.online ? "on" : "off" },
            device.online ? t("online") : t("offline_seen", { ago: ago(device.last_seen, t) }))));
    placeBand(section.firstElementChild, device);
    placeTrouble(section.firstElementChild, device);
    if (!all.length) section.append(h("p.muted.pad", null, t("no_sessions")));
    const ordered = [...groups.entries()].sort(([a], [b]) => (b === "") - (a === "") || a.localeCompare(b));
    for (const [group, list] of ordered) {
      if (group) section.append(h("h3.group", null, group));
      section.append(h("ul.rows", null, list.map((s) => row(s, devices))));
    }
    root.append(section);
  }
  return root;
}
