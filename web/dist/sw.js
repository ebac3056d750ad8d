// svc-code service worker (generated into dist/sw.js by the build, which fills
// in the version and the asset list). It caches the app shell only: the page,
// the hashed assets of its first load (installed ahead), the other hashed
// assets (panes, editor languages) once fetched, the login page's
// stylesheet, the manifest and the icons.
// API answers and sockets are never cached: they always come from the server.
// Each build has its own cache, so an update never mixes old and new code.
const VERSION = "a8d42e690e99";
const CACHE = "svc-code-shell-" + VERSION;
const ASSETS = ["/assets/index-AXfMqHwp.js","/assets/index-BR3g4vdt.css"];
const SHELL = ["/", "/static/css/login.css", "/manifest.json", "/instance-icons/default.svg", "/instance-icons/icon-192.png", "/instance-icons/icon-512.png"];

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      // The page itself is behind the login: cache what can be fetched now.
      .then((c) => Promise.all([...ASSETS, ...SHELL].map((u) => c.add(u).catch(() => undefined))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("svc-code-shell-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

function isShellPage(url) {
  return /^\/(new|costs|sql|settings|s\/[A-Z2-7]+(\/(terminal|files|changes|git))?\/?)?$/.test(url.pathname);
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.startsWith("/api/") || url.pathname === "/chat" || url.pathname === "/login") return;
  if (url.pathname.startsWith("/assets/")) {
    // Hashed names never change: cache first; a chunk not installed ahead
    // is kept once fetched.
    event.respondWith(
      caches.match(req).then(
        (hit) =>
          hit ||
          fetch(req).then((resp) => {
            if (resp.ok) {
              const copy = resp.clone();
              caches.open(CACHE).then((c) => c.put(req, copy));
            }
            return resp;
          }),
      ),
    );
    return;
  }
  if (req.mode === "navigate" && isShellPage(url)) {
    // The page: the network first (it may redirect to /login), the cached
    // shell when offline.
    event.respondWith(
      fetch(req)
        .then((resp) => {
          if (resp.ok && !resp.redirected) {
            const copy = resp.clone();
            caches.open(CACHE).then((c) => c.put("/", copy));
          }
          return resp;
        })
        .catch(() => caches.match("/")),
    );
    return;
  }
  if (SHELL.includes(url.pathname)) {
    event.respondWith(
      fetch(req)
        .then((resp) => {
          if (resp.ok) {
            const copy = resp.clone();
            caches.open(CACHE).then((c) => c.put(req, copy));
          }
          return resp;
        })
        .catch(() => caches.match(req)),
    );
  }
});
