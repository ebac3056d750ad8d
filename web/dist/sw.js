// svc-code service worker (generated into dist/sw.js by the build, which fills
// in the version and the asset list). It caches the app shell only: the page,
// its hashed assets, the login page's stylesheet, the manifest and the icons.
// API answers and sockets are never cached: they always come from the server.
// Each build has its own cache, so an update never mixes old and new code.
const VERSION = "4af6cb98c1b6";
const CACHE = "svc-code-shell-" + VERSION;
const ASSETS = ["/assets/Palette-CMttl-2M.js","/assets/addon-webgl-C3a5wC6k.js","/assets/c-DaO8xguW.js","/assets/changes-Djsdrnkz.js","/assets/costs-Djsdrnkz.js","/assets/css-C8fQr_0Q.js","/assets/diff-woXpYk--.js","/assets/dist-BnNHgah5.js","/assets/dist-C30F4iNc.js","/assets/dockerfile-IyjqRm3v.js","/assets/extras-C6QJ6LtO.js","/assets/files-Djsdrnkz.js","/assets/git-Djsdrnkz.js","/assets/github-dark-C-LZuMrd.js","/assets/github-light-EUqPIrTm.js","/assets/go-rLFTqkRN.js","/assets/html-wSbaAAK3.js","/assets/index-CnsGhirP.js","/assets/index-ta_gXUTX.css","/assets/java-BXcb2rRD.js","/assets/javascript-BgS3c2Ky.js","/assets/json-qhed-kSA.js","/assets/jsx-Bz0zcwM4.js","/assets/libesm-BerQVe3w.js","/assets/makefile-Dixweg8N.js","/assets/markdown-BYOwaDjH.js","/assets/python-gzcpVVnB.js","/assets/rust-DpiIf5JO.js","/assets/settings-Djsdrnkz.js","/assets/shellscript-CLZ0U2zV.js","/assets/sql-CEbI0hMM.js","/assets/sql-Djsdrnkz.js","/assets/terminal-CDrqBffG.css","/assets/terminal-CWSpc4Nx.js","/assets/toml-CcmNWLt0.js","/assets/tsx-udAQXfEw.js","/assets/typescript-bsJCZSQ-.js","/assets/yaml-rwi0_p6S.js"];
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
  return url.pathname === "/" || url.pathname === "/new" || /^\/s\/[A-Z2-7]+\/?$/.test(url.pathname);
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.startsWith("/api/") || url.pathname === "/chat" || url.pathname === "/login") return;
  if (ASSETS.includes(url.pathname)) {
    // Hashed names never change: cache first.
    event.respondWith(caches.match(req).then((hit) => hit || fetch(req)));
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
