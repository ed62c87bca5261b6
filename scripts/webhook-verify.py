#!/usr/bin/env python3
"""Checks a callback Herald sent with PyPI's standardwebhooks (an implementation Herald did not write).

Reads {"secret": "whsec_...", "headers": {...}, "body": <base64>} on standard input; prints
{"valid": bool, "payload": <the verified JSON or null>, "tampered_rejected": bool, "error": str|null}.
Used by CallbackInteroperabilityTests (HERALD_WEBHOOK_VERIFIER_PYTHON).
"""
import base64
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

request = json.load(sys.stdin)
body = base64.b64decode(request["body"])
webhook = Webhook(request["secret"])
answer = {"valid": False, "payload": None, "tampered_rejected": False, "error": None}
try:
    answer["payload"] = webhook.verify(body, request["headers"])
    answer["valid"] = True
except WebhookVerificationError as error:
    answer["error"] = str(error)
try:
    webhook.verify(body + b" ", request["headers"])
except WebhookVerificationError:
    answer["tampered_rejected"] = True
json.dump(answer, sys.stdout)
