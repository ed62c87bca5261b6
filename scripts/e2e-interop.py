"""pw1 end-to-end interoperability (docs/e2e.md, issue 41): Herald's sealing against Python's `cryptography` (an
independent AES-GCM and HKDF), both ways, and through a live server.

1. Every seal vector of Tests/HeraldCoreTests/Fixtures/pw1/e2e-vectors.json, sealed and opened by Python here: the
   vectors themselves hold.
2. `herald e2e keygen` makes a key whose id Python derives too; Python opens what `herald e2e seal` seals, and
   `herald e2e open` opens what Python seals.
3. Through a live `herald serve` (the caller starts it and passes its base URL): a device registered with
   `herald register`, a notification sent with `herald send --e2e-key`; the inbox API returns the placeholder and the
   envelope, and Python opens the envelope to the real title and body.

    python3 -m venv /tmp/herald-e2e && /tmp/herald-e2e/bin/pip install cryptography
    /tmp/herald-e2e/bin/python scripts/e2e-interop.py .build/debug/herald [http://127.0.0.1:PORT]
"""

import base64
import json
import os
import subprocess
import sys
import urllib.request

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VECTORS = os.path.join(ROOT, "Tests/HeraldCoreTests/Fixtures/pw1/e2e-vectors.json")
passed = 0


def check(condition, message):
    global passed
    if not condition:
        print(f"e2e-interop: FAILED: {message}", file=sys.stderr)
        sys.exit(1)
    passed += 1


def hkdf(key, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(key)


def kid(key):
    return hkdf(key, b"pushward/e2e/v1/kid", 4).hex()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal(key, plaintext, nonce=None):
    nonce = nonce or os.urandom(12)
    key_id = kid(key)
    sealed = AESGCM(hkdf(key, b"pushward/e2e/v1/enc", 32)).encrypt(nonce, plaintext, f"pw1.{key_id}".encode())
    return f"pw1.{key_id}.{b64url(nonce + sealed)}"


def open_envelope(key, envelope):
    version, key_id, body = envelope.split(".")
    assert version == "pw1" and key_id == kid(key), f"not sealed for this key: {envelope[:13]}"
    raw = unb64url(body)
    plaintext = AESGCM(hkdf(key, b"pushward/e2e/v1/enc", 32)).decrypt(raw[:12], raw[12:], f"pw1.{key_id}".encode())
    return json.loads(plaintext)


def herald(binary, *arguments, key=None, stdin=None):
    environment = dict(os.environ)
    environment.pop("HERALD_E2E_KEY", None)
    if key is not None:
        environment["HERALD_E2E_KEY"] = key
    result = subprocess.run([binary, *arguments], capture_output=True, text=True, env=environment, input=stdin, timeout=60)
    check(result.returncode == 0, f"herald {' '.join(arguments)}: exit {result.returncode}: {result.stderr}")
    return result.stdout


def vectors():
    with open(VECTORS) as file:
        document = json.load(file)
    for case in document["seal"]:
        key = bytes.fromhex(case["key_hex"])
        check(kid(key) == case["kid"], f"{case['name']}: key id")
        envelope = seal(key, case["plaintext"].encode(), bytes.fromhex(case["nonce_hex"]))
        check(envelope == case["envelope"], f"{case['name']}: Python's envelope differs from the vector's")
        opened = open_envelope(key, case["envelope"])
        check(opened["title"][:256] == case["expect"]["title"], f"{case['name']}: title")


def command_line(binary):
    made = json.loads(herald(binary, "e2e", "keygen", "--json"))
    key = bytes.fromhex(made["key"])
    check(len(key) == 32 and made["key_id"] == kid(key), f"keygen: {made['key_id']} is not Python's {kid(key)}")

    envelope = herald(binary, "e2e", "seal", "--title", "Front door ✓", "--subtitle", "Camera 2", "--body",
                      "Person detected", "--url", "https://nvr.example/e/42", key=made["key"]).strip()
    opened = open_envelope(key, envelope)
    check(opened == {"title": "Front door ✓", "subtitle": "Camera 2", "body": "Person detected",
                     "url": "https://nvr.example/e/42"}, f"Python opened {opened}")
    check(len(unb64url(envelope.split(".")[2])[12:-16]) % 64 == 0, "herald pads the plaintext to 64 bytes")

    sealed = seal(key, json.dumps({"title": "From Python", "body": "Sealed by cryptography", "future": 1}).encode())
    opened = json.loads(herald(binary, "e2e", "open", sealed, key=made["key"]))
    check(opened == {"title": "From Python", "body": "Sealed by cryptography"}, f"herald opened {opened}")
    other = seal(os.urandom(32), b'{"title":"x","body":"y"}')
    refused = subprocess.run([binary, "e2e", "open", other], capture_output=True, text=True,
                             env=dict(os.environ, HERALD_E2E_KEY=made["key"]), timeout=60)
    check(refused.returncode != 0 and "another key" in refused.stderr, f"another key's envelope: {refused.stderr}")
    return made["key"]


def through_server(binary, base, key_hex):
    device = json.loads(herald(binary, "register", "--server", base, "--json"))
    herald(binary, "send", "--server", base, "--user-id", device["user_id"], "--title", "Garage open",
           "--body", "Since 22:14", "--e2e-key", key_hex)
    credentials = base64.b64encode(f"{device['user_id']}:{device['device_secret']}".encode()).decode()
    request = urllib.request.Request(f"{base}/api/push/notifications", headers={"Authorization": f"Basic {credentials}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        items = json.load(response)["notifications"]
    check(len(items) == 1, f"inbox: {items}")
    item = items[0]
    check(item["title"] == "Encrypted notification" and "Garage" not in json.dumps(item), f"the server holds {item}")
    opened = open_envelope(bytes.fromhex(key_hex), item["encrypted"])
    check(opened == {"title": "Garage open", "body": "Since 22:14"}, f"Python opened {opened}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    vectors()
    key = command_line(sys.argv[1])
    if len(sys.argv) > 2:
        through_server(sys.argv[1], sys.argv[2], key)
    print(f"e2e-interop: {passed} checks passed")


if __name__ == "__main__":
    main()
