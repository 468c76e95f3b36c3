#!/usr/bin/env python3
"""An HTTP-FLV viewer that measures a failover, for scripts/bench-cluster.sh (stdlib only).

    failover_probe.py URL --mark FILE --duration SECONDS [--label NAME] [--reconnect]

It plays URL (HTTP/1.1 GET over a socket; a chunked or a plain body), walks the FLV tags
as they arrive and notes, for each video tag, its arrival (time.monotonic()) and its
timestamp. The mark is FILE appearing (the benchmark creates it right after `kill -9` of
the transcoder): the probe polls for it every 5 ms and takes its own clock's reading then,
since the shell and python share no monotonic clock.

After --duration seconds it prints one JSON line:
  recoveryMs        mark -> the first video keyframe that is new output: its timestamp is
                    above every video timestamp that arrived before the mark (plus --grace-ms,
                    the dead transcoder's frames still in flight), or, with --reconnect, any
                    keyframe on a connection opened after the mark (`recoveredOn` says which);
                    null if none came
  firstFrameMs      the same for any video frame (keyframe or not)
  longestGapMs      the longest wall-clock gap between two video tags in the whole run
                    (across reconnects), and where it ended relative to the mark
  regressions       video timestamps below the previous one on the same connection
  maxTsJumpMs       the largest forward step between consecutive video timestamps on a
                    connection (continuity: ~33 ms at 30 fps)
  dropped           a connection ended (EOF or error) before --duration; droppedAtMs is
                    relative to the mark (negative: before it)
Sequence headers (AVC/HEVC configuration, Enhanced RTMP SequenceStart) are counted apart and
left out of the timestamp and gap figures. Everything is bounded: connect and header
timeouts, and the whole run by --duration.
"""

import argparse
import json
import os
import select
import socket
import sys
import time
from urllib.parse import urlsplit

MARK_POLL = 0.005
CONNECT_TIMEOUT = 3.0
HEADER_TIMEOUT = 5.0
MAX_HEADER_BYTES = 64 * 1024
RECONNECT_DELAY = 0.1


class Closed(Exception):
    """The server ended the response (EOF, a last chunk, or a framing error)."""


def parse_head(head):
    """A complete HTTP response head: its status code, status line, lower-cased headers, and
    where the body starts in `head`."""
    end = head.index(b"\r\n\r\n")
    lines = bytes(head[:end]).decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip().lower()
    return (status[1] if len(status) > 1 else "?"), lines[0], headers, end + 4


class Body:
    """De-chunks an HTTP body incrementally (or passes a plain body through)."""

    def __init__(self, chunked):
        self.chunked = chunked
        self.raw = bytearray()
        self.state = "size"
        self.remaining = 0

    def feed(self, data):
        """Returns the body bytes that `data` completes; raises Closed at the last chunk."""
        if not self.chunked:
            return bytes(data)
        self.raw += data
        out = bytearray()
        pos = 0
        raw = self.raw
        while True:
            if self.state == "size":
                end = raw.find(b"\r\n", pos)
                if end < 0:
                    if len(raw) - pos > 1024:
                        raise Closed("bad chunk size line")
                    break
                line = bytes(raw[pos:end]).split(b";", 1)[0].strip()
                try:
                    size = int(line, 16)
                except ValueError:
                    raise Closed(f"bad chunk size {line[:20]!r}")
                pos = end + 2
                if size == 0:
                    del raw[:pos]
                    raise Closed("last chunk")
                self.remaining = size
                self.state = "data"
            elif self.state == "data":
                take = min(self.remaining, len(raw) - pos)
                if take == 0:
                    break
                out += raw[pos:pos + take]
                pos += take
                self.remaining -= take
                if self.remaining == 0:
                    self.state = "crlf"
            else:  # the CRLF after a chunk's data
                if len(raw) - pos < 2:
                    break
                if raw[pos:pos + 2] != b"\r\n":
                    raise Closed("missing CRLF after a chunk")
                pos += 2
                self.state = "size"
        del raw[:pos]
        return bytes(out)


