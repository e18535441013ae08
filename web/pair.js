// Pairing: trade the one-time code for the login cookie (HttpOnly, set by the relay), then open the
// control page. The code comes from the link's #fragment, which browsers never send to a server.

import { post } from "./js/api.js";
import { t } from "./js/i18n.js";
import { sentence } from "./js/ui.js";

const $ = (id) => document.getElementById(id);
const status = $("status");

$("pair-title").textContent = t("pair_title");
status.textContent = t("pair_intro");
$("code-label").textContent = t("pair_code");
$("name-label").textContent = t("pair_name");
$("pair-button").textContent = t("pair_button");
document.title = t("pair_title") + " · " + t("app");

function guessName() {
  const ua = navigator.userAgent;
  if (/iPhone/.test(ua)) return "iPhone";
  if (/iPad/.test(ua)) return "iPad";
  if (/Android/.test(ua)) return "Android";
  if (/Macintosh/.test(ua)) return "Mac browser";
  return "browser";
}
$("name").placeholder = guessName();

async function pair(code, name) {
  status.textContent = t("pairing");
  status.className = "";
  $("pair-button").disabled = true;
  try {
    await post("/api/pair", { code, name: name || guessName() });
    history.replaceState(null, "", "/pair.html"); // the code is spent; keep it out of history
    status.textContent = t("paired_ok");
    location.replace("/");
  } catch (error) {
    status.textContent = error.code === "unreachable" ? t("err_unreachable") : sentence(error.message);
    status.className = "error";
    $("pair-button").disabled = false;
  }
}

$("pair-form").addEventListener("submit", (event) => {
  event.preventDefault();
  pair($("code").value.trim(), $("name").value.trim());
});

const fromLink = decodeURIComponent(location.hash.replace(/^#/, "")).trim();
if (fromLink) {
  $("code").value = fromLink;
  pair(fromLink, "");
}
