#!/usr/bin/env python3
"""Drives the operator dashboard (/admin) in a real headless Chromium, end to end, and takes the screenshots the
README shows.

Starts the herald binary that is there (default .build/debug/herald, or $HERALD) with a throwaway in-memory store,
HERALD_ADMIN_TOKEN set and a free loopback port; registers a WebSocket device with a `herald listen` client (so that
notifications are delivered) and an APNs device (APNs is configured with a throwaway key at an address where nothing
listens: its notifications fail their attempts and wait in the outbox for a retry); then
drives Chromium through login (a wrong token first), the overview, sending a test notification, looking up the
notification just sent, the device page, the live view and logout, asserting on each page's content. Screenshots go
to $SCREENSHOTS (default docs/screenshots), at a desktop and a phone size.

Fails (never skips) when the binary, Chromium, chromedriver or selenium is missing.

    swift build && python3 -m venv /tmp/admin-venv && /tmp/admin-venv/bin/pip install selenium
    /tmp/admin-venv/bin/python scripts/admin-browser-test.py
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERALD = os.environ.get("HERALD", os.path.join(ROOT, ".build/debug/herald"))
SCREENSHOTS = os.environ.get("SCREENSHOTS", os.path.join(ROOT, "docs/screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", shutil.which("chromedriver") or "/usr/bin/chromedriver")
TOKEN = "browser-test-" + os.urandom(16).hex()
DESKTOP = (1280, 900)
PHONE = (390, 844)


def fail(message):
    print(f"admin-browser-test: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def wait_for(condition, message, seconds=15):
    """Waits for `condition` (a form's answer to load, a page to reload itself); fails with `message`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # noqa: BLE001 — the page was being replaced
            pass
        time.sleep(0.1)
    raise AssertionError(message)


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
except ImportError:
    fail("selenium is not installed (pip install selenium).")
for path, what in [(HERALD, "the herald binary (swift build)"), (CHROMIUM, "Chromium (apt-get install chromium)"),
                   (CHROMEDRIVER, "chromedriver (apt-get install chromium-driver)"),
                   (shutil.which("openssl") or "/usr/bin/openssl", "openssl (apt-get install openssl)")]:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        fail(f"{what} is missing: {path}")


class Herald:
    """A `herald serve` child process on a free port, and its API."""

    def __init__(self, work):
        self.log_path = os.path.join(work, "server.log")
        self.log = open(self.log_path, "w")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        environment.update(HERALD_HOST="127.0.0.1", HERALD_PORT="0", HERALD_DATABASE_URL="memory:",
                           HERALD_ADMIN_TOKEN=TOKEN, HERALD_DELIVERY_WAIT_MS="2000", HERALD_LOG_LEVEL="info")
        # APNs with a throwaway key, at an address where nothing listens: Apple devices' notifications fail their
        # attempts and wait for a retry, so that the overview has provider errors to show.
        key = os.path.join(work, "AuthKey_TEST000000.p8")
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key],
                       check=True, capture_output=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed = f"https://127.0.0.1:{probe.getsockname()[1]}"
        environment.update(HERALD_APNS_KEY_PATH=key, HERALD_APNS_KEY_ID="TEST000000", HERALD_APNS_TEAM_ID="TEAM000000",
                           HERALD_APNS_TOPIC="io.herald.example", HERALD_APNS_PRODUCTION_URL=closed,
                           HERALD_APNS_SANDBOX_URL=closed, HERALD_APNS_TIMEOUT="2")
        self.process = subprocess.Popen([HERALD, "serve"], stdout=self.log, stderr=subprocess.STDOUT, env=environment)
        self.children = []
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
        for _ in range(100):
            try:
                if urllib.request.urlopen(self.base + "/readyz", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.1)

    def post(self, path, body):
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def listen(self, device, work):
        log = open(os.path.join(work, "listen.log"), "w")
        self.children.append(subprocess.Popen(
            [HERALD, "listen", "--server", self.base, "--user-id", device["user_id"],
             "--device-secret", device["device_secret"]], stdout=log, stderr=subprocess.STDOUT))

    def stop(self):
        for process in self.children + [self.process]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
                     f"--window-size={DESKTOP[0]},{DESKTOP[1]}"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)  # elements of a page that is still loading
    return driver


