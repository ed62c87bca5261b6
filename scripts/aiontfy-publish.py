"""aiontfy (PyPI; the ntfy library of Home Assistant's ntfy integration), a client Herald did not write, publishing to
Herald at BASE: each message is checked in ntfy's answer as aiontfy parses it (its `Notification`), in what Herald
stored for the phone (the owner's GET /api/push/notifications), and each refusal as the aiontfy exception class and
ntfy code it raises. Run by scripts/apprise-senders.sh.

aiontfy declares Python 3.12 or later; Debian 12 has 3.11, which runs it (it uses nothing newer than StrEnum), so
.ci/run installs it with --ignore-requires-python."""

import asyncio
import base64
import time

from aiontfy import BroadcastAction, HttpAction, Message, Ntfy, ViewAction
from aiontfy.exceptions import NtfyBadRequestError, NtfyHTTPError, NtfyNotFoundError
from aiontfy.types import Event, Priority

from sender_checks import BASE, call, check, finish

device = call("POST", "/api/push/register", {"token": "cd" * 32, "environment": "production"})
user_id = device["user_id"]
owner = {"Authorization": "Basic " + base64.b64encode(f"{user_id}:{device['device_secret']}".encode()).decode()}


def stored(notification_id):
    items = call("GET", "/api/push/notifications?limit=5", headers=owner)["notifications"]
    return next((item for item in items if item.get("id") == notification_id), {})


def latest():
    return call("GET", "/api/push/notifications?limit=1", headers=owner)["notifications"][0]


async def refused(ntfy, message, expected_class, expected_code, what, attachment=None):
    try:
        await ntfy.publish(message, attachment)
        check(False, f"{what}: aiontfy raised nothing")
    except NtfyHTTPError as error:
        check(isinstance(error, expected_class) and error.code == expected_code,
              f"{what}: aiontfy raises {type(error).__name__} {error.code} ({error.error})")


async def main():
    async with Ntfy(BASE) as ntfy:
        # A message with every member aiontfy sends: POST / with ntfy's JSON.
        answer = await ntfy.publish(Message(
            topic=user_id, title="Backup", message="Nightly backup finished", priority=Priority.HIGH,
            tags=["white_check_mark", "nas"], click="https://example.com/log",
            actions=[ViewAction(label="Open log", url="https://example.com/log"),
                     HttpAction(label="Rerun", url="https://example.com/rerun", method="POST", body="now")]))
        check(answer.event == Event.MESSAGE and answer.topic == user_id, f"aiontfy reads ntfy's answer: {answer.event} {answer.topic}")
        check(answer.title == "Backup" and answer.message == "Nightly backup finished" and answer.priority == Priority.HIGH,
              f"the answer names the message: {answer.title!r} {answer.message!r} {answer.priority!r}")
        check(answer.tags == ["white_check_mark", "nas"] and str(answer.click) == "https://example.com/log",
              f"the answer's tags and click: {answer.tags} {answer.click}")
        check(len(answer.actions) == 2, f"the answer's actions: {answer.actions}")
        item = stored(answer.id)
        check(item.get("title") == "✅ Backup" and item.get("body") == "Nightly backup finished",
              f"the phone's notification (by the answer's id): {item}")
        check(item.get("level") == "time-sensitive" and item.get("url") == "https://example.com/log", f"priority 4 and click: {item}")
        check([a.get("title") for a in item.get("actions", [])] == ["Open log", "Rerun"], f"view and http actions: {item.get('actions')}")

        # The defaults: no title, priority 3.
        answer = await ntfy.publish(Message(topic=user_id, message="Door opened"))
        item = latest()
        check(answer.priority in (None, Priority.DEFAULT) and item.get("body") == "Door opened" and item.get("level") == "active",
              f"a bare message: {answer.priority!r} {item}")

        # A delayed message: ntfy's answer has the time it goes out; nothing reaches the phone yet.
        before = latest()["id"]
        started = time.time()
        answer = await ntfy.publish(Message(topic=user_id, message="Tea is ready", delay="30m"))
        due = answer.time.timestamp() - started
        check(1_790 <= due <= 1_810, f"a delayed message's time is 30 minutes ahead: {due:.0f} s")
        check(latest()["id"] == before, "the delayed message is not sent yet")

        # Refusals, raised as aiontfy's own exceptions with ntfy's codes.
        await refused(ntfy, Message(topic=user_id, message="x", actions=[BroadcastAction(label="Take picture")]),
                      NtfyBadRequestError, 40018, "a broadcast action")
        await refused(ntfy, Message(topic=user_id, message="x", delay="tomorrow, 10am"), NtfyBadRequestError, 40004,
                      "a natural-language delay")
        await refused(ntfy, Message(topic="ef" * 32, message="x"), NtfyNotFoundError, 40401, "an unknown USER_ID")
        await refused(ntfy, Message(topic=user_id, filename="flower.jpg"), NtfyBadRequestError, 40014, "a file attachment",
                      attachment=b"\xff\xd8\xff\xe0\x00\x10")


asyncio.run(main())
finish("aiontfy")