class FLV:
    """Walks FLV tags incrementally; calls on_video(arrival, ts, keyframe, sequence_header)."""

    def __init__(self, on_video):
        self.buf = bytearray()
        self.header_done = False
        self.on_video = on_video
        self.tags = 0

    def feed(self, data, arrival):
        self.buf += data
        buf = self.buf
        pos = 0
        if not self.header_done:
            if len(buf) < 9:
                return
            if buf[:3] != b"FLV":
                raise Closed("not FLV")
            offset = int.from_bytes(buf[5:9], "big")
            if offset < 9 or offset > 1024:
                raise Closed(f"bad FLV header size {offset}")
            if len(buf) < offset + 4:
                return
            pos = offset + 4  # the header and PreviousTagSize0
            self.header_done = True
        while len(buf) - pos >= 11:
            kind = buf[pos] & 0x1F
            size = int.from_bytes(buf[pos + 1:pos + 4], "big")
            if len(buf) - pos < 11 + size + 4:
                break
            ts = int.from_bytes(buf[pos + 4:pos + 7], "big") | (buf[pos + 7] << 24)
            if kind == 9 and size >= 1:
                first = buf[pos + 11]
                keyframe = ((first >> 4) & 0x7) == 1
                if first & 0x80:  # Enhanced RTMP: the packet type is the low nibble
                    sequence_header = (first & 0x0F) == 0
                else:  # AVC (7) / HEVC (12): AVCPacketType 0 is the configuration record
                    sequence_header = (first & 0x0F) in (7, 12) and size >= 2 and buf[pos + 12] == 0
                self.on_video(arrival, ts, keyframe, sequence_header)
            self.tags += 1
            pos += 11 + size + 4
        del buf[:pos]


