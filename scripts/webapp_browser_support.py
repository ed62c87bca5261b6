"""Support for scripts/webapp-browser-test.py: a made-up browser subscription's keys, the loopback server that stands
for a sender's action URL, a DevTools protocol client of its own (a WebSocket client in the standard library) and
notification ids as Herald makes them."""

import base64
import http.server
import json
import os
import re
import socket
import struct
import subprocess
import threading
import time
import urllib.request


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def subscription_keys(work, openssl):
    """A browser's subscription keys: an uncompressed P-256 public point (65 bytes) and a 16-byte auth secret."""
    key = os.path.join(work, "ua.pem")
    subprocess.run([openssl, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key], check=True,
                   capture_output=True)
    der = subprocess.run([openssl, "ec", "-in", key, "-pubout", "-outform", "DER", "-conv_form", "uncompressed"],
                         check=True, capture_output=True).stdout
    point = der[-65:]
    check(point[0] == 4, "openssl did not give an uncompressed point")
    return {"p256dh": b64url(point), "auth": b64url(os.urandom(16))}


class ActionTarget:
    """A loopback HTTP server standing for the sender's action URL (seed 001's silent actions): answers CORS
    preflights for any origin and records every other request."""

    def __init__(self):
        self.requests = []
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def cors(self):
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
                self.send_header("Access-Control-Allow-Headers", "authorization, content-type")

            def do_OPTIONS(self):  # noqa: N802
                self.send_response(204)
                self.cors()
                self.end_headers()

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                target.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                        "body": self.rfile.read(length).decode()})
                self.send_response(200)
                self.cors()
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok":true}')

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class DevTools:
    """A DevTools protocol connection of its own to the page (a WebSocket client in the standard library), for the
    events selenium's execute_cdp_cmd cannot return (ServiceWorker.workerRegistrationUpdated)."""

    def __init__(self, debugger_address, page_url_prefix):
        with urllib.request.urlopen(f"http://{debugger_address}/json/list", timeout=10) as response:
            targets = json.load(response)
        pages = [t for t in targets if t.get("type") == "page" and t.get("url", "").startswith(page_url_prefix)]
        check(pages, f"no DevTools page target at {page_url_prefix}: {targets}")
        address = re.match(r"ws://([^/]+)(/.*)", pages[0]["webSocketDebuggerUrl"])
        host, port = address.group(1).rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=15)
        key = base64.b64encode(os.urandom(16)).decode()
        self.socket.sendall((f"GET {address.group(2)} HTTP/1.1\r\nHost: {address.group(1)}\r\nUpgrade: websocket\r\n"
                             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.socket.recv(1)
        check(head.startswith(b"HTTP/1.1 101"), f"DevTools WebSocket handshake: {head[:80]!r}")
        self.next_id = 0
        self.events = []

    def _receive_exactly(self, count):
        data = b""
        while len(data) < count:
            chunk = self.socket.recv(count - len(data))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            data += chunk
        return data

    def _receive(self):
        message = b""
        while True:
            first, second = self._receive_exactly(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._receive_exactly(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._receive_exactly(8))[0]
            payload = self._receive_exactly(length)
            if first & 0x0F == 0x9:  # ping
                continue
            message += payload
            if first & 0x80:
                return json.loads(message)

    def command(self, method, params=None):
        self.next_id += 1
        body = json.dumps({"id": self.next_id, "method": method, "params": params or {}}).encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(body) < 126:
            header += bytes([0x80 | len(body)])
        elif len(body) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(body))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(body))
        self.socket.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        while True:
            message = self._receive()
            if message.get("id") == self.next_id:
                check("error" not in message, f"{method}: {message.get('error')}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for_event(self, predicate, message, seconds=15):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for event in self.events:
                if predicate(event):
                    return event
            self.socket.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                self.events.append(self._receive())
            except socket.timeout:
                break
        raise AssertionError(message)

    def close(self):
        self.socket.close()


def uuid7():
    """A notification id as Herald makes them (UUIDv7: the time in milliseconds, then random bits)."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
