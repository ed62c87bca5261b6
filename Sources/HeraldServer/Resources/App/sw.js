// Herald web app: the service worker (scope /app/). Shows each Web Push, keeps it in the inbox, performs or opens its
// actions, keeps the app's shell for offline use, and renews the push subscription when the browser rotates it.
// docs/webapp.md describes what each part does and why.
"use strict";

importScripts("/app/db.js", "/app/e2e.js");

const SHELL_CACHE = "herald-shell-v3";
const SHELL = [
  "/app/", "/app/app.js", "/app/db.js", "/app/e2e.js", "/app/topics.js", "/app/app.css", "/app/manifest.webmanifest",
  "/app/icon192.png", "/app/icon512.png", "/app/badge96.png",
];
const ICON = "/app/icon192.png";
const BADGE = "/app/badge96.png";

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL_CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name !== SHELL_CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// The shell from the network when there is one (so that a new version shows at once), else from the cache. The API
// is never cached: the inbox's own copy is in IndexedDB.
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin || !url.pathname.startsWith("/app")) return;
  event.respondWith((async () => {
    try {
      const response = await fetch(event.request);
      if (response.ok && SHELL.includes(url.pathname)) {
        const cache = await caches.open(SHELL_CACHE);
        await cache.put(url.pathname, response.clone());
      }
      return response;
    } catch (error) {
      const cached = await caches.match(event.request.mode === "navigate" ? "/app/" : url.pathname);
      if (cached) return cached;
      throw error;
    }
  })());
});

// The push's document (WebPushRenderer): {id, title, body, image, url, tag, level, silent, actions, data}. Anything
// that is not JSON is shown as text, so that nothing a push service delivers is dropped.
function documentOf(event) {
  if (!event.data) return { title: "Herald", body: "" };
  try {
    const parsed = event.data.json();
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
  } catch (error) {
    // Not JSON: shown as its text below.
  }
  return { title: "Herald", body: event.data.text() };
}

// An action as Herald's dialects describe it: POST /notifications (id, title, url, method, headers, body,
// foreground, …) or Home Assistant's (action, title, uri).
function actionsOf(doc) {
  if (!Array.isArray(doc.actions)) return [];
  return doc.actions
    .filter((action) => action && typeof action === "object")
    .map((action) => Object.assign({}, action, { id: String(action.id ?? action.action ?? ""), url: action.url ?? action.uri }))
    .filter((action) => action.id && typeof action.title === "string");
}

async function tellClients(message) {
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    client.postMessage(message);
  }
}

// A push with a pw1 envelope (`encrypted`, docs/e2e.md) shows what it holds, opened with the key this browser keeps;
// one that does not open shows its placeholder with the short reason. The inbox keeps the push as it came (the
// envelope, not what it holds) and opens it again when it lists it.
async function showPush(received) {
  const doc = await HeraldE2E.reveal(received, await HeraldE2E.load().catch(() => undefined));
  const actions = actionsOf(doc);
  const id = typeof doc.id === "string" && doc.id ? doc.id : `local-${Date.now()}-${Math.random().toString(16).slice(2)}`;
  let body = typeof doc.body === "string" ? doc.body : "";
  if (typeof doc.subtitle === "string" && doc.subtitle) body = `${doc.subtitle}\n${body}`;
  if (doc.e2e_error) body = `${body}\n🔒 Encrypted: ${doc.e2e_error}.`;
  const options = {
    body,
    icon: ICON,
    badge: BADGE,
    timestamp: Date.now(),
    // Every action: how many the platform shows is the browser's business (Notification.maxActions).
    actions: actions.map((action) => ({ action: action.id, title: action.title })),
    data: { id, url: doc.url, actions, data: doc.data },
  };
  if (typeof doc.image === "string" && doc.image) options.image = doc.image;
  if (doc.silent === true) options.silent = true;
  if (typeof doc.tag === "string" && doc.tag) {
    options.tag = doc.tag;  // the collapse id: it replaces the shown notification with the same tag
    options.renotify = options.silent !== true;  // …and alerts again, unless it is silent
  }
  if (doc.level === "critical") options.requireInteraction = true;
  const title = typeof doc.title === "string" && doc.title ? doc.title : "Herald";
  const item = Object.assign({}, received, {
    id, title: received.title || "Herald", actions: actionsOf(received), received_at: Date.now(), read: false, source: "push",
  });
  await Promise.all([
    self.registration.showNotification(title, options),
    HeraldDB.put([item]).then(() => tellClients({ type: "inbox", id })),
  ]);
}

self.addEventListener("push", (event) => {
  event.waitUntil(showPush(documentOf(event)));
});

