// Herald web app: the browser-side store, shared by the page (app.js) and the service worker (sw.js, importScripts).
// IndexedDB "herald": `settings` (the device's USER_ID and secret, the VAPID key it subscribed with) and `inbox` (the
// notifications this browser received or read back from Herald, by notification id).
"use strict";

const HeraldDB = (() => {
  const NAME = "herald";
  const VERSION = 1;
  let opening = null;

  function open() {
    if (!opening) {
      opening = new Promise((resolve, reject) => {
        const request = indexedDB.open(NAME, VERSION);
        request.onupgradeneeded = () => {
          const db = request.result;
          if (!db.objectStoreNames.contains("settings")) db.createObjectStore("settings");
          if (!db.objectStoreNames.contains("inbox")) db.createObjectStore("inbox", { keyPath: "id" });
        };
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => {
          opening = null;
          reject(request.error);
        };
      });
    }
    return opening;
  }

  // Runs `work(store)` in one transaction and resolves with the value of the request it returns (if any).
  async function transaction(storeName, mode, work) {
    const db = await open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction(storeName, mode);
      const request = work(tx.objectStore(storeName));
      tx.oncomplete = () => resolve(request ? request.result : undefined);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }

  // The time a notification was accepted, in milliseconds: `created_at` when Herald said it, else the time in its
  // UUIDv7 id (the first 48 bits), else when it arrived here.
  function timeOf(item) {
    if (item.created_at) {
      const parsed = Date.parse(item.created_at);
      if (!Number.isNaN(parsed)) return parsed;
    }
    if (typeof item.id === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-7/i.test(item.id)) {
      return parseInt(item.id.replace(/-/g, "").slice(0, 12), 16);
    }
    return item.received_at || 0;
  }

  // What is kept of a notification: its rendered document (title, body, image, url, tag, level, actions, data) and
  // the inbox's own fields; `read` and `performed` survive a later copy of the same notification.
  function merged(existing, incoming) {
    const item = Object.assign({}, existing || {}, incoming);
    item.read = Boolean(existing && existing.read) || Boolean(incoming.read);
    if (existing && existing.performed && !incoming.performed) item.performed = existing.performed;
    if (existing && existing.received_at) item.received_at = existing.received_at;
    item.time = timeOf(item);
    return item;
  }

  return {
    get: (key) => transaction("settings", "readonly", (store) => store.get(key)),
    set: (key, value) => transaction("settings", "readwrite", (store) => store.put(value, key)),
    remove: (key) => transaction("settings", "readwrite", (store) => store.delete(key)),

    // Adds or updates notifications (each needs its `id`); resolves when stored.
    async put(items) {
      const db = await open();
      return new Promise((resolve, reject) => {
        const tx = db.transaction("inbox", "readwrite");
        const store = tx.objectStore("inbox");
        for (const incoming of items) {
          if (!incoming || typeof incoming.id !== "string") continue;
          const read = store.get(incoming.id);
          read.onsuccess = () => store.put(merged(read.result, incoming));
        }
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
      });
    },

    // Changes one notification with `change(item)`; resolves with the changed item, or undefined when it is not there.
    async update(id, change) {
      const db = await open();
      return new Promise((resolve, reject) => {
        const tx = db.transaction("inbox", "readwrite");
        const store = tx.objectStore("inbox");
        let changed;
        const read = store.get(id);
        read.onsuccess = () => {
          if (!read.result) return;
          changed = read.result;
          change(changed);
          store.put(changed);
        };
        tx.oncomplete = () => resolve(changed);
        tx.onerror = () => reject(tx.error);
      });
    },

    // Every notification, newest first.
    async list() {
      const items = await transaction("inbox", "readonly", (store) => store.getAll());
      return (items || []).sort((a, b) => (b.time - a.time) || (a.id < b.id ? 1 : -1));
    },

    clearInbox: () => transaction("inbox", "readwrite", (store) => store.clear()),
    timeOf,
  };
})();
