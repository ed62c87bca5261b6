// Herald web app: the page. Subscribes this browser (permission → pushManager.subscribe with Herald's VAPID key →
// POST /api/push/register), keeps the USER_ID and device secret in IndexedDB (db.js), shows them with a curl line, and
// lists the inbox: what the service worker received, and what Herald's API says this device was sent.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  // `publicKey`: the promise of Herald's VAPID key, fetched once the page knows it may subscribe.
  const state = { device: null, registration: null, publicKey: null };

  function notice(text, isError = false) {
    const element = $("notice");
    element.textContent = text || "";
    element.classList.toggle("error", Boolean(isError));
    element.hidden = !text;
  }

  function show(section) {
    for (const id of ["unsupported", "ios-steps", "subscribe", "device"]) $(id).hidden = id !== section;
    $("inbox-section").hidden = section !== "device";
    $("e2e").hidden = section !== "device";
    $("topics-card").hidden = section !== "device";
  }

  // iPhone and iPad (iPadOS says it is a Mac, but has touch), and whether the page runs from the home screen.
  const platform = {
    isIOS: /iPad|iPhone|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1),
    isStandalone: window.matchMedia("(display-mode: standalone)").matches || navigator.standalone === true,
    iosVersion() {
      const match = navigator.userAgent.match(/OS (\d+)_(\d+)/);
      return match ? [Number(match[1]), Number(match[2])] : null;
    },
  };

  function base64URLToBytes(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
    return Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
  }

  function basic(device) {
    return "Basic " + btoa(`${device.user_id}:${device.device_secret}`);
  }

  // The `error` sentence of a Herald refusal, or the status.
  async function reason(response) {
    try {
      const body = await response.json();
      if (body && typeof body.error === "string") return body.error;
    } catch (error) {
      // Not JSON.
    }
    return `HTTP ${response.status}`;
  }

  // MARK: Subscribing

  async function vapidKey() {
    const response = await fetch("/api/push/webpush/key", { cache: "no-store" });
    if (response.status === 404 || response.status === 503) {
      throw new Error("Web Push is not configured on this Herald server (its operator sets HERALD_VAPID_SUBJECT; see docs/webapp.md).");
    }
    if (!response.ok) throw new Error(`Herald did not give its Web Push key: ${await reason(response)}`);
    const body = await response.json();
    if (!body || typeof body.public_key !== "string") throw new Error("Herald's Web Push key answer has no public_key.");
    return body.public_key;
  }

  // Subscribes (or renews the subscription) and registers it with Herald: a new device, or, with `state.device`, the
  // same USER_ID with the new subscription.
  async function subscribe() {
    notice("Subscribing…");
    // The permission first, while the tap still counts as one (Safari asks only from a user gesture); the key was
    // fetched when the page opened.
    const permission = await Notification.requestPermission();
    if (permission !== "granted") {
      throw new Error(permission === "denied"
        ? "Notifications are blocked for this site: allow them in the browser's site settings, then try again."
        : "Notifications were not allowed; try again and choose Allow.");
    }
    const publicKey = await (state.publicKey || vapidKey());
    const registration = await navigator.serviceWorker.ready;
    let subscription = await registration.pushManager.getSubscription();
    const sameKey = subscription && subscription.options && subscription.options.applicationServerKey
      && btoa(String.fromCharCode(...new Uint8Array(subscription.options.applicationServerKey)))
        === btoa(String.fromCharCode(...base64URLToBytes(publicKey)));
    if (subscription && !sameKey) {
      await subscription.unsubscribe();
      subscription = null;
    }
    if (!subscription) {
      subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64URLToBytes(publicKey) });
    }
    const body = { platform: "webpush", subscription: subscription.toJSON() };
    const headers = { "Content-Type": "application/json" };
    if (state.device) {
      body.user_id = state.device.user_id;
      body.device_secret = state.device.device_secret;
    } else if ($("registration-token").value) {
      headers["X-Herald-Registration-Token"] = $("registration-token").value;
    }
    const response = await fetch("/api/push/register", { method: "POST", headers, body: JSON.stringify(body) });
    if (response.status === 401 || response.status === 403) {
      if (!state.device) $("token-box").open = true;
    }
    if (!response.ok) throw new Error(`Herald refused the registration: ${await reason(response)}`);
    const answer = await response.json();
    state.device = {
      user_id: answer.user_id, device_secret: answer.device_secret, endpoint: subscription.endpoint, public_key: publicKey,
      registered_at: new Date().toISOString(),
    };
    await HeraldDB.set("device", state.device);
    showDevice();
    notice(response.status === 201 ? "Subscribed. Send yourself a test." : "Registered again with the same USER_ID.");
    await backfill();
  }

  async function unsubscribe() {
    if (!state.device || !window.confirm("Unsubscribe this browser? Its USER_ID stops working and its inbox is cleared.")) return;
    const response = await fetch("/api/push/register", { method: "DELETE", headers: { Authorization: basic(state.device) } });
    if (!response.ok && response.status !== 404) throw new Error(`Herald did not remove the device: ${await reason(response)}`);
    const subscription = await (await navigator.serviceWorker.ready).pushManager.getSubscription();
    if (subscription) await subscription.unsubscribe();
    await HeraldDB.remove("device");
    await HeraldDB.clearInbox();
    state.device = null;
    show("subscribe");
    notice("Unsubscribed.");
  }

  async function sendTest() {
    const response = await fetch("/api/push/notify", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ user_id: state.device.user_id, title: "Hello from Herald", body: "This browser receives notifications." }),
    });
    if (!response.ok) throw new Error(`Herald did not send the test: ${await reason(response)}`);
    const answer = await response.json();
    notice(`Test sent (${answer.status}).`);
    await backfill();
  }

  // MARK: The device

  function curlLine(userID) {
    const body = JSON.stringify({ user_id: userID, title: "Hello", body: "From Herald" });
    return `curl -X POST ${location.origin}/api/push/notify -H 'Content-Type: application/json' -d '${body}'`;
  }

  function showDevice() {
    show("device");
    $("user-id").textContent = state.device.user_id;
    $("curl").textContent = curlLine(state.device.user_id);
    HeraldTopics.start(state.device, notice).catch((error) => notice(`Topics: ${error.message}`, true));
  }

  async function copy(button) {
    const text = $(button.dataset.copy).textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch (error) {
      const range = document.createRange();  // no clipboard access: select it for the user to copy
      range.selectNodeContents($(button.dataset.copy));
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      return;
    }
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  }

  // MARK: The inbox

  // What Herald says this device was sent (GET /api/push/notifications), merged into the inbox.
  async function backfill() {
    if (!state.device) return;
    let response;
    try {
      response = await fetch("/api/push/notifications?limit=50", { headers: { Authorization: basic(state.device) }, cache: "no-store" });
    } catch (error) {
      await renderInbox();  // offline: what is stored here
      return;
    }
    if (response.status === 403 || response.status === 404) {
      notice("Herald no longer knows this browser's USER_ID: unsubscribe, then enable notifications again.", true);
    } else if (response.ok) {
      const body = await response.json();
      const items = (body.notifications || []).map((item) => Object.assign({}, item, { source: "server" }));
      await HeraldDB.put(items);
    }
    await renderInbox();
  }

  function timeText(milliseconds) {
    if (!milliseconds) return "";
    const date = new Date(milliseconds);
    const today = new Date();
    const sameDay = date.toDateString() === today.toDateString();
    return sameDay
      ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
      : date.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function isWebURL(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url);
  }

  function outcomeText(outcome) {
    const name = `“${outcome.title || outcome.action}”`;
    if (outcome.ok) return `${name} done (${outcome.status}).`;
    return outcome.status ? `${name} failed: ${outcome.status}.` : `${name} failed: ${outcome.error || "no answer"}.`;
  }

  // Tells Herald what happened to notification `id` (`answer` or `events`, docs/api.md); best effort.
  function tellHerald(id, path, body) {
    if (!state.device || !id) return;
    fetch(`/api/push/notifications/${encodeURIComponent(id)}/${path}`, {
      method: "POST", cache: "no-store", body: JSON.stringify(body),
      headers: { Authorization: basic(state.device), "Content-Type": "application/json" },
    }).catch(() => undefined);
  }

  // Herald hears of it for the notifications it listed (source "server"): it refuses ids it never sent.
  async function markRead(id) {
    const item = await HeraldDB.update(id, (item) => { item.read = true; });
    if (item && item.source === "server") tellHerald(id, "events", { event: "read" });
  }

  // An action from the inbox: a foreground one (or one without a method) opens here; a silent one runs in the service
  // worker, exactly as from the notification.
  async function runAction(item, action) {
    await markRead(item.id);
    const url = action.url ?? action.uri;
    // A button without a URL that does not open the app is an answer (docs/api.md, "Answers").
    const isAnswer = !url && action.foreground !== true && action.id !== undefined && item.source === "server";
    if (isAnswer) tellHerald(item.id, "answer", { action_id: String(action.id) });
    if (!url) return renderInbox();
    if (action.foreground === true || !action.method || !isWebURL(url)) {
      window.open(url, "_blank", "noopener");
      return renderInbox();
    }
    const registration = await navigator.serviceWorker.ready;
    registration.active.postMessage({ type: "perform", id: item.id, action: String(action.id ?? action.action) });
    return undefined;
  }

  function renderItem(item) {
    const node = element("li", item.read ? "item" : "item unread");
    node.dataset.id = item.id;
    const meta = element("div", "meta");
    meta.append(element("span", "time", timeText(item.time)));
    if (item.status && item.status !== "delivered") meta.append(element("span", `status ${item.status}`, item.status));
    node.append(meta, element("div", "title", item.title || "(no title)"));
    if (item.subtitle) node.append(element("div", "subtitle", item.subtitle));
    if (item.body) node.append(element("p", "body", item.body));
    if (item.e2e_error) node.append(element("p", "e2e bad", `🔒 Encrypted: ${item.e2e_error}.`));
    if (item.e2e_key_id) meta.append(element("span", "e2e", `🔒 ${item.e2e_key_id}`));
    if (isWebURL(item.image)) {
      const image = element("img");
      image.src = item.image;
      image.alt = "";
      image.loading = "lazy";
      image.referrerPolicy = "no-referrer";
      node.append(image);
    }
    const buttons = element("div", "buttons");
    if (isWebURL(item.url)) {
      const open = element("a", "open", "Open");
      open.href = item.url;
      open.target = "_blank";
      open.rel = "noopener noreferrer";
      buttons.append(open);
    }
    for (const action of Array.isArray(item.actions) ? item.actions : []) {
      if (!action || typeof action.title !== "string") continue;
      const button = element("button", action.destructive ? "danger" : "", action.title);
      button.type = "button";
      button.dataset.action = String(action.id ?? action.action ?? "");
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        runAction(item, action).catch((error) => notice(error.message, true));
      });
      buttons.append(button);
    }
    if (buttons.childElementCount) node.append(buttons);
    if (item.performed) node.append(element("div", item.performed.ok ? "outcome ok" : "outcome bad", outcomeText(item.performed)));
    node.addEventListener("click", () => { markRead(item.id).then(renderInbox); });
    return node;
  }

  async function renderInbox() {
    // Each envelope opened again for the list (docs/e2e.md): IndexedDB keeps the envelope, not what it holds.
    const key = await HeraldE2E.load().catch(() => undefined);
    const items = await Promise.all((await HeraldDB.list()).map((item) => HeraldE2E.reveal(item, key)));
    const list = $("inbox");
    list.replaceChildren(...items.map(renderItem));
    $("empty").hidden = items.length > 0;
    const unread = items.filter((item) => !item.read).length;
    $("unread").textContent = unread ? String(unread) : "";
    document.title = unread ? `(${unread}) Herald` : "Herald";
    if ("setAppBadge" in navigator) {
      (unread ? navigator.setAppBadge(unread) : navigator.clearAppBadge()).catch(() => undefined);
    }
  }

  async function markAllRead() {
    for (const item of await HeraldDB.list()) {
      if (!item.read) await markRead(item.id);
    }
    await renderInbox();
  }

  // MARK: End-to-end key

  async function showKey(record) {
    $("e2e-status").textContent = record
      ? `This browser opens notifications sealed for key ${record.key_id}.`
      : "No key in this browser: encrypted notifications show their placeholder.";
    $("e2e-status").dataset.keyId = record ? record.key_id : "";
    $("e2e-forget").hidden = !record;
  }

  async function useKey(record, message) {
    await HeraldE2E.save(record);
    await showKey(record);
    notice(message);
    await renderInbox();
  }

  async function generateKey() {
    const current = await HeraldE2E.load();
    if (current && !window.confirm(`Replace key ${current.key_id}? Notifications sealed for it will no longer open here.`)) return;
    const made = await HeraldE2E.generate();
    $("e2e-hex").textContent = made.hex;  // shown once: the browser keeps only the derived, non-extractable key
    $("e2e-new").hidden = false;
    $("e2e-new-hint").hidden = false;
    await useKey(made.record, `New key ${made.record.key_id}. Copy it now; it is not shown again.`);
  }

  async function pasteKey() {
    const record = await HeraldE2E.fromHex($("e2e-paste").value);
    $("e2e-paste").value = "";
    $("e2e-new").hidden = true;
    $("e2e-new-hint").hidden = true;
    await useKey(record, `Key ${record.key_id} kept in this browser.`);
  }

  async function forgetKey() {
    if (!window.confirm("Forget the key? Encrypted notifications will show their placeholder.")) return;
    await HeraldE2E.forget();
    $("e2e-new").hidden = true;
    $("e2e-hex").textContent = "";
    await showKey(undefined);
    notice("Key forgotten.");
    await renderInbox();
  }

  // MARK: Start

  function guarded(work) {
    return (event) => {
      const button = event && event.currentTarget;
      if (button) button.disabled = true;
      Promise.resolve()
        .then(work)
        .catch((error) => notice(error && error.message ? error.message : String(error), true))
        .finally(() => { if (button) button.disabled = false; });
    };
  }

  async function start() {
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();  // Enter in the token field subscribes; the form itself is never sent
      $("enable").click();
    });
    $("enable").addEventListener("click", guarded(subscribe));
    $("reregister").addEventListener("click", guarded(subscribe));
    $("unsubscribe").addEventListener("click", guarded(unsubscribe));
    $("test").addEventListener("click", guarded(sendTest));
    $("refresh").addEventListener("click", guarded(backfill));
    $("mark-all").addEventListener("click", guarded(markAllRead));
    for (const button of document.querySelectorAll("button.copy")) button.addEventListener("click", () => copy(button));
    $("e2e-generate").addEventListener("click", guarded(generateKey));
    $("e2e-use").addEventListener("click", guarded(pasteKey));
    $("e2e-forget").addEventListener("click", guarded(forgetKey));
    $("e2e-form").addEventListener("submit", (event) => {
      event.preventDefault();  // Enter in the paste field uses the key; nothing is sent
      $("e2e-use").click();
    });

    if (!("serviceWorker" in navigator) || !("indexedDB" in window)) {
      show("unsupported");
      return;
    }
    state.registration = await navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" });
    navigator.serviceWorker.addEventListener("message", () => { renderInbox(); });
    document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") backfill(); });

    await showKey(await HeraldE2E.load().catch(() => undefined));
    state.device = (await HeraldDB.get("device")) || null;
    if (state.device) {
      showDevice();
      await renderInbox();
      await backfill();
      return;
    }
    if (platform.isIOS && !platform.isStandalone) {
      show("ios-steps");
      const version = platform.iosVersion();
      $("ios-old").hidden = !(version && (version[0] < 16 || (version[0] === 16 && version[1] < 4)));
      return;
    }
    if (!("PushManager" in window) || !("Notification" in window)) {
      show("unsupported");
      return;
    }
    show("subscribe");
    state.publicKey = vapidKey();
    state.publicKey.catch((error) => {
      state.publicKey = null;  // asked again on the tap, which then says why
      notice(error.message, true);
    });
  }

  start().catch((error) => notice(`The app did not start: ${error && error.message ? error.message : error}`, true));
})();
