#!/usr/bin/env python3
"""Issue 37's Web Push egress figures against any herald binary (so that two builds can be compared in one run,
when a release herald-bench with scenarios 11 and 12 is not at hand). Needs Python 3 with `cryptography`, and
openssl on PATH.

  webpush-egress-probe.py memory HERALD [ENDPOINTS]   RSS after each 250 of ENDPOINTS (1,000) distinct endpoints
  webpush-egress-probe.py silent HERALD [SENDS]       another user's send latency while 7 Web Push devices send
                                                      their daily quota (150) to a push service that never answers

The memory probe registers one Web Push device per endpoint https://127.0.0.1:<40000+i>/push/<i> (nothing listens
there: every attempt is refused at once and retried), sends each one notification, 250 endpoints at a time, then all
of them again, and prints Herald's VmRSS after each step. The silent probe's other user is a Web Push device on a push
service (this script's, HTTPS, answering 201) that answers at once; it sends one notification every 200 ms.
"""
import base64, json, os, socket, ssl, subprocess, sys, tempfile, threading, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


KEY = ec.generate_private_key(ec.SECP256R1())
P256DH = b64(KEY.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
AUTH = b64(os.urandom(16))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Herald:
    def __init__(self, binary, directory, extra):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        env.update({
            "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(self.port), "HERALD_LOG_LEVEL": "error",
            "HERALD_ACCESS_LOG": "off", "HERALD_DATABASE_URL": "sqlite:" + os.path.join(directory, "herald.sqlite"),
            "HERALD_REGISTRATIONS_PER_MINUTE": "0", "HERALD_VAPID_SUBJECT": "mailto:probe@herald.test",
            "HERALD_WEBPUSH_ALLOWED_HOSTS": "127.0.0.0/8",
        })
        env.update(extra)
        self.process = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1).read()
                return
            except Exception:
                time.sleep(0.1)
        raise SystemExit("herald did not start")

    def post(self, path, body):
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def register(self, endpoint):
        status, body = self.post("/api/push/register", {
            "platform": "webpush", "subscription": {"endpoint": endpoint, "keys": {"p256dh": P256DH, "auth": AUTH}}})
        assert status == 201, (status, body)
        return body["user_id"]

    def notify(self, user_id):
        return self.post("/api/push/notify", {"user_id": user_id, "title": "Motion", "body": "Garden"})

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
            print("herald stopped within 30 s of SIGTERM")
        except subprocess.TimeoutExpired:
            print("herald did not stop within 30 s of SIGTERM: killed")
            self.process.kill()
            self.process.wait()


def memory(binary, count):
    with tempfile.TemporaryDirectory() as directory:
        herald = Herald(binary, directory, {})
        with ThreadPoolExecutor(16) as pool:
            users = list(pool.map(lambda i: herald.register(f"https://127.0.0.1:{40000 + i}/push/{i}"), range(count)))
            time.sleep(2)
            print(f"RSS after registering {count} devices: {rss_mb(herald.process.pid):.1f} MB", flush=True)
            steps = [(f"RSS after sending to endpoints 1-{min(count, s + 250)}", users[s:s + 250]) for s in range(0, count, 250)]
            steps.append((f"RSS after sending to all {count} endpoints again", users))
            for name, chunk in steps:
                list(pool.map(herald.notify, chunk))
                time.sleep(5)
                print(f"{name}: {rss_mb(herald.process.pid):.1f} MB", flush=True)
        alive = herald.process.poll() is None
        herald.stop()
        print(f"herald alive at the end: {alive}")


class PushService(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(201)
        self.send_header("Location", "/message/1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def fast_push_service(directory):
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), PushService)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], cert


def silent_listener():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    held = []

    def accept():
        while True:
            connection, _ = listener.accept()
            held.append(connection)  # kept open, never answered

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], held


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def victim_run(herald, user, sends, label):
    latencies, delivered = [], 0
    for _ in range(sends):
        started = time.monotonic()
        status, body = herald.notify(user)
        elapsed = time.monotonic() - started
        if status == 201:
            latencies.append(elapsed * 1000)
            delivered += body.get("status") == "delivered"
        time.sleep(max(0, 0.2 - elapsed))
    print(f"{label}: p50 {percentile(latencies, 50):.1f} ms, p95 {percentile(latencies, 95):.1f} ms, "
          f"p99 {percentile(latencies, 99):.1f} ms, delivered {delivered} of {sends}", flush=True)


def silent(binary, sends):
    with tempfile.TemporaryDirectory() as directory:
        fast_port, cert = fast_push_service(directory)
        silent_port, held = silent_listener()
        herald = Herald(binary, directory, {"HERALD_RATE_LIMIT_DAILY": "150", "HERALD_WEBPUSH_CA_PATH": cert})
        victim = herald.register(f"https://127.0.0.1:{fast_port}/push/victim")
        senders = [herald.register(f"https://127.0.0.1:{silent_port}/push/{i}") for i in range(7)]
        victim_run(herald, victim, sends, "another user's sends, no silent host")
        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(lambda i: herald.notify(senders[i % 7])[0], range(7 * 150)))
        print(f"Web Push sends to the silent host accepted: {answers.count(201)} of {len(answers)}", flush=True)
        victim_run(herald, victim, sends, "another user's sends, silent host")
        print(f"connections the silent host holds: {len(held)}")
        alive = herald.process.poll() is None
        herald.stop()
        print(f"herald alive at the end: {alive}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("memory", "silent"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "memory":
        memory(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1000)
    else:
        silent(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100)
