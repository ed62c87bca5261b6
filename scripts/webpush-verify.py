#!/usr/bin/env python3
"""Checks Herald's Web Push output with implementations Herald did not write (PyPI's http-ece and py-vapid).

Reads one JSON document on standard input:
  {"body": <base64url of the aes128gcm body>, "private_key": <base64url of the subscriber's 32-byte P-256 private key>,
   "auth": <base64url of the 16-byte auth secret>, "authorization": <the Authorization header>, "audience": <origin>}
and prints one JSON document: {"plaintext": <base64url of what http-ece decrypted>, "vapid_valid": <py-vapid's verdict>,
"claims": <the JWT's claims>}. Exits non-zero with the reason when a step fails.
"""
import base64
import json
import sys

import http_ece
import py_vapid
from cryptography.hazmat.primitives.asymmetric import ec


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main():
    given = json.load(sys.stdin)
    private_key = ec.derive_private_key(int.from_bytes(b64(given["private_key"]), "big"), ec.SECP256R1())
    plaintext = http_ece.decrypt(b64(given["body"]), private_key=private_key, auth_secret=b64(given["auth"]), version="aes128gcm")
    authorization = given["authorization"]
    valid = bool(py_vapid.Vapid02.verify(authorization))
    token = dict(part.split("=", 1) for part in authorization.split(" ", 1)[1].split(","))["t"]
    claims = json.loads(b64(token.split(".")[1]))
    json.dump({"plaintext": base64.urlsafe_b64encode(plaintext).decode().rstrip("="), "vapid_valid": valid, "claims": claims}, sys.stdout)


if __name__ == "__main__":
    main()
