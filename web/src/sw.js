// svc-code service worker (generated into dist/sw.js by the build, which fills
// in the version and the asset list). It caches the app shell only: the page,
// the hashed assets of its first load (installed ahead), the other hashed
// assets (panes, editor languages) once fetched, the login page's
// stylesheet, the manifest and the icons.
// API answers and sockets are never cached: they always come from the server.
// Each build has its own cache, so an update never mixes old and new code.
// It also shows Web Push notifications (permission requests with Allow and
// Deny, turn ends, tests) and answers from them: see the end of this file.

/*__PUSH_NOTIFY__*/

const VERSION = "__VERSION__";
const CACHE = "svc-code-shell-" + VERSION;
const ASSETS = __ASSETS__;
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

// Web Push (docs/api.md "Web Push"). notificationOf, pendingOf, safePath and
// answerFailure come from src/push/notify.ts (put above by the build).

async function setBadge(n) {
  if (n === null || !("setAppBadge" in self.navigator)) return;
  try {
    if (n > 0) await self.navigator.setAppBadge(n);
    else await self.navigator.clearAppBadge();
  } catch {
    /* not installed as an app: no badge */
  }
}

async function closeTagged(tag) {
  const shown = await self.registration.getNotifications({ tag });
  for (const n of shown) n.close();
}

/**
 * Shows the notification of one payload (or closes the stale one it names),
 * then sets the badge: the notification never waits on the badge.
 */
async function onPush(payload) {
  if (payload && payload.kind === "resolved") {
    await closeTagged(String(payload.request_id));
  } else {
    const n = notificationOf(payload);
    if (n) await self.registration.showNotification(n.title, n.options);
  }
  await setBadge(pendingOf(payload));
}

/** Focuses a tab of the app (the one on that page if any) and sends it there, or opens one. */
async function openPath(path) {
  const target = new URL(safePath(path), self.location.origin);
  const wins = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const mine = wins.filter((c) => new URL(c.url).origin === self.location.origin);
  const tab = mine.find((c) => new URL(c.url).pathname === target.pathname) || mine.find((c) => c.focused) || mine[0];
  if (tab) {
    await tab.focus().catch(() => undefined);
    // The page routes it itself (no reload): see main.tsx.
    tab.postMessage({ type: "svc-open", url: target.pathname + target.search });
    return "focused";
  }
  await self.clients.openWindow(target.href);
  return "opened";
}

/** The pending count for the badge after an answer (the service worker has no socket). */
async function refreshBadge() {
  try {
    const r = await fetch("/api/push/pending", { credentials: "same-origin" });
    if (r.ok) await setBadge(pendingOf(await r.json()));
  } catch {
    /* next push sets it */
  }
}

/**
 * A click on a notification or one of its actions: Allow / Deny answer
 * through POST /api/push/answer without opening the app (a short
 * notification says so when the answer did not count); anything else opens
 * the payload's page.
 */
async function onClick(notification, action) {
  const p = notification.data || {};
  notification.close();
  if ((action === "allow" || action === "deny") && p.kind === "permission" && p.token && !p.input_truncated) {
    let status = 0;
    let body = null;
    try {
      const r = await fetch("/api/push/answer", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token: p.token, decision: action }),
      });
      status = r.status;
      body = await r.json().catch(() => null);
    } catch {
      status = 0;
    }
    const failed = answerFailure(status, body, action);
    if (failed) {
      await self.registration.showNotification(failed.title, {
        body: failed.body,
        tag: p.request_id + ":result",
        icon: "/instance-icons/icon-192.png",
        data: { kind: "result", url: safePath(p.url) },
      });
    }
    await refreshBadge();
    return { status, body };
  }
  await openPath(p.url || "/");
  return { opened: true };
}

// Pushes are handled one after the other, in the order they came: a
// "resolved" never looks for its notification while that notification is
// still being shown (it would miss it, and leave it up).
let pushChain = Promise.resolve();

self.addEventListener("push", (event) => {
  let payload = null;
  try {
    payload = event.data ? event.data.json() : null;
  } catch {
    payload = null;
  }
  const rec = { payload, done: false };
  const got = self.__svcPush.received;
  got.push(rec);
  if (got.length > 50) got.shift();
  const handled = pushChain.then(() => onPush(payload));
  pushChain = handled.catch(() => undefined);
  event.waitUntil(
    handled.then(
      () => {
        rec.done = true;
      },
      (err) => {
        rec.done = true;
        self.__svcPush.errors.push(String((err && err.message) || err));
        throw err;
      },
    ),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.waitUntil(onClick(event.notification, event.action));
});

// The browser replaced (or dropped) this device's subscription: subscribe
// again with the server's key and register the new one (the old endpoint's
// next push gets 404/410 and the server forgets it).
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(
    (async () => {
      let sub = event.newSubscription;
      if (!sub) {
        const r = await fetch("/api/push/key", { credentials: "same-origin" });
        if (!r.ok) return;
        const { public_key } = await r.json();
        const b64 = public_key.replace(/-/g, "+").replace(/_/g, "/");
        const key = Uint8Array.from(atob(b64 + "===".slice((b64.length + 3) % 4)), (c) => c.charCodeAt(0));
        sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      }
      const json = sub.toJSON();
      await fetch("/api/push/subscriptions", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: "Renewed subscription", subscription: { endpoint: json.endpoint, keys: json.keys } }),
      });
    })().catch(() => undefined),
  );
});

// For the browser tests (web/e2e/tests/push.test.mjs): the handlers the
// events above call, so a test can run the click path on a shown
// notification; the last push events of this worker (payload, and done once
// handled), and why a push showed nothing.
self.__svcPush = { onPush, onClick, received: [], errors: [] };