def nothing_from_elsewhere(driver):
    """Every address the page loads or links to is on this server (no CDN, no fonts from the internet)."""
    for address in re.findall(r'(?:src|href|action)="([^"]*)"', driver.page_source):
        check(address.startswith("/") or address.startswith("#"), f"{driver.current_url} refers to {address}")


def screenshot(driver, name, size):
    """A screenshot of the whole page at `size`'s width."""
    nothing_from_elsewhere(driver)
    width, height = size
    driver.set_window_size(width, height)
    content = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, max(height, min(content + 140, 4000)))
    path = os.path.join(SCREENSHOTS, name)
    check(driver.save_screenshot(path), f"could not save {path}")
    driver.set_window_size(*DESKTOP)
    print(f"  screenshot {os.path.relpath(path, ROOT)}")


def text(driver):
    """The page's visible text (read again when the page was replaced meanwhile, as the live view does)."""
    for _ in range(50):
        try:
            return driver.find_element(By.TAG_NAME, "body").text
        except StaleElementReferenceException:
            time.sleep(0.1)
    raise AssertionError("the page never stood still")


def run(herald, driver):
    base = herald.base
    secrets = []

    # Devices and traffic: a WebSocket device with a listening client, and an APNs device nothing can deliver to.
    phone = herald.post("/api/push/register", {"platform": "websocket"})
    ipad = herald.post("/api/push/register", {"token": os.urandom(32).hex(), "environment": "sandbox"})
    secrets += [phone["user_id"], phone["device_secret"], ipad["user_id"], ipad["device_secret"]]
    herald.listen(phone, os.path.dirname(herald.log_path))
    for attempt in range(100):
        sent = herald.post("/api/push/notify", {"user_id": phone["user_id"], "title": "Listener check", "body": "…"})
        if sent["status"] == "delivered":
            break
        time.sleep(0.2)
    else:
        raise AssertionError("herald listen never took a notification")
    for title, body in [("Person detected", "Front Door"), ("Package delivered", "Porch"), ("Motion", "Garden")]:
        herald.post("/api/push/notify", {"user_id": phone["user_id"], "title": title, "body": body})
    herald.post("/api/push/notify", {"user_id": ipad["user_id"], "title": "Doorbell", "body": "Someone rang"})

    print("login")
    driver.get(base + "/admin")
    wait_for(lambda: driver.current_url == base + "/admin/login", "not sent to the login page")
    check("Admin token" in text(driver), "no login form")
    screenshot(driver, "login-phone.png", PHONE)
    driver.find_element(By.ID, "token").send_keys("not-the-token-at-all")
    driver.find_element(By.ID, "login").click()
    wait_for(lambda: "That is not the admin token." in text(driver), "a wrong token was not refused")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "login").click()

    print("overview")
    wait_for(lambda: driver.current_url == base + "/admin", "login did not lead to the overview")
    check(driver.find_element(By.TAG_NAME, "h1").text == "Overview", "no overview")
    devices = driver.find_element(By.ID, "devices").text
    check("websocket active 1" in devices and "apns active 1" in devices, f"device table: {devices!r}")
    check(int(driver.find_element(By.ID, "delivered-24h").text) >= 4, "deliveries not counted")
    check(int(driver.find_element(By.ID, "outbox-depth").text) >= 1, "the waiting APNs notification is not in the outbox")
    check(driver.find_element(By.CSS_SELECTOR, "#errors code").text, "the failed APNs attempt is not among the errors")
    cookies = driver.get_cookies()
    check(len(cookies) == 1 and cookies[0]["name"] == "herald_admin" and cookies[0]["httpOnly"]
          and cookies[0]["sameSite"] == "Strict", f"session cookie: {cookies}")
    check(driver.execute_script("return document.cookie") == "", "the session cookie is readable from script")
    screenshot(driver, "overview.png", DESKTOP)
    screenshot(driver, "overview-phone.png", PHONE)

    print("send a test notification")
    driver.find_element(By.LINK_TEXT, "Send a test").click()
    wait_for(lambda: driver.current_url == base + "/admin/send", "the send link did not lead there")
    driver.find_element(By.ID, "user-id").send_keys(phone["user_id"])
    title = driver.find_element(By.ID, "title")
    title.clear()
    title.send_keys("Hello from the dashboard")
    screenshot(driver, "send-phone.png", PHONE)
    driver.find_element(By.ID, "send").click()
    wait_for(lambda: "Test notification accepted" in text(driver), "the send was not accepted")
    sent_id = re.search(r"id=([0-9a-f-]{36})", driver.current_url).group(1)

    print("look up the notification just sent")
    driver.find_element(By.LINK_TEXT, "Overview").click()
    wait_for(lambda: driver.current_url == base + "/admin", "the overview link did not lead there")
    driver.find_element(By.ID, "notification-id").send_keys(sent_id)
    driver.find_element(By.ID, "find-notification").click()
    wait_for(lambda: driver.find_elements(By.ID, "notification"), "the notification's page did not load")
    page = text(driver)
    check(sent_id in page, "the looked-up notification is not shown")
    check("Hello from the dashboard" in page, "its payload is not shown")
    check(re.search(r"\bdelivered\b", driver.find_element(By.CSS_SELECTOR, "#notification h2").text),
          "it was not delivered to the listening client")
    check("Delivered after 1 attempt" in page, "its history is not shown")
    screenshot(driver, "notification.png", DESKTOP)

    print("device by USER_ID")
    driver.find_element(By.LINK_TEXT, "Overview").click()
    wait_for(lambda: driver.current_url == base + "/admin", "the overview link did not lead there")
    driver.find_element(By.ID, "user-id").send_keys(ipad["user_id"])
    driver.find_element(By.ID, "find-device").click()
    wait_for(lambda: driver.find_elements(By.ID, "device"), "the device's page did not load")
    page = text(driver)
    check("sandbox" in page and "apns" in page, "device page")
    check("1 of 150 used" in page, "today's quota is not shown")
    source = driver.page_source
    for secret in secrets:
        check(secret not in source, "a secret is on the device page")
    screenshot(driver, "device-phone.png", PHONE)

    print("live view")
    driver.find_element(By.LINK_TEXT, "Live").click()
    wait_for(lambda: driver.current_url == base + "/admin/live", "the live link did not lead there")
    wait_for(lambda: sent_id[:8] in text(driver), "the live view does not list the test notification")
    check(driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv=refresh]"), "the live view does not reload itself")
    herald.post("/api/push/notify", {"user_id": phone["user_id"], "title": "Live", "body": "while watching"})
    latest = herald.post("/api/push/notify", {"user_id": phone["user_id"], "title": "Live", "body": "again"})["id"]
    # The page reloads itself every few seconds; no script involved.
    wait_for(lambda: latest[:8] in text(driver), "the live view did not show a new delivery by itself")
    screenshot(driver, "live.png", DESKTOP)

    print("logout")
    driver.get(base + "/admin")  # a page that does not reload itself under the click
    driver.find_element(By.ID, "logout").click()
    wait_for(lambda: "You are logged out." in text(driver), "logout did not say so")
    check(driver.get_cookies() == [], "the cookie outlived the logout")
    driver.get(base + "/admin")
    wait_for(lambda: driver.current_url == base + "/admin/login", "the overview is still there after logout")


def main():
    os.makedirs(SCREENSHOTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="herald-admin-")
    herald = Herald(work)
    driver = None
    try:
        driver = browser()
        print(f"Chromium {driver.capabilities.get('browserVersion')}, herald at {herald.base}")
        run(herald, driver)
    except Exception as error:  # noqa: BLE001 — every failure is reported with the server's log
        print(f"admin-browser-test: FAILED: {error!r}", file=sys.stderr)
        if driver is not None:
            try:
                driver.save_screenshot(os.path.join(work, "failure.png"))
                print(f"  the page then: {driver.current_url}\n{text(driver)[:2000]}", file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass
        print(open(herald.log_path).read()[-4000:], file=sys.stderr)
        sys.exit(1)
    finally:
        if driver is not None:
            driver.quit()
        herald.stop()
    shutil.rmtree(work, ignore_errors=True)
    print("admin-browser-test: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
