"""Schemathesis hooks for the run with valid credentials (scripts/schemathesis.sh loads them).

Generated USER_IDs and notification ids almost never exist, so without these hooks every send would stop at 404/403.
About half the generated values are replaced with the registered device's USER_ID and a notification it sent, so the
checks also reach the pipeline and the state endpoint; the other half keep the generated value.
"""
import os
import re

import schemathesis

USER_ID = os.environ["HERALD_USER_ID"]
NOTIFICATION_ID = os.environ["HERALD_NOTIFICATION_ID"]
# A topic the device created (docs/api.md, "Topics"): the topic paths reach it, and some sends name it.
TOPIC_ID = os.environ["HERALD_TOPIC_ID"]


def _half(value):
    return isinstance(value, str) and len(value) % 2 == 0


# What the document allows as ntfy's topic in the path: a generated value outside it belongs to a case meant to be
# refused, and replacing it with a real USER_ID would make schemathesis expect a refusal of a valid request.
_TOPIC = re.compile(r"^([0-9a-fA-F]{64}|[tT][pP]_[0-9a-fA-F]{60})$")


@schemathesis.hook
def map_body(ctx, body):
    if isinstance(body, dict):
        # ntfy's JSON topic and Bark's device key are USER_IDs too (docs/senders.md).
        for key in ("user_id", "push_token", "topic", "device_key"):
            if _half(body.get(key)):
                # A quarter of them the topic's id instead (not Home Assistant's push_token: no topics there).
                body[key] = TOPIC_ID if key != "push_token" and len(body[key]) % 4 == 2 else USER_ID
    return body


@schemathesis.hook
def map_path_parameters(ctx, parameters):
    if parameters and ctx.operation.path == "/api/push/notifications/{id}" and _half(parameters.get("id")):
        parameters["id"] = NOTIFICATION_ID
    # ntfy's topic (and Bark's key at /{topic}) in the path.
    topic = parameters.get("topic") if parameters else None
    if ctx.operation.path in ("/{topic}", "/{topic}/publish") and _half(topic) and _TOPIC.match(topic):
        parameters["topic"] = USER_ID if len(parameters["topic"]) % 4 == 0 else TOPIC_ID
    if parameters and "{topic_id}" in ctx.operation.path and _half(parameters.get("topic_id")):
        parameters["topic_id"] = TOPIC_ID
    return parameters