async function markRead(id) {
  if (id) await HeraldDB.update(id, (item) => { item.read = true; });
}

// Opens `url` (same origin: focuses a window of the app that is open already).
async function openOrFocus(url) {
  const target = new URL(url || "/app/", self.location.origin);
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    if (new URL(client.url).href === target.href && "focus" in client) return client.focus();
  }
  if (target.origin === self.location.origin && target.pathname.startsWith("/app")) {
    for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
      if ("navigate" in client) {
        await client.navigate(target.href).catch(() => undefined);
        return client.focus();
      }
    }
  }
  return self.clients.openWindow(target.href);
}

// Performs a silent action as seed 001 describes it: its method, headers and body, from this worker (no window
// opens). The browser sends a cross-origin request only as CORS allows (docs/webapp.md). Resolves with the outcome.
async function perform(action) {
  const method = String(action.method || "GET").toUpperCase();
  const init = { method, headers: action.headers || {}, credentials: "omit", redirect: "follow", cache: "no-store" };
  if (typeof action.body === "string" && method !== "GET" && method !== "HEAD") init.body = action.body;
  try {
    const response = await fetch(action.url, init);
    return { action: action.id, title: action.title, ok: response.ok, status: response.status, at: Date.now() };
  } catch (error) {
    const reason = String(error && error.message ? error.message : error);
    return { action: action.id, title: action.title, ok: false, error: reason, at: Date.now() };
  }
}

// A button without a URL that does not open the app is an answer: Herald records the tap (docs/api.md, "Answers"),
// with the device's own credentials. Best effort: nothing waits for it.
async function reportAnswer(id, actionID) {
  const device = await HeraldDB.get("device");
  if (!id || !device || !device.user_id || !device.device_secret) return;
  await fetch(`/api/push/notifications/${encodeURIComponent(id)}/answer`, {
    method: "POST", cache: "no-store", body: JSON.stringify({ action_id: actionID }),
    headers: { Authorization: "Basic " + btoa(`${device.user_id}:${device.device_secret}`), "Content-Type": "application/json" },
  }).catch(() => undefined);
}

// What a tap on a notification (no action) or one of its buttons does.
async function handle(id, actionID, data) {
  await markRead(id);
  if (!actionID) return openOrFocus(data.url || "/app/");
  const action = (data.actions || []).find((candidate) => candidate.id === actionID);
  // A button without a URL only dismisses the notification, and is reported as the answer unless it opens the app.
  if (action && !action.url && action.foreground !== true) return reportAnswer(id, actionID);
  if (!action || !action.url) return undefined;
  const isHTTP = /^https?:/i.test(action.url);
  if (action.foreground === true || !action.method || !isHTTP) return openOrFocus(action.url);
  const outcome = await perform(action);
  await HeraldDB.update(id, (item) => { item.performed = outcome; });
  await tellClients({ type: "performed", id, outcome });
  if (!outcome.ok) {
    const reason = outcome.status ? `it answered ${outcome.status}` : "the request did not go through";
    await self.registration.showNotification(`“${action.title}” failed`, {
      body: `${action.url}: ${reason}.`, icon: ICON, badge: BADGE, tag: `herald-action-${id}`, data: { id, url: "/app/", actions: [] },
    });
  }
  return outcome;
}

self.addEventListener("notificationclick", (event) => {
  const notification = event.notification;
  const data = notification.data || {};
  notification.close();
  event.waitUntil(handle(data.id, event.action, data).then(() => tellClients({ type: "inbox", id: data.id })));
});

// The page asks the worker to run an action from the inbox, so that it runs exactly as from the notification.
self.addEventListener("message", (event) => {
  const message = event.data || {};
  if (message.type !== "perform" || typeof message.id !== "string") return;
  event.waitUntil((async () => {
    const item = (await HeraldDB.list()).find((candidate) => candidate.id === message.id);
    if (!item) return;
    await handle(item.id, message.action, { url: item.url, actions: item.actions || [] });
    await tellClients({ type: "inbox", id: item.id });
  })());
});

// The browser rotated the subscription: subscribe again with the same key and tell Herald (a re-registration keeps
// the USER_ID, so senders need not change anything).
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil((async () => {
    const device = await HeraldDB.get("device");
    if (!device || !device.public_key) return;
    const key = Uint8Array.from(atob(device.public_key.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(device.public_key.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
    const subscription = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    const response = await fetch("/api/push/register", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "webpush", subscription: subscription.toJSON(), user_id: device.user_id, device_secret: device.device_secret }),
    });
    if (response.ok) await HeraldDB.set("device", Object.assign({}, device, { endpoint: subscription.endpoint }));
  })());
});
