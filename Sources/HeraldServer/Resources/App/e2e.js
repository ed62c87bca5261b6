// Herald web app: end-to-end encryption (PushWard's pw1 envelope, docs/e2e.md), shared by the page (app.js) and the
// service worker (sw.js, importScripts). The key stays in this browser: IndexedDB keeps the key id and the AES key as a
// non-extractable CryptoKey, never the hex, and nothing here sends it anywhere.
"use strict";

const HeraldE2E = (() => {
  const encoder = new TextEncoder();
  const ENVELOPE = /^pw1\.([0-9a-f]{8})\.([A-Za-z0-9_-]{40,})$/;
  const SETTING = "e2e_key";

  function hex(bytes) {
    return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }

  function base64URLDecode(text) {
    if (text.length % 4 === 1) return null;
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
    try {
      return Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
    } catch (error) {
      return null;
    }
  }

  // 64 hex characters (whitespace ignored, either case) → {key_id, enc}: HKDF-SHA256 with an empty salt, info
  // "pushward/e2e/v1/enc" (32 bytes, the AES-256-GCM key) and "pushward/e2e/v1/kid" (4 bytes, the key id).
  async function fromHex(text) {
    const digits = String(text || "").replace(/\s+/g, "");
    if (!/^[0-9a-fA-F]{64}$/.test(digits)) throw new Error("An end-to-end key is 64 hexadecimal characters.");
    const raw = Uint8Array.from(digits.match(/../g), (pair) => parseInt(pair, 16));
    const ikm = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey", "deriveBits"]);
    const params = (info) => ({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(info) });
    const kid = await crypto.subtle.deriveBits(params("pushward/e2e/v1/kid"), ikm, 32);
    const enc = await crypto.subtle.deriveKey(params("pushward/e2e/v1/enc"), ikm, { name: "AES-GCM", length: 256 }, false,
      ["decrypt"]);
    return { key_id: hex(kid), enc };
  }

  // A fresh key: its hex (shown once) and the record to keep.
  async function generate() {
    const hexKey = hex(crypto.getRandomValues(new Uint8Array(32)));
    return { hex: hexKey, record: await fromHex(hexKey) };
  }

  // The receiver's rules: code points, not UTF-16 units.
  function clamp(text, limit) {
    const points = Array.from(text);
    return points.length > limit ? points.slice(0, limit).join("") : text;
  }

  function safeURL(url) {
    const cleaned = url.replace(/^[\u0000-\u0020]+/, "").replace(/[\t\n\r]/g, "");
    const match = cleaned.match(/^([A-Za-z][A-Za-z0-9+.-]*):/);
    if (!match) return true;
    const scheme = match[1].toLowerCase();
    if (["javascript", "data", "file", "vbscript"].includes(scheme)) return false;
    if (scheme === "http" || scheme === "https") {
      try {
        return Boolean(new URL(cleaned).hostname);
      } catch (error) {
        return false;
      }
    }
    return true;
  }

  // Opens an envelope with `record`; resolves {title, subtitle?, body, url?} or rejects with a short reason.
  async function open(envelope, record) {
    const match = typeof envelope === "string" && envelope.length <= 3072 ? envelope.match(ENVELOPE) : null;
    const sealed = match ? base64URLDecode(match[2]) : null;
    if (!sealed || sealed.length < 30) throw new Error("not a pw1 envelope");
    if (!record) throw new Error("no key in this browser");
    if (match[1] !== record.key_id) throw new Error(`sealed for another key (${match[1]})`);
    let plaintext;
    try {
      plaintext = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: sealed.slice(0, 12), additionalData: encoder.encode(`pw1.${match[1]}`), tagLength: 128 },
        record.enc, sealed.slice(12));
    } catch (error) {
      throw new Error("authentication failed");
    }
    let message;
    try {
      message = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plaintext));
    } catch (error) {
      throw new Error("the plaintext is not JSON");
    }
    if (!message || typeof message !== "object" || Array.isArray(message)) throw new Error("the plaintext is not a JSON object");
    if (typeof message.title !== "string" || typeof message.body !== "string") throw new Error("title and body must be strings");
    if (!message.title || !message.body) throw new Error("title and body must not be empty");
    const opened = { title: clamp(message.title, 256), body: clamp(message.body, 4096) };
    if (typeof message.subtitle === "string") opened.subtitle = clamp(message.subtitle, 256);
    if (typeof message.url === "string" && safeURL(message.url)) opened.url = message.url;
    return opened;
  }

  // A notification document (a push, an inbox item) as it should show: with `encrypted`, the opened title, body,
  // subtitle and url (and `e2e_key_id`), or the placeholder with `e2e_error`, the short reason. Never stored.
  async function reveal(doc, record) {
    if (!doc || typeof doc.encrypted !== "string") return doc;
    const shown = Object.assign({}, doc);
    try {
      const message = await open(doc.encrypted, record);
      Object.assign(shown, message, { e2e_key_id: record.key_id });
      if (!message.url) delete shown.url;
    } catch (error) {
      shown.e2e_error = error.message;
    }
    return shown;
  }

  return {
    fromHex,
    generate,
    open,
    reveal,
    load: () => HeraldDB.get(SETTING),
    save: (record) => HeraldDB.set(SETTING, record),
    forget: () => HeraldDB.remove(SETTING),
  };
})();
