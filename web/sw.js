// The service worker: keeps the app shell (never the API) so the page opens without the relay,
// and shows Web Push notifications; a tap opens that session.
// The relay writes its files' version over VERSION (relay/static.py): the shell is cached under
// versioned addresses, a new version is a new cache, and the old one is dropped on activation.

const VERSION = "__CB_VERSION__";
const CACHE = "cb-shell-" + VERSION;
// Entry points keep their address (asked for without the login: the shell is no one's page);
// everything else is asked for as the page asks: ?v=VERSION. The relay writes the files
// index.html loads over the mark below (its script, its icons: relay/static.py); pairing needs
// the relay, so the pairing page is not kept.
const ENTRY = ["/", "/manifest.webmanifest"];
const FILES = ["__CB_SHELL__"];
const SHELL = [
  ...ENTRY.map((url) => new Request(url, { credentials: "omit" })),
  ...FILES.map((f) => f + "?v=" + VERSION),
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

// Network first (a fresh page when the relay is there), the cached shell when it is not.
self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/api/")) return;
  // A versioned file never changes: the cached copy is the file.
  const fromCache = url.searchParams.get("v") === VERSION ? caches.match(request) : Promise.resolve(null);
  event.respondWith(fromCache.then((hit) => hit || fetch(request).then((response) => {
    // A page made for one login (index.html with its account's rows) is never kept.
    const personal = /private|no-store/.test(response.headers.get("Cache-Control") || "");
    if (response.ok && response.type === "basic" && !personal) {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(request, copy));
    }
    return response;
  }).catch(async () => {
    const hit = await caches.match(request, { ignoreSearch: true });
    if (hit) return hit;
    if (request.mode === "navigate") return caches.match("/");
    return Response.error();
  })));
});

self.addEventListener("push", (event) => {
  let data = {};
  try { data = event.data ? event.data.json() : {}; } catch (_) { data = { title: "claude-bridge", body: event.data.text() }; }
  const title = data.title || "claude-bridge";
  event.waitUntil(self.registration.showNotification(title, {
    body: data.body || "",
    tag: data.session_id || "claude-bridge",
    renotify: Boolean(data.session_id),
    icon: "/icons/icon-192.png",
    badge: "/icons/icon-192.png",
    data: { session_id: data.session_id || "" },
  }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const id = event.notification.data && event.notification.data.session_id;
  const target = id ? "/#/s/" + encodeURIComponent(id) : "/";
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((clients) => {
    for (const client of clients) {
      if (new URL(client.url).origin === self.location.origin && "focus" in client) {
        return client.navigate(target).then((c) => (c || client).focus());
      }
    }
    return self.clients.openWindow(target);
  }));
});
