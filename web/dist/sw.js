// svc-code service worker (generated into dist/sw.js by the build, which fills
// in the version and the asset list). It caches the app shell only: the page,
// the hashed assets of its first load (installed ahead), the other hashed
// assets (panes, editor languages) once fetched, the login page's
// stylesheet, the manifest and the icons.
// API answers and sockets are never cached: they always come from the server.
// Each build has its own cache, so an update never mixes old and new code.
// It also shows Web Push notifications (permission requests with Allow and
// Deny, turn ends, tests) and answers from them: see the end of this file.

const ICON = "/instance-icons/icon-192.png";
/** Notification bodies longer than this are cut by the browsers anyway; the card has the rest. */
const BODY_MAX = 3e3;
/** The session's name as notifications show it. */
function titleOf(t) {
	return typeof t === "string" && t.trim() !== "" ? t.trim() : "Untitled session";
}
/** A same-origin path to open: the payload's url when it is a path, else the fallback. */
function safePath(url, fallback = "/") {
	if (typeof url !== "string" || !url.startsWith("/") || url.startsWith("//") || url.includes("\\")) return fallback;
	return url;
}
/**
* A tool input as text: the command for Bash, a string as is, an object as
* one `key: value` line per field (strings unquoted, other values as JSON).
*/
function inputText(tool, input, truncated = false) {
	let s;
	if (truncated) {
		s = typeof input === "string" ? input : JSON.stringify(input) ?? "";
		if (!s.endsWith("…")) s += "…";
	} else if (tool === "Bash" && input && typeof input === "object" && typeof input.command === "string") {
		s = input.command;
	} else if (typeof input === "string") {
		s = input;
	} else if (input && typeof input === "object" && !Array.isArray(input)) {
		s = Object.entries(input).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("\n");
	} else {
		s = JSON.stringify(input) ?? "";
	}
	return s.length > BODY_MAX ? s.slice(0, BODY_MAX - 1) + "…" : s;
}
/** "42 s", "3 min 5 s", "1 h 2 min". */
function durationText(ms) {
	const s = Math.max(0, Math.round(ms / 1e3));
	if (s < 60) return `${s} s`;
	const m = Math.floor(s / 60);
	if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
	return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${Math.floor(m / 60)} h`;
}
/**
* The notification of a payload, or null when there is none to show (a
* `resolved` payload only closes the stale one). Anything unreadable gets a
* plain "open the app" notification: a push must show something.
*/
function notificationOf(p) {
	const base = {
		icon: ICON,
		badge: ICON,
		requireInteraction: false,
		actions: []
	};
	// Read field by field: a payload is checked here, not trusted.
	const x = p && typeof p === "object" ? p : {};
	switch (x.kind) {
		case "permission": {
			const tool = typeof x.tool_name === "string" && x.tool_name ? x.tool_name : "A tool";
			const truncated = !!x.input_truncated;
			return {
				title: `${tool} in ${titleOf(x.session_title)}`,
				options: {
					...base,
					body: inputText(tool, x.input, truncated) + (truncated ? "\n(too long for a notification: open it to see it all)" : ""),
					tag: String(x.request_id ?? "permission"),
					requireInteraction: true,
					// Never approve what could not be shown: a cut input offers Open only.
					actions: truncated || !x.token ? [{
						action: "open",
						title: "Open"
					}] : [{
						action: "allow",
						title: "Allow"
					}, {
						action: "deny",
						title: "Deny"
					}],
					data: {
						...x,
						url: safePath(x.url, x.session_id ? `/s/${x.session_id}` : "/")
					}
				}
			};
		}
		case "turn_ended": {
			const st = turnVerb(x.status);
			const parts = [typeof x.duration_ms === "number" ? `after ${durationText(x.duration_ms)}` : "", typeof x.cost_usd === "number" ? `$${x.cost_usd.toFixed(2)}` : ""].filter(Boolean);
			return {
				title: `Turn ${st} in ${titleOf(x.session_title)}`,
				options: {
					...base,
					body: `The turn ${st}${parts.length ? " " + parts.join(" · ") : ""}.`,
					tag: `turn:${x.session_id ?? ""}`,
					data: {
						...x,
						url: safePath(x.url, x.session_id ? `/s/${x.session_id}` : "/")
					}
				}
			};
		}
		case "resolved": return null;
		case "test": return {
			title: "svc-code",
			options: {
				...base,
				body: "Test notification: this device gets svc-code's notifications.",
				tag: "svc-test",
				data: {
					kind: "test",
					url: "/settings?section=notifications"
				}
			}
		};
	}
	return {
		title: "svc-code",
		options: {
			...base,
			body: "Something needs your attention.",
			tag: "svc-other",
			data: {
				kind: "other",
				url: "/"
			}
		}
	};
}
/** How a turn ended, as a verb: "finished", "failed", "interrupted", "ended (…)". */
function turnVerb(status) {
	switch (status) {
		case undefined:
		case "":
		case "success": return "finished";
		case "error": return "failed";
		case "interrupted": return "was interrupted";
		case "process_exited": return "ended (the agent's process exited)";
	}
	return `ended (${String(status)})`;
}
/** The count for the app badge a payload carries, or null. */
function pendingOf(p) {
	const n = p && typeof p === "object" ? p.pending : undefined;
	return typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.floor(n) : null;
}
/** The short notification shown when an answer sent from a notification did not count, or null when it did. */
function answerFailure(status, body, decision) {
	if (status >= 200 && status < 300) return null;
	const verb = decision === "allow" ? "Allow" : "Deny";
	if (status === 0) return {
		title: `${verb} not sent`,
		body: "The server could not be reached. Open svc-code to answer."
	};
	if (status === 410) return {
		title: `${verb} not used`,
		body: "This request was already answered or is no longer pending."
	};
	if (status === 403) return {
		title: `${verb} refused`,
		body: "This notification's answer is no longer valid (expired, used, or answered elsewhere). Open svc-code to see the request."
	};
	return {
		title: `${verb} not used`,
		body: `The server answered ${status}${body?.message ? ": " + body.message : ""}.`
	};
}


const VERSION = "d2812ec524a7";
const CACHE = "svc-code-shell-" + VERSION;
const ASSETS = ["/assets/index-Bbvw3hVU.js","/assets/index-CM_ZBBpe.css"];
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
