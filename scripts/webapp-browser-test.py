#!/usr/bin/env python3
"""Drives Herald's web app (/app) in a real headless Chromium, end to end, and takes the screenshots the README shows.

Starts the herald binary that is there (default .build/debug/herald, or $HERALD) with a throwaway in-memory store, Web
Push configured (HERALD_VAPID_SUBJECT; HERALD_WEBPUSH_ALLOWED_HOSTS=127.0.0.1 for the test's subscription) and a free
loopback port, then, in Chromium:

1. the page loads without console errors; under an iPhone's user agent it shows the Add to Home Screen steps instead
   of the subscribe button; the manifest parses and names the app, its icons, start_url and display;
2. the service worker registers and activates;
3. subscribing: notification permission is granted through the DevTools protocol (Browser.grantPermissions) and
   `PushManager.subscribe` alone is replaced in the page by one that returns a made-up subscription (a real one needs
   the browser vendor's push service, out of reach here) whose endpoint is on 127.0.0.1. Everything else is real: the
   app fetches Herald's VAPID key and subscribes with it, registers with POST /api/push/register, keeps the USER_ID and
   device secret in IndexedDB and shows them with a curl line;
4. a notification sent through Herald's API (POST /notifications with actions) lands in the inbox through the status
   API's backfill (GET /api/push/notifications);
5. a push delivered to the service worker through the DevTools protocol (ServiceWorker.deliverPushMessage, with the
   registration id from ServiceWorker.workerRegistrationUpdated) shows a notification with the right title, body, tag
   and actions (read back with registration.getNotifications()) and lands in the inbox, unread;
6. the inbox's silent action is performed by the service worker with its method, headers and body (a loopback HTTP
   server records it), and reading an item marks it read;
7. offline: with the server stopped, the app's shell still loads from the service worker's cache with its inbox;
8. end-to-end encryption (docs/e2e.md), before step 7: the app generates a key (64 hex characters and its id; IndexedDB
   keeps a non-extractable key, not the hex), a push sealed for it (`herald e2e seal`) shows its real title in the
   notification and the inbox, and one sealed for another key shows the placeholder with the reason.

Screenshots go to $SCREENSHOTS (default docs/screenshots) as webapp-*.png, at a desktop and a phone size. Fails (never
skips) when the binary, Chromium, chromedriver, openssl or selenium is missing.

    swift build && python3 -m venv /tmp/herald-selenium && /tmp/herald-selenium/bin/pip install selenium
    /tmp/herald-selenium/bin/python scripts/webapp-browser-test.py
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERALD = os.environ.get("HERALD", os.path.join(ROOT, ".build/debug/herald"))
SCREENSHOTS = os.environ.get("SCREENSHOTS", os.path.join(ROOT, "docs/screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", shutil.which("chromedriver") or "/usr/bin/chromedriver")
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
DESKTOP = (1280, 900)
PHONE = (390, 844)
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/17.5 Mobile/15E148 Safari/604.1")


def fail(message):
    print(f"webapp-browser-test: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def wait_for(condition, message, seconds=15):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception as error:  # noqa: BLE001 — the page was being replaced
            last = error
        time.sleep(0.1)
    raise AssertionError(message + (f" (last error: {last!r})" if last else ""))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webapp_browser_support import ActionTarget, DevTools, free_port, subscription_keys, uuid7  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    fail("selenium is not installed (pip install selenium).")
for path, what in [(HERALD, "the herald binary (swift build)"), (CHROMIUM, "Chromium (apt-get install chromium)"),
                   (CHROMEDRIVER, "chromedriver (apt-get install chromium-driver)"), (OPENSSL, "openssl")]:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        fail(f"{what} is missing: {path}")


class Herald:
    """A `herald serve` child process on a free port with Web Push configured, and its API."""

    def __init__(self, work):
        self.log_path = os.path.join(work, "server.log")
        self.log = open(self.log_path, "w")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        environment.update(HERALD_HOST="127.0.0.1", HERALD_PORT="0", HERALD_DATABASE_URL="memory:",
                           HERALD_DELIVERY_WAIT_MS="500", HERALD_LOG_LEVEL="info",
                           HERALD_VAPID_SUBJECT="mailto:browser-test@example.com",
                           HERALD_WEBPUSH_ALLOWED_HOSTS="127.0.0.1")
        self.process = subprocess.Popen([HERALD, "serve"], stdout=self.log, stderr=subprocess.STDOUT, env=environment)
        port = None
        for _ in range(300):
            with open(self.log_path) as log:
                found = re.search(r"Server started and listening on 127\.0\.0\.1:(\d+)", log.read())
            if found:
                port = int(found.group(1))
                break
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        if port is None:
            self.stop()
            fail("herald serve did not start:\n" + open(self.log_path).read())
        self.base = f"http://127.0.0.1:{port}"

    def request(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


# In the page only (never in the service worker): PushManager.subscribe returns this made-up subscription and records
# the applicationServerKey it was given; getSubscription returns it afterwards.
SUBSCRIBE_STUB = """
(() => {
  const made = %s;
  let current = null;
  PushManager.prototype.subscribe = async function (options) {
    const key = new Uint8Array(options.applicationServerKey);
    window.__heraldSubscribedWithKey = Array.from(key);
    current = {
      endpoint: made.endpoint, expirationTime: null, options: { userVisibleOnly: true, applicationServerKey: key.buffer },
      toJSON() { return { endpoint: made.endpoint, expirationTime: null, keys: made.keys }; },
      async unsubscribe() { current = null; return true; },
    };
    return current;
  };
  PushManager.prototype.getSubscription = async function () { return current; };
})();
"""


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                     "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
                     f"--window-size={DESKTOP[0]},{DESKTOP[1]}"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    return driver


def console_errors(driver):
    """The browser console's errors since the last call (warnings and the app's own log lines are not errors)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def screenshot(driver, name, size):
    width, height = size
    driver.set_window_size(width, height)
    content = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, max(height, min(content + 140, 4000)))
    path = os.path.join(SCREENSHOTS, name)
    check(driver.save_screenshot(path), f"could not save {path}")
    driver.set_window_size(*DESKTOP)
    print(f"  screenshot {os.path.relpath(path, ROOT)}")