class Probe:
    def __init__(self, args):
        self.args = args
        self.url = urlsplit(args.url)
        if self.url.scheme != "http" or not self.url.hostname:
            raise SystemExit(f"failover_probe: not an http:// URL: {args.url}")
        self.start = time.monotonic()
        self.deadline = self.start + args.duration
        self.mark = None
        self.next_mark_check = 0.0
        self.errors = []
        self.connections = 0
        self.bytes = 0
        self.dropped_at = None
        self.drops = 0
        # Video figures.
        self.frames = 0
        self.frames_before_mark = 0
        self.keyframes = 0
        self.sequence_headers = 0
        self.sequence_headers_after_mark = 0
        self.baseline = None  # the highest video timestamp that arrived before mark + grace
        self.recovery = None
        self.recovered_on = None
        self.first_frame = None
        self.last_arrival = None
        self.longest_gap = 0.0
        self.longest_gap_end = None
        self.regressions = 0
        self.max_jump = 0
        self.conn_last_ts = None
        self.conn_opened = None

    # --- the mark -----------------------------------------------------------------------
    def poll_mark(self, now):
        if self.mark is None and now >= self.next_mark_check:
            self.next_mark_check = now + MARK_POLL
            if os.path.exists(self.args.mark):
                self.mark = time.monotonic()

    # --- video tags ---------------------------------------------------------------------
    def on_video(self, arrival, ts, keyframe, sequence_header):
        after_mark = self.mark is not None and arrival >= self.mark
        if sequence_header:
            self.sequence_headers += 1
            if after_mark:
                self.sequence_headers_after_mark += 1
            return
        self.frames += 1
        if keyframe:
            self.keyframes += 1
        if self.last_arrival is not None:
            gap = arrival - self.last_arrival
            if gap > self.longest_gap:
                self.longest_gap = gap
                self.longest_gap_end = arrival
        self.last_arrival = arrival
        if self.conn_last_ts is not None:
            if ts < self.conn_last_ts:
                self.regressions += 1
            else:
                self.max_jump = max(self.max_jump, ts - self.conn_last_ts)
        self.conn_last_ts = ts
        in_flight = self.mark is None or arrival < self.mark + self.args.grace_ms / 1000
        if in_flight:
            if not after_mark:
                self.frames_before_mark += 1
            self.baseline = ts if self.baseline is None else max(self.baseline, ts)
            return
        newer = self.baseline is None or ts > self.baseline
        reconnected = self.args.reconnect and self.conn_opened is not None and self.conn_opened > self.mark
        if not (newer or reconnected):
            return
        if self.first_frame is None:
            self.first_frame = arrival - self.mark
        if keyframe and self.recovery is None:
            self.recovery = arrival - self.mark
            self.recovered_on = "same-connection" if newer and not reconnected else "reconnect"

    # --- one connection -----------------------------------------------------------------
    def connect(self):
        """Opens the stream; returns (socket, Body, leftover body bytes) or raises OSError/Closed."""
        host, port = self.url.hostname, self.url.port or 80
        path = self.url.path or "/"
        if self.url.query:
            path += "?" + self.url.query
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        try:
            sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: estuary-failover-probe\r\n"
                          "Accept: */*\r\nConnection: close\r\n\r\n").encode())
            head = bytearray()
            limit = min(time.monotonic() + HEADER_TIMEOUT, self.deadline)
            while b"\r\n\r\n" not in head:
                now = time.monotonic()
                self.poll_mark(now)
                if now >= limit or len(head) > MAX_HEADER_BYTES:
                    raise Closed("no response head in time")
                ready, _, _ = select.select([sock], [], [], min(MARK_POLL, limit - now))
                if ready:
                    data = sock.recv(65536)
                    if not data:
                        raise Closed("closed before the response head")
                    head += data
            code, status_line, headers, body_start = parse_head(head)
            if code != "200":
                raise Closed(f"HTTP {status_line!r}")
            chunked = "chunked" in headers.get("transfer-encoding", "")
            return sock, Body(chunked), bytes(head[body_start:])
        except BaseException:
            sock.close()
            raise

    def play(self, sock, body, leftover):
        """Reads until the deadline (returns True) or until the stream ends (returns False)."""
        flv = FLV(self.on_video)
        self.conn_last_ts = None
        self.conn_opened = time.monotonic()
        sock.setblocking(False)
        pending = leftover
        while True:
            now = time.monotonic()
            self.poll_mark(now)
            if pending:
                flv.feed(body.feed(pending), now)
                pending = b""
            if now >= self.deadline:
                return True
            wait = MARK_POLL if self.mark is None else 0.1
            ready, _, _ = select.select([sock], [], [], max(0.0, min(wait, self.deadline - now)))
            if not ready:
                continue
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            if not data:
                raise Closed("EOF")
            self.bytes += len(data)
            pending = data

    def run(self):
        while time.monotonic() < self.deadline:
            try:
                sock, body, leftover = self.connect()
            except (OSError, Closed) as error:
                self.note_error(f"connect: {error}")
                if not self.args.reconnect and self.connections > 0:
                    break
                self.wait_until(time.monotonic() + RECONNECT_DELAY)
                continue
            self.connections += 1
            try:
                if self.play(sock, body, leftover):
                    break
            except (OSError, Closed) as error:
                now = time.monotonic()
                self.drops += 1
                if self.dropped_at is None:
                    self.dropped_at = now
                self.note_error(f"connection {self.connections} ended: {error}")
            finally:
                sock.close()
            if not self.args.reconnect:
                break
            self.wait_until(time.monotonic() + RECONNECT_DELAY)
        # Without --reconnect a drop ends the viewing; still wait for the mark, to place the drop.
        if self.mark is None:
            self.wait_until(self.deadline)

    def wait_until(self, until):
        until = min(until, self.deadline)
        while True:
            now = time.monotonic()
            self.poll_mark(now)
            if now >= until:
                return
            time.sleep(min(MARK_POLL, until - now))

    def note_error(self, text):
        if len(self.errors) < 20 and (not self.errors or self.errors[-1][1] != text):
            self.errors.append((time.monotonic(), text))

    def report(self):
        reference = self.mark if self.mark is not None else self.start

        def ms(seconds):
            return None if seconds is None else round(seconds * 1000, 1)

        def at(instant):
            return None if instant is None else round((instant - reference) * 1000, 1)

        return {
            "label": self.args.label,
            "url": self.args.url,
            "markSeen": self.mark is not None,
            "markAtSeconds": None if self.mark is None else round(self.mark - self.start, 3),
            "recoveryMs": ms(self.recovery),
            "recoveredOn": self.recovered_on,
            "firstFrameMs": ms(self.first_frame),
            "longestGapMs": ms(self.longest_gap) if self.frames > 1 else None,
            "longestGapEndMs": at(self.longest_gap_end),
            "regressions": self.regressions,
            "maxTsJumpMs": self.max_jump,
            "dropped": self.drops > 0,
            "droppedAtMs": at(self.dropped_at),
            "connections": self.connections,
            "videoFrames": self.frames,
            "framesBeforeMark": self.frames_before_mark,
            "keyframes": self.keyframes,
            "sequenceHeaders": self.sequence_headers,
            "sequenceHeadersAfterMark": self.sequence_headers_after_mark,
            "bytes": self.bytes,
            "graceMs": self.args.grace_ms,
            "durationSeconds": self.args.duration,
            "errors": [f"{at(when)} ms: {text}" for when, text in self.errors],
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--mark", required=True, help="the file whose appearance is the kill")
    parser.add_argument("--duration", type=float, required=True, help="seconds to play in all")
    parser.add_argument("--label", default="")
    parser.add_argument("--grace-ms", type=float, default=100.0,
                        help="frames arriving this long after the mark still count as the old output (default 100)")
    parser.add_argument("--reconnect", action="store_true",
                        help="reopen the stream (every 100 ms) when it ends before --duration")
    args = parser.parse_args()
    if not 0 < args.duration <= 3600:
        parser.error("--duration must be within (0, 3600]")
    probe = Probe(args)
    try:
        probe.run()
    except KeyboardInterrupt:
        probe.note_error("interrupted")
    print(json.dumps(probe.report()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
