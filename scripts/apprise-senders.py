"""Apprise's ntfy://, gotify://, bark:// and herald:// (contrib/apprise/herald.py) against Herald at BASE, then curl
lines of ntfy's documentation: each notification is checked in what Herald stored for the phone, as the owner's
GET /api/push/notifications shows it (the document the device receives). Run by scripts/apprise-senders.sh."""

import base64
import json
import os
import subprocess

import apprise

from sender_checks import BASE, call, check, finish

HOST_PORT = BASE.removeprefix("http://")

device = call("POST", "/api/push/register", {"token": "ab" * 32, "environment": "production"})
user_id, secret = device["user_id"], device["device_secret"]
owner = {"Authorization": "Basic " + base64.b64encode(f"{user_id}:{secret}".encode()).decode()}
token = call("POST", "/api/push/tokens", {"name": "apprise"}, owner)["token"]


def latest():
    return call("GET", "/api/push/notifications?limit=1", headers=owner)["notifications"][0]


def send(url, body, title, plugin=False, notify_type=apprise.NotifyType.INFO):
    asset = apprise.AppriseAsset(plugin_paths=[os.path.join(os.path.dirname(__file__), "..", "contrib", "apprise")])
    sender = apprise.Apprise(asset=asset)
    check(sender.add(url), f"Apprise takes {url.split(':')[0]}:// ({url.split('?')[-1] if '?' in url else 'no options'})")
    check(sender.notify(body=body, title=title, notify_type=notify_type), f"Apprise says {url.split(':')[0]}:// was sent")
    return latest()


# ntfy://: POST / with {"topic", "title", "message"} (and priority, tags, click when asked).
item = send(f"ntfy://{HOST_PORT}/{user_id}", "Backup finished", "Nightly")
check(item.get("title") == "Nightly" and item.get("body") == "Backup finished", f"ntfy:// title and body reached the phone: {item}")
check(item.get("level") == "active", "ntfy:// default priority is active")
item = send(f"ntfy://{HOST_PORT}/{user_id}?priority=max&tags=warning&click=https://example.com/log", "Disk full", "NAS")
check(item.get("title") == "⚠️ NAS" and item.get("body") == "Disk full", f"ntfy:// tags become the emoji: {item}")
check(item.get("level") == "time-sensitive" and item.get("url") == "https://example.com/log", f"ntfy:// priority max and click: {item}")

# gotify://: POST /message with X-Gotify-Key and {"priority", "title", "message"}.
item = send(f"gotify://{HOST_PORT}/{token}", "Episode grabbed", "Sonarr")
check(item.get("title") == "Sonarr" and item.get("body") == "Episode grabbed", f"gotify:// title and body: {item}")
check(item.get("level") == "active", f"gotify:// priority 5 is active: {item}")
item = send(f"gotify://{HOST_PORT}/{token}?priority=emergency", "Server down", "Alarm")
check(item.get("level") == "time-sensitive", f"gotify:// emergency priority is time-sensitive: {item}")

# bark://: POST /push with {"device_key", "title", "body", "icon"}.
item = send(f"bark://{HOST_PORT}/{user_id}", "Door opened", "Home")
check(item.get("title") == "Home" and item.get("body") == "Door opened", f"bark:// title and body: {item}")
item = send(f"bark://{HOST_PORT}/{user_id}?level=timeSensitive&group=doors&click=https://example.com/door", "Garage", "Home")
check(item.get("level") == "time-sensitive" and item.get("url") == "https://example.com/door", f"bark:// level and click: {item}")

# herald:// (contrib/apprise/herald.py): every field Herald has.
url = (f"herald://{token}@{HOST_PORT}/?level=passive&image=https://example.com/cam.jpg"
       "&url=https://example.com/open&id=door-1&source=apprise")
item = send(url, "Front door opened", "Door", plugin=True)
check(item.get("title") == "Door" and item.get("body") == "Front door opened", f"herald:// title and body: {item}")
check(item.get("level") == "passive" and item.get("image") == "https://example.com/cam.jpg", f"herald:// level and image: {item}")
check(item.get("url") == "https://example.com/open" and item.get("tag") == "door-1", f"herald:// click URL and collapse id: {item}")
item = send(f"herald://{token}@{HOST_PORT}/", "Job failed", "CI", plugin=True, notify_type=apprise.NotifyType.FAILURE)
check(item.get("level") == "time-sensitive", f"herald:// failure is time-sensitive: {item}")

# curl lines copied from ntfy's documentation (docs/publish.md), the host and topic replaced.

def curl(*arguments):
    result = subprocess.run(["curl", "-sS", "--max-time", "15", *arguments], capture_output=True, text=True)
    check(result.returncode == 0, f"curl {' '.join(arguments)[:80]} ran")
    return json.loads(result.stdout or "{}")


answer = curl("-d", "Backup successful 😀", f"{BASE}/{user_id}")
check(answer.get("event") == "message", f"curl -d: ntfy's answer {answer}")
item = latest()
check(item.get("body") == "Backup successful 😀", f"curl -d: the body reached the phone: {item}")
curl("-H", "Title: Unauthorized access detected", "-H", "Priority: urgent", "-H", "Tags: warning,skull",
     "-d", "Remote access to phils-laptop detected. Act right away.", f"{BASE}/{user_id}")
item = latest()
check(item.get("title") == "⚠️💀 Unauthorized access detected" and item.get("level") == "time-sensitive", f"curl -H: {item}")
curl(f"{BASE}/{user_id}/publish?message=Door+opened&priority=low&tags=door")
item = latest()
check(item.get("body") == "🚪 Door opened" and item.get("level") == "passive", f"curl GET /publish: {item}")

finish("Apprise")
