"use strict";
// Trades the one-time code (from the link's #fragment, never sent in a URL to the server)
// for the login cookie, then opens the control page.
(function () {
  const form = document.getElementById("pair-form");
  const codeInput = document.getElementById("code");
  const nameInput = document.getElementById("name");
  const status = document.getElementById("status");

  async function pair(code, name) {
    status.textContent = "Pairing…";
    try {
      const response = await fetch("/api/pair", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: code, name: name || null }),
        credentials: "same-origin",
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) {
        const message = body.error ? body.error.message : "pairing failed (" + response.status + ")";
        status.textContent = message;
        return;
      }
      history.replaceState(null, "", "/pair.html");
      status.textContent = "Paired. Opening the control page…";
      location.assign("/");
    } catch (error) {
      status.textContent = "The relay cannot be reached: " + error.message;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    pair(codeInput.value.trim(), nameInput.value.trim());
  });

  const fromLink = decodeURIComponent(location.hash.replace(/^#/, "")).trim();
  if (fromLink) {
    codeInput.value = fromLink;
    pair(fromLink, "");
  }
})();