def visible(driver, element_id):
    return driver.find_element(By.ID, element_id).is_displayed()


def page_async(driver, body):
    """Runs `body` (an async function body, `return`ing JSON-able data) in the page and returns its value."""
    script = "const done = arguments[arguments.length - 1];(async () => {" + body + "})().then(done, (e) => done({error: String(e)}));"
    return driver.execute_async_script(script)


def inbox_titles(driver):
    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, "#inbox .item .title")]


def run(herald, driver, target, work):
    base = herald.base
    driver.set_script_timeout(20)

    print("manifest")
    with urllib.request.urlopen(base + "/app/manifest.webmanifest", timeout=10) as response:
        check(response.headers["Content-Type"] == "application/manifest+json", "manifest content type")
        manifest = json.load(response)
    check(manifest["name"] == "Herald" and manifest["start_url"] == "/app/" and manifest["display"] == "standalone",
          f"manifest: {manifest}")
    check({"192x192", "512x512"} <= {icon["sizes"] for icon in manifest["icons"]}, "manifest icons")
    check(any(icon.get("purpose") == "maskable" for icon in manifest["icons"]), "no maskable icon")

    print("iPhone outside the home screen: the Add to Home Screen steps")
    desktop_agent = driver.execute_script("return navigator.userAgent")  # on the first, blank page
    driver.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": IPHONE, "platform": "iPhone"})
    driver.get(base + "/app/")
    wait_for(lambda: visible(driver, "ios-steps"), "no Add to Home Screen steps on an iPhone")
    check(not visible(driver, "subscribe"), "the subscribe button shows on an iPhone outside the home screen")
    check("Add to Home Screen" in driver.find_element(By.ID, "ios-steps").text, "the steps do not name Add to Home Screen")
    screenshot(driver, "webapp-ios-phone.png", PHONE)
    driver.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": desktop_agent})

    print("the page, its service worker, no console errors")
    endpoint = f"https://127.0.0.1:{free_port()}/push/{b64url(os.urandom(24))}"
    made = {"endpoint": endpoint, "keys": subscription_keys(work, OPENSSL)}
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SUBSCRIBE_STUB % json.dumps(made)})
    driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": ["notifications"], "origin": base})
    driver.get(base + "/app/")
    wait_for(lambda: visible(driver, "subscribe"), "the subscribe card does not show")
    worker = page_async(driver, """
        const registration = await navigator.serviceWorker.ready;
        const worker = registration.active;
        if (worker.state !== 'activated') await new Promise((r) => worker.addEventListener('statechange', () => worker.state === 'activated' && r()));
        return {scope: registration.scope, state: worker.state, script: worker.scriptURL};""")
    check(worker.get("scope") == base + "/app/" and worker.get("state") == "activated", f"service worker: {worker}")
    check(worker["script"] == base + "/app/sw.js", f"service worker script: {worker}")
    check(driver.execute_script("return Notification.permission") == "granted", "notification permission not granted")
    screenshot(driver, "webapp-subscribe-phone.png", PHONE)

    print("subscribe and register")
    driver.find_element(By.ID, "enable").click()
    wait_for(lambda: visible(driver, "device"), "subscribing did not show the device: "
             + driver.find_element(By.ID, "notice").text, seconds=20)
    user_id = driver.find_element(By.ID, "user-id").text
    check(re.fullmatch(r"[0-9a-f]{64}", user_id), f"USER_ID shown: {user_id!r}")
    curl = driver.find_element(By.ID, "curl").text
    check(f"{base}/api/push/notify" in curl and user_id in curl, f"curl line: {curl!r}")
    status, key = herald.request("GET", "/api/push/webpush/key")
    check(status == 200, f"GET /api/push/webpush/key: {status} {key}")
    subscribed_with = bytes(driver.execute_script("return window.__heraldSubscribedWithKey"))
    check(b64url(subscribed_with) == key["public_key"].rstrip("="), "the app did not subscribe with Herald's VAPID key")
    device = page_async(driver, "return await HeraldDB.get('device');")
    check(device.get("user_id") == user_id and re.fullmatch(r"[0-9a-f]{64}", device.get("device_secret", "")),
          f"stored device: {device}")
    owner = {"Authorization": "Basic " + base64.b64encode(f"{user_id}:{device['device_secret']}".encode()).decode()}

    print("a notification through Herald's API reaches the inbox by the backfill")
    status, token = herald.request("POST", "/api/push/tokens", {"name": "browser test"}, owner)
    check(status == 201, f"POST /api/push/tokens: {status} {token}")
    status, sent = herald.request("POST", "/notifications", {
        "title": "Overseerr", "body": "New request: Dune: Part Two (2024)", "url": "https://overseerr.example.com/request/123",
        "actions": [{"id": "view", "title": "View Details", "foreground": True, "url": "https://overseerr.example.com/request/123"}],
    }, {"Authorization": "Bearer " + token["token"]})
    check(status == 201, f"POST /notifications: {status} {sent}")
    driver.find_element(By.ID, "refresh").click()
    wait_for(lambda: "Overseerr" in inbox_titles(driver), "the backfill did not bring the API's notification")

    print("a push delivered to the service worker")
    push_id = uuid7()
    push = {
        "id": push_id, "title": "Front Door", "body": "Someone is at the front door", "tag": "front-door",
        "level": "time-sensitive", "url": base + "/app/", "image": base + "/app/icon512.png",
        "actions": [
            {"id": "open-gate", "title": "Open gate", "url": target.base + "/gate", "method": "POST",
             "headers": {"Authorization": "Bearer HA_TOKEN", "Content-Type": "application/json"},
             "body": "{\"entity_id\":\"cover.gate\"}", "foreground": False},
            {"id": "view", "title": "View camera", "url": "https://ha.example.com/camera", "method": "GET", "foreground": True},
        ],
        "data": {"source": "doorbell"},
    }
    deliver_push(driver, base, push)
    wait_for(lambda: "Front Door" in inbox_titles(driver), "the pushed notification is not in the inbox")
    shown = page_async(driver, """
        const registration = await navigator.serviceWorker.ready;
        const list = await registration.getNotifications();
        return list.map((n) => ({title: n.title, body: n.body, tag: n.tag, icon: n.icon, image: n.image,
                                 actions: n.actions.map((a) => ({action: a.action, title: a.title})), data: n.data}));""")
    check(isinstance(shown, list), f"getNotifications: {shown}")
    door = [n for n in shown if n["title"] == "Front Door"]
    check(len(door) == 1, f"notifications shown: {shown}")
    door = door[0]
    check(door["body"] == "Someone is at the front door" and door["tag"] == "front-door", f"shown: {door}")
    check(door["actions"] == [{"action": "open-gate", "title": "Open gate"}, {"action": "view", "title": "View camera"}][
        :len(door["actions"])] and len(door["actions"]) >= 1, f"actions shown: {door['actions']}")
    check(door["icon"] == base + "/app/icon192.png" and door["image"] == base + "/app/icon512.png", f"images: {door}")
    check(door["data"]["id"] == push_id and len(door["data"]["actions"]) == 2, f"data: {door['data']}")
    first = driver.find_element(By.CSS_SELECTOR, "#inbox .item")
    check("unread" in first.get_attribute("class") and first.get_attribute("data-id") == push_id,
          "the push is not the newest unread item")
    check(driver.find_element(By.ID, "unread").text == "2", "unread count")

    print("replacing it: the same tag shows once")
    deliver_push(driver, base, dict(push, id=uuid7(), body="Still someone at the front door", image=None))
    wait_for(lambda: inbox_titles(driver).count("Front Door") == 2, "the second push is not in the inbox")
    shown = page_async(driver, """
        const list = await (await navigator.serviceWorker.ready).getNotifications({tag: 'front-door'});
        return list.map((n) => n.body);""")
    check(shown == ["Still someone at the front door"], f"notifications with the tag: {shown}")
    screenshot(driver, "webapp-inbox.png", DESKTOP)
    screenshot(driver, "webapp-inbox-phone.png", PHONE)

    print("a silent action is performed by the service worker")
    item = driver.find_element(By.CSS_SELECTOR, f'#inbox .item[data-id="{push_id}"]')
    item.find_element(By.CSS_SELECTOR, 'button[data-action="open-gate"]').click()
    wait_for(lambda: target.requests, "the action's request did not arrive")
    performed = target.requests[0]
    check(performed["method"] == "POST" and performed["path"] == "/gate", f"action request: {performed}")
    check(performed["headers"].get("Authorization") == "Bearer HA_TOKEN", f"action headers: {performed['headers']}")
    check(performed["body"] == '{"entity_id":"cover.gate"}', f"action body: {performed['body']}")
    wait_for(lambda: "done (200)" in driver.find_element(By.CSS_SELECTOR, f'#inbox .item[data-id="{push_id}"]').text,
             "the inbox does not say the action was done")

    print("reading marks read")
    driver.find_element(By.CSS_SELECTOR, f'#inbox .item[data-id="{push_id}"] .title').click()
    wait_for(lambda: "unread" not in driver.find_element(By.CSS_SELECTOR, f'#inbox .item[data-id="{push_id}"]')
             .get_attribute("class"), "clicking an item did not mark it read")
    topics(driver, herald)
    end_to_end(driver, base)
    errors = console_errors(driver)
    check(not errors, f"console errors: {errors}")

    print("offline: the shell from the service worker's cache")
    herald.stop()
    driver.get(base + "/app/")
    wait_for(lambda: visible(driver, "device") and "Front Door" in inbox_titles(driver),
             "the app did not load offline with its inbox")


