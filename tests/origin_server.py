#!/usr/bin/python3
# A scriptable HTTP origin for the tests of Corral's `http` origin (Python stdlib only).
# Usage: origin_server.py [PORT]   (0 or nothing: a free port) -- prints the port as its first line.
#
#   POST /_control  {"paths": {"/features/a": RULE, ...}, "default": RULE, "reset": true,
#                    "idle_timeout_ms": n}
#                   merges the rules (reset: forget rules and counters first; idle_timeout_ms:
#                   new connections are closed after n ms without a request, 0: never)
#   GET  /_stats    {"requests": {path: n}, "times": {path: [monotonic seconds of each request]},
#                    "connections": n, "headers": {path: {name: value}},
#                    "not_modified": {path: n (304s sent)}, "full": {path: n (200s sent)}}
# RULE: {"status": 200, "body": "text" ("{n}" becomes the path's request count),
#        "body_size": n (n bytes of "x" instead of body),
#        "delay_ms": n (before answering), "body_delay_ms": n (between the two halves of the body),
#        "reset": true (close with RST, no answer), "close": true (Connection: close),
#        "raw": "bytes" (sent as is instead of a response),
#        "headers": {name: value} (added to the response, e.g. Cache-Control, Surrogate-Key),
#        "etag": "\"v1\"" (sent as ETag; a request whose If-None-Match lists it gets a 304),
#        "last_modified": "HTTP-date" (sent as Last-Modified; an equal If-Modified-Since: 304)}
# Without a rule a path answers 200 with the body "value of <path>". Paths are counted raw
# (percent-encoded as received), so URL escaping is checked by the path a test configures.
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_rules = {}
_default = {}
_requests = {}
_times = {}
_headers = {}
_not_modified = {}
_full = {}
_connections = 0
_idle_timeout = None


def _reset():
    global _default, _connections, _idle_timeout
    _rules.clear()
    _requests.clear()
    _times.clear()
    _headers.clear()
    _not_modified.clear()
    _full.clear()
    _default = {}
    _connections = 0
    _idle_timeout = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless a rule says close

    def setup(self):
        global _connections
        with _lock:
            _connections += 1
            self.timeout = _idle_timeout  # applied to the socket by StreamRequestHandler.setup
        super().setup()
        # Headers and body leave in separate writes: without this, Nagle + delayed ACK add 40ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def handle(self):
        # Clients that time out close their end while we sleep: not an error of the server.
        try:
            super().handle()
        except (ConnectionError, BrokenPipeError, socket.timeout):
            pass

    def _send(self, status, body, close=False, content_type="text/plain", headers=None):
        # A rule's own Date replaces the current one (tests of Expires against Date need it).
        self.send_response_only(status)
        if "Date" not in (headers or {}):
            self.send_header("Date", self.date_time_string())
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global _default, _idle_timeout
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/_control":
            return self._send(404, b"unknown control path")
        with _lock:
            if data.get("reset"):
                _reset()
            _rules.update(data.get("paths") or {})
            if "default" in data:
                _default = data["default"] or {}
            if "idle_timeout_ms" in data:
                _idle_timeout = (data["idle_timeout_ms"] / 1000.0) or None
        self._send(200, b"ok")

    def do_GET(self):
        if self.path == "/_stats":
            with _lock:
                stats = {"requests": dict(_requests), "times": dict(_times),
                         "connections": _connections,
                         "headers": dict(_headers),
                         "not_modified": dict(_not_modified), "full": dict(_full)}
            return self._send(200, json.dumps(stats).encode(), content_type="application/json")
        with _lock:
            _requests[self.path] = _requests.get(self.path, 0) + 1
            _times.setdefault(self.path, []).append(time.monotonic())
            count = _requests[self.path]
            _headers[self.path] = {k.lower(): v for k, v in self.headers.items()}
            rule = dict(_rules.get(self.path, _default))
        self._answer(rule, count)

    def _answer(self, rule, count):
        time.sleep(rule.get("delay_ms", 0) / 1000.0)
        if rule.get("reset"):
            # SO_LINGER 0: close() sends RST instead of FIN, like a crashed or overloaded server.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if "raw" in rule:
            self.wfile.write(rule["raw"].encode("latin-1"))
            self.close_connection = True
            return
        if "body_size" in rule:
            body = b"x" * int(rule["body_size"])
        else:
            body = rule.get("body", "value of " + self.path).replace("{n}", str(count)).encode()
        status = int(rule.get("status", 200))
        headers = self._caching_headers(rule)
        if status == 200 and self._not_modified(rule):
            with _lock:
                _not_modified[self.path] = _not_modified.get(self.path, 0) + 1
            return self._send(304, b"", close=bool(rule.get("close")), headers=headers)
        if status == 200:
            with _lock:
                _full[self.path] = _full.get(self.path, 0) + 1
        delay = rule.get("body_delay_ms", 0) / 1000.0
        if not delay:
            return self._send(status, body, close=bool(rule.get("close")), headers=headers)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if rule.get("close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        half = len(body) // 2
        self.wfile.write(body[:half])
        self.wfile.flush()
        time.sleep(delay)
        self.wfile.write(body[half:])


    @staticmethod
    def _caching_headers(rule):
        headers = dict(rule.get("headers") or {})
        if "etag" in rule:
            headers["ETag"] = rule["etag"]
        if "last_modified" in rule:
            headers["Last-Modified"] = rule["last_modified"]
        return headers

    def _not_modified(self, rule):
        """RFC 9110 section 13.1: If-None-Match wins over If-Modified-Since when both are sent."""
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            tags = [t.strip() for t in if_none_match.split(",")]
            return "etag" in rule and (rule["etag"] in tags or "*" in tags)
        since = self.headers.get("If-Modified-Since")
        return since is not None and since == rule.get("last_modified")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = Server(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
