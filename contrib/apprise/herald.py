"""Herald for Apprise: a custom notification (Apprise's @notify decorator) that sends to Herald's
`POST /notifications` with every field Herald has: title, body, level, image, click URL, collapse id and source.

Install: copy this file into one of Apprise's plugin folders (~/.apprise/plugins, ~/.config/apprise/plugins) or pass
its folder with `apprise --plugin-path=contrib/apprise`. Then:

    herald://hrd_TOKEN@herald.example.com/?level=time-sensitive&image=https://…/cam.jpg&url=https://…&id=door
    heralds://hrd_TOKEN@herald.example.com/           (https)

The token is a Herald API token with the `notifications` scope (POST /api/push/tokens; docs/senders.md). Query
parameters: `level` (passive, active, time-sensitive, critical; default from Apprise's type: failure and warning are
time-sensitive, the rest active), `image` (an http(s) image URL), `url` (what a tap opens), `id` (the collapse id: a
later notification with the same id replaces it), `source` (groups notifications), `token` (instead of the user part).
"""

import json
import urllib.error
import urllib.parse
import urllib.request

from apprise.decorators import notify

LEVELS = ("passive", "active", "time-sensitive", "critical")
TYPE_LEVELS = {"failure": "time-sensitive", "warning": "time-sensitive"}


def _send(scheme, body, title, notify_type, meta):
    query = meta.get("qsd") or {}
    token = urllib.parse.unquote(meta.get("user") or "") or query.get("token")
    if not token:
        return False
    host = meta.get("host") or ""
    port = meta.get("port")
    base = f"{scheme}://{host}" + (f":{port}" if port else "")
    path = (meta.get("fullpath") or "/").rstrip("/")
    level = query.get("level") or TYPE_LEVELS.get(str(notify_type), "active")
    if level not in LEVELS:
        return False
    message = {"title": title or str(notify_type).capitalize() or "Apprise", "body": body or " ", "level": level}
    for parameter, field in (("image", "image_url"), ("url", "url"), ("id", "notification_id"), ("source", "source")):
        if query.get(parameter):
            message[field] = query[parameter]
    request = urllib.request.Request(
        f"{base}{path}/notifications", data=json.dumps(message).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return answer.status == 201
    except (urllib.error.URLError, TimeoutError):
        return False


@notify(on="herald", name="Herald")
def herald(body, title, notify_type, meta, *args, **kwargs):
    return _send("http", body, title, notify_type, meta)


@notify(on="heralds", name="Herald (https)")
def heralds(body, title, notify_type, meta, *args, **kwargs):
    return _send("https", body, title, notify_type, meta)