def topics(driver, herald):
    """Topics (docs/webapp.md, "Topics"): the app creates one, another device joins it through the API with the join
    code the app showed, and the app lists both members (the creator sees them)."""
    print("topics: create one in the app, another device joins, the app lists both")
    driver.find_element(By.ID, "topic-name").send_keys("Family")
    driver.find_element(By.ID, "topic-create").click()
    wait_for(lambda: "Family" in driver.find_element(By.ID, "topics").text, "the created topic is not listed")
    topic_id = driver.find_element(By.CSS_SELECTOR, "#topics .topic-id").text
    check(re.fullmatch(r"tp_[0-9a-f]{60}", topic_id), f"topic id shown: {topic_id!r}")
    code = driver.find_element(By.ID, "topic-code").text
    check(re.fullmatch(r"[0-9a-f]{5}(-[0-9a-f]{5}){3}", code), f"join code shown: {code!r}")
    status, other = herald.request("POST", "/api/push/register", {"platform": "websocket"})
    check(status == 201, f"POST /api/push/register: {status} {other}")
    basic = base64.b64encode(f"{other['user_id']}:{other['device_secret']}".encode()).decode()
    status, joined = herald.request("POST", f"/api/push/topics/{topic_id}/members", {"join_code": code, "name": "Desk"},
                                    {"Authorization": "Basic " + basic})
    check(status == 201, f"join: {status} {joined}")
    page_async(driver, "await HeraldTopics.start(await HeraldDB.get('device'), () => {}); return true;")
    wait_for(lambda: "2 members" in driver.find_element(By.ID, "topics").text, "the topic does not list its two members")
    check("Desk" in driver.find_element(By.CSS_SELECTOR, "#topics ul.members").text, "the joined member is not listed")
    stored = page_async(driver, "return await HeraldDB.get('topics');")
    check([topic["topic_id"] for topic in stored] == [topic_id], f"topics kept in IndexedDB: {stored}")


