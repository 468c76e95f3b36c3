#!/usr/bin/env python3
"""A webhook server for Estuary's integration tests: the operator's backend that
admits, refuses, answers slowly or fails, as the path of each hook URL says.

    hook_server.py --log FILE [--port 0] [--slow-seconds 3] [--ready-file PATH]

Paths (the first element decides; the rest is free, e.g. /admit/on_publish):

  /admit/...    200 with an empty JSON object: admitted
  /refuse/...   403 with a JSON error: refused
  /slow/...     waits --slow-seconds, then 200
  /flaky/...    500 to the first request of each path, 200 to the next ones
  /broken/...   200 with a body that is not JSON (still admitted: 2xx admits)
  /rename/...?name=N     200 with {"name": N}: publish under another name
  /redirect/...?to=URL   200 with {"redirect": URL}: send the client there

Every request is appended to the log as one JSON line, {"path": ..., "body": ...},
flushed at once, before the answer is sent. When ready it prints
`listening HOST:PORT` on stdout and, with --ready-file, writes the same line to
that file (atomically, via rename). SIGTERM or SIGINT stops it with status 0.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY_BYTES = 1 << 20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    parser.add_argument("--ready-file")
    args = parser.parse_args()

    lock = threading.Lock()
    seen = set()
    log = open(args.log, "a", encoding="utf-8")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The head and the body are two writes: with Nagle's algorithm the body would wait
        # for the node's delayed ACK of the head (40 ms), which a real backend does not add.
        disable_nagle_algorithm = True

        def log_message(self, *_):
            pass

        def do_POST(self):
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            kind = urlsplit(self.path).path.strip("/").split("/")[0]
            with lock:
                log.write(json.dumps({"path": self.path, "body": body, "time": time.time()}) + "\n")
                log.flush()
                first = self.path not in seen
                seen.add(self.path)
            if kind == "refuse":
                self.answer(403, b'{"error": "not allowed by the test backend"}')
            elif kind == "slow":
                time.sleep(args.slow_seconds)
                self.answer(200, b"{}")
            elif kind == "flaky" and first:
                self.answer(500, b'{"error": "try again"}')
            elif kind == "broken":
                self.answer(200, b"this is not json")
            elif kind in ("rename", "redirect"):
                query = parse_qs(urlsplit(self.path).query)
                key, field = ("name", "name") if kind == "rename" else ("to", "redirect")
                self.answer(200, json.dumps({field: query.get(key, [""])[0]}).encode())
            else:
                self.answer(200, b"{}")

        def answer(self, status, body):
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the node gave up waiting (its timeout): nothing to answer

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    line = f"listening {host}:{port}"
    print(line, flush=True)
    if args.ready_file:
        temporary = args.ready_file + ".tmp"
        with open(temporary, "w", encoding="utf-8") as ready:
            ready.write(line + "\n")
        os.replace(temporary, args.ready_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.2)
    log.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
