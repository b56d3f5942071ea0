"""A local webhook receiver: answers with scripted status codes and keeps what it was sent."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, statuses=None, default: int = 200, location: str = ""):
        self.statuses = list(statuses or [])  # answered in order, then `default`
        self.default, self.location = default, location
        self.received: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0))).decode("utf-8")
                with receiver.lock:
                    receiver.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "12")
                self.end_headers()
                self.wfile.write(b"ok from test")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def payloads(self, path: str = "/hook") -> list[dict]:
        with self.lock:
            return [json.loads(r["body"]) for r in self.received if r["path"] == path]