def seal(key_hex, title, body):
    """A pw1 envelope made by `herald e2e seal` (docs/e2e.md)."""
    result = subprocess.run([HERALD, "e2e", "seal", "--title", title, "--body", body], capture_output=True, text=True,
                            env=dict(os.environ, HERALD_E2E_KEY=key_hex), timeout=60)
    check(result.returncode == 0, f"herald e2e seal: {result.stderr}")
    return result.stdout.strip()


def end_to_end(driver, base):
    """Step 8: the web app generates a key (shown once, 64 hex characters, with its id), its service worker opens an
    encrypted push with it and shows the real title, and the inbox does too; a push sealed for another key shows the
    placeholder with the reason."""
    print("end-to-end: a key generated in the browser opens an encrypted push")
    driver.find_element(By.ID, "e2e-generate").click()
    wait_for(lambda: re.fullmatch(r"[0-9a-f]{64}", driver.find_element(By.ID, "e2e-hex").text or ""),
             "the generated key is not shown as 64 hex characters")
    key_hex = driver.find_element(By.ID, "e2e-hex").text
    key_id = driver.find_element(By.ID, "e2e-status").get_attribute("data-key-id")
    made = subprocess.run([HERALD, "e2e", "seal", "--title", "t", "--body", "b"], capture_output=True, text=True,
                          env=dict(os.environ, HERALD_E2E_KEY=key_hex), timeout=60).stdout
    check(made.startswith(f"pw1.{key_id}."), f"the browser's key id {key_id!r} is not herald's: {made[:13]!r}")
    stored = page_async(driver, """
        const record = await HeraldDB.get("e2e_key");
        return {keyID: record.key_id, extractable: record.enc.extractable, hex: JSON.stringify(record).includes(%s)};"""
                        % json.dumps(key_hex))
    check(stored == {"keyID": key_id, "extractable": False, "hex": False}, f"what IndexedDB keeps: {stored}")

    opened_id = uuid7()
    deliver_push(driver, base, {"id": opened_id, "title": "Encrypted notification", "body": "Open it on a device that holds the key.",
                                "tag": "e2e", "encrypted": seal(key_hex, "Garage door open", "Since 22:14")})
    wait_for(lambda: "Garage door open" in inbox_titles(driver), "the inbox does not show the opened title")

    def shown(tag):
        return page_async(driver, """
            const list = await (await navigator.serviceWorker.ready).getNotifications({tag: %s});
            return list.map((n) => ({title: n.title, body: n.body}));""" % json.dumps(tag))
    wait_for(lambda: shown("e2e") == [{"title": "Garage door open", "body": "Since 22:14"}],
             f"the service worker did not show the opened notification: {shown('e2e')}")
    stored = page_async(driver, "return await HeraldDB.list();")
    check(not any("Garage" in json.dumps(item) for item in stored), "IndexedDB keeps what the envelope holds")

    print("end-to-end: another key's push shows the placeholder and why")
    other = subprocess.run([HERALD, "e2e", "keygen", "--json"], capture_output=True, text=True, timeout=60)
    other_key = json.loads(other.stdout)
    deliver_push(driver, base, {"id": uuid7(), "title": "Sealed elsewhere", "body": "Placeholder body", "tag": "e2e-other",
                                "encrypted": seal(other_key["key"], "Never shown", "Never shown")})
    wait_for(lambda: "Sealed elsewhere" in inbox_titles(driver), "the inbox does not show the placeholder")
    wait_for(lambda: len(shown("e2e-other")) == 1, "no notification for another key's push")
    notification = shown("e2e-other")[0]
    check(notification["title"] == "Sealed elsewhere" and f"another key ({other_key['key_id']})" in notification["body"],
          f"another key's push shows {notification}")
    item_text = driver.find_element(By.CSS_SELECTOR, "#inbox .item").text
    check("another key" in item_text and "Never shown" not in item_text, f"the inbox item: {item_text!r}")


def deliver_push(driver, base, push):
    """Delivers `push` (its JSON) to the app's service worker as a push service would, through the DevTools protocol:
    ServiceWorker.deliverPushMessage with the origin and the registration id ServiceWorker.workerRegistrationUpdated
    names for the scope /app/."""
    devtools = DevTools(driver.capabilities["goog:chromeOptions"]["debuggerAddress"], base + "/app/")
    try:
        devtools.command("ServiceWorker.enable")
        event = devtools.wait_for_event(
            lambda e: e.get("method") == "ServiceWorker.workerRegistrationUpdated"
            and any(r["scopeURL"] == base + "/app/" and not r.get("isDeleted") for r in e["params"]["registrations"]),
            "no ServiceWorker.workerRegistrationUpdated for /app/")
        registration_id = next(r["registrationId"] for r in event["params"]["registrations"] if r["scopeURL"] == base + "/app/")
        devtools.command("ServiceWorker.deliverPushMessage",
                         {"origin": base, "registrationId": registration_id, "data": json.dumps(push)})
    finally:
        devtools.close()


def main():
    os.makedirs(SCREENSHOTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="herald-webapp-")
    herald = Herald(work)
    target = ActionTarget()
    driver = None
    try:
        driver = browser()
        print(f"Chromium {driver.capabilities.get('browserVersion')}, herald at {herald.base}")
        run(herald, driver, target, work)
    except Exception as error:  # noqa: BLE001 — every failure is reported with the server's log
        print(f"webapp-browser-test: FAILED: {error!r}", file=sys.stderr)
        if driver is not None:
            try:
                driver.save_screenshot(os.path.join(work, "failure.png"))
                print(f"  the page then: {driver.current_url}\n{driver.find_element(By.TAG_NAME, 'body').text[:2000]}",
                      file=sys.stderr)
                print(f"  console: {driver.get_log('browser')}", file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass
        print(open(herald.log_path).read()[-4000:], file=sys.stderr)
        sys.exit(1)
    finally:
        if driver is not None:
            driver.quit()
        herald.stop()
        target.stop()
    shutil.rmtree(work, ignore_errors=True)
    print("webapp-browser-test: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
