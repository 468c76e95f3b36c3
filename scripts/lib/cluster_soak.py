#!/usr/bin/env python3
"""The cluster soak's load and report, for scripts/bench-cluster-soak.sh (stdlib only).

    cluster_soak.py run --dir DIR --t0 EPOCH --duration S --ingest rtmp://… --relays relay-1=http://…,relay-2=http://…
                        --clip FILE --viewers N --rungs 360p,240p --seed N [--publish 120:300] [--pause 10:30]
    cluster_soak.py placement URL --transcoders transcode-1,transcode-2 --prefer transcode-1
    cluster_soak.py report DIR

`run` is the load, for DURATION seconds from t0 (wall clock, time.time(), shared with the
shell script's $EPOCHREALTIME):

* one publisher per stream (abr/soak1…): `ffmpeg -re -stream_loop -1 -i CLIP -c copy` to the
  ingest for a random --publish seconds, then a pause of a random --pause seconds, again;
  each stream has its own random.Random seeded from --seed, and both lengths are drawn
  before each session, so the schedule is the same on every run;
* N HTTP-FLV viewers, spread evenly over the streams, their renditions (the source and the
  rungs) and the relays (viewer i: relay i % R, stream i % S, rendition (i + i // 6) % 3 for
  three renditions; see spread()). A viewer plays until the run ends: a stream that ends or
  fails is asked for again (every 1 s while it answers 404 or 503, every 0.5 s while the
  relay refuses connections); a connection that carries nothing for 30 s is closed (a
  stall);
* a watcher that tails DIR/events.tsv for the script's `kill` lines: for every rung viewer of
  a stream the killed transcoder ran, the failover time is the kill -> the first video
  keyframe that is new output (its timestamp above every one that arrived before the kill,
  plus 100 ms of frames in flight, or any keyframe on a connection opened after the kill),
  as scripts/lib/failover_probe.py measures it.

It writes DIR/publishers.json and DIR/viewers.json (every connection, every gap > 500 ms
between two video frames of a viewer, across reconnects too, and every failover) at the end,
or on SIGTERM / SIGINT.

`placement` asks the coordinator's admin API (bearer ESTUARY_ADMIN_TOKEN from the
environment) which transcoder runs which abr stream and prints one line:
`victim<TAB>streams-on-it<TAB>streams-without-a-transcoder<TAB>placement`, the victim being
the transcoder with most renditions (ties and failures: --prefer).

`report` reads DIR (run.json, events.tsv, rss.tsv, machine.tsv, publishers.json,
viewers.json), prints the summary in markdown and exits 1 when the soak fails: a viewer
dropped for no known cause, a process that exited on its own, or RSS that is not flat.
"""

import argparse
import collections
import ctypes
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from failover_probe import FLV, Body, Closed, parse_head  # noqa: E402  (the same HTTP head, FLV walking and de-chunking)

GAP_SECONDS = 0.5            # a longer wait between two video frames is a gap
STALL_SECONDS = 30.0         # a connection without a byte for this long is closed (a stall)
CONNECT_TIMEOUT = 3.0
HEADER_TIMEOUT = 5.0
RECV_TIMEOUT = 0.25
FAILOVER_GRACE = 0.1         # frames arriving this long after a kill still count as the old output
FAILOVER_LIMIT = 60.0        # a failover not recovered by then is "not recovered"
HISTORY = 600                # video frames a viewer remembers (20 s at 30 fps), to place a kill
# Classification (report): a gap is put down to what happened when it began (its last frame
# before it), an end to what happened when it ended, within these windows:
CHURN_BEFORE, CHURN_AFTER = 1.0, 15.0   # its publisher's pause: [stop − 1 s, return + 15 s]
KILL_BEFORE, KILL_AFTER = 0.5, 10.0     # a transcoder kill (rung viewers of a stream it ran): [kill − 0.5 s, kill + 10 s]
RELAY_BEFORE, RELAY_AFTER = 1.0, 1.0    # the relay restart (its viewers): [SIGTERM − 1 s, ready again + 1 s]
# RSS flatness (report): per process instance, the mean of its samples in the run's last
# third (and past its own warm-up) against the mean of its samples aged WARM_FROM…WARM_TO
# (5–10 min, or a sixth to a third of shorter runs): flat when it grew by at most
# RSS_ALLOW_FRACTION (10 %) or RSS_ALLOW_KIB (2 MiB, for the small processes), whichever is more.
RSS_ALLOW_FRACTION = 0.10
RSS_ALLOW_KIB = 2048


def now():
    return time.time()


def log(text):
    print(f"[cluster-soak {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# ==================================================================================== run

def parent_death_signal():
    """ffmpeg children die with this process (PR_SET_PDEATHSIG), whatever ends it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


class Publisher(threading.Thread):
    def __init__(self, stream, url, clip, seed, publish, pause, deadline, stop, logdir):
        super().__init__(name=f"publisher-{stream}", daemon=True)
        self.stream, self.url, self.clip = stream, url, clip
        self.rng = random.Random(f"{seed}/{stream}")
        self.publish, self.pause = publish, pause
        self.deadline, self.stop = deadline, stop
        self.log_path = os.path.join(logdir, f"publisher-{stream}.log")
        self.sessions = []
        self.live = False

    def run(self):
        with open(self.log_path, "ab") as log_file:
            while not self.stop.is_set() and now() < self.deadline:
                length = self.rng.uniform(*self.publish)
                pause = self.rng.uniform(*self.pause)
                session = {"start": now(), "planned": round(length, 1), "plannedPause": round(pause, 1)}
                self.sessions.append(session)
                process = subprocess.Popen(
                    ["ffmpeg", "-nostdin", "-loglevel", "warning", "-re", "-stream_loop", "-1", "-i", self.clip,
                     "-c", "copy", "-f", "flv", self.url],
                    stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, preexec_fn=parent_death_signal)
                self.live = True
                end_at = min(session["start"] + length, self.deadline)
                while now() < end_at and process.poll() is None and not self.stop.is_set():
                    time.sleep(0.1)
                session["early"] = process.poll() is not None
                if process.poll() is None:
                    process.terminate()  # ffmpeg ends the FLV and closes the connection on SIGTERM
                    try:
                        process.wait(5)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait(5)
                session["stop"] = now()
                session["exit"] = process.returncode
                self.live = False
                if session["early"]:
                    log(f"{self.stream}: the publisher exited by itself after {session['stop'] - session['start']:.1f} s "
                        f"(exit {process.returncode}; {self.log_path})")
                resume = min(session["stop"] + pause, self.deadline)
                while now() < resume and not self.stop.is_set():
                    time.sleep(0.1)


class Failover:
    """One kill as one rung viewer saw it (failover_probe.py's measure)."""

    def __init__(self, kill, viewer):
        self.kill = kill
        t = kill["t"]
        before = [f for f in viewer.history if f[0] < t]
        last = before[-1] if before else None
        self.receiving = last is not None and last[0] >= t - 2.0
        self.conn = last[3] if last else None
        self.baseline = None
        self.recovery = None
        self.first_frame = None
        self.reconnected = None
        self.done = not self.receiving
        for frame in viewer.history:
            self.feed(frame)

    def feed(self, frame):
        if self.done:
            return
        arrival, ts, keyframe, conn = frame
        t = self.kill["t"]
        if arrival < t + FAILOVER_GRACE:
            if conn == self.conn:
                self.baseline = ts if self.baseline is None else max(self.baseline, ts)
            return
        if arrival > t + FAILOVER_LIMIT:
            self.done = True
            return
        newer = conn != self.conn or self.baseline is None or ts > self.baseline
        if not newer:
            return
        if self.first_frame is None:
            self.first_frame = arrival - t
        if keyframe:
            self.recovery = arrival - t
            self.reconnected = conn != self.conn
            self.done = True

    def expire(self, at):
        if not self.done and at > self.kill["t"] + FAILOVER_LIMIT:
            self.done = True

    def record(self):
        return {"kill": self.kill["id"], "t": self.kill["t"], "victim": self.kill["victim"], "receiving": self.receiving,
                "recoveryMs": None if self.recovery is None else round(self.recovery * 1000, 1),
                "firstFrameMs": None if self.first_frame is None else round(self.first_frame * 1000, 1),
                "reconnected": self.reconnected}


class HTTPStatus(Exception):
    def __init__(self, code):
        super().__init__(f"HTTP {code}")
        self.code = code


class Viewer(threading.Thread):
    def __init__(self, index, stream, rendition, relay, base, deadline, stop, kills):
        super().__init__(name=f"viewer-{index}", daemon=True)
        self.index, self.stream, self.rendition, self.relay = index, stream, rendition, relay
        path = f"/abr/{stream}.flv" if rendition == "source" else f"/abr/{stream}/{rendition}.flv"
        self.url = base + path
        split = urlsplit(self.url)
        self.host, self.port, self.path = split.hostname, split.port or 80, split.path
        self.deadline, self.stop, self.kills = deadline, stop, kills
        self.conns = []
        self.conn = None
        self.attempts = collections.Counter()
        self.gaps = []
        self.last_video = None
        self.last_video_conn = None
        self.history = collections.deque(maxlen=HISTORY)
        self.kills_seen = 0
        self.trackers = []
        self.failovers = []

    # --- kills ------------------------------------------------------------------------
    def check_kills(self):
        while self.kills_seen < len(self.kills):
            kill = self.kills[self.kills_seen]
            self.kills_seen += 1
            if self.rendition == "source":
                continue
            if kill["streams"] is not None and self.stream not in kill["streams"] | kill["unplaced"]:
                continue
            tracker = Failover(kill, self)
            self.failovers.append(tracker)
            if not tracker.done:
                self.trackers.append(tracker)
        if self.trackers:
            at = now()
            for tracker in self.trackers:
                tracker.expire(at)
            self.trackers = [t for t in self.trackers if not t.done]

    # --- video ------------------------------------------------------------------------
    def on_video(self, arrival, ts, keyframe, sequence_header):
        conn = self.conn
        if sequence_header:
            conn["sequenceHeaders"] += 1
            return
        conn["frames"] += 1
        if keyframe:
            conn["keyframes"] += 1
        if conn["firstVideo"] is None:
            conn["firstVideo"] = arrival
        last_ts = conn["lastTs"]
        if last_ts is not None:
            if ts < last_ts:
                conn["regressions"] += 1
            else:
                conn["maxStepMs"] = max(conn["maxStepMs"], ts - last_ts)
        conn["lastTs"] = ts
        conn["lastVideo"] = arrival
        if self.last_video is not None and arrival - self.last_video > GAP_SECONDS:
            self.gaps.append({"start": self.last_video, "end": arrival,
                              "acrossReconnect": self.last_video_conn != conn["id"]})
        self.last_video = arrival
        self.last_video_conn = conn["id"]
        frame = (arrival, ts, keyframe, conn["id"])
        self.history.append(frame)
        for tracker in self.trackers:
            tracker.feed(frame)

    # --- one connection ---------------------------------------------------------------
    def open(self):
        sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        try:
            sock.settimeout(RECV_TIMEOUT)
            sock.sendall((f"GET {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                          "User-Agent: estuary-cluster-soak\r\nAccept: */*\r\nConnection: close\r\n\r\n").encode())
            head = bytearray()
            limit = min(now() + HEADER_TIMEOUT, self.deadline)
            while b"\r\n\r\n" not in head:
                if now() >= limit or len(head) > 65536 or self.stop.is_set():
                    raise Closed("no response head in time")
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    raise Closed("closed before the response head")
                head += data
            code, _, headers, body_start = parse_head(head)
            if code != "200":
                raise HTTPStatus(code)
            return sock, Body("chunked" in headers.get("transfer-encoding", "")), bytes(head[body_start:])
        except BaseException:
            sock.close()
            raise

    def play(self, sock, body, leftover):
        """Returns "deadline" when the run ended; raises Closed / OSError when the stream did."""
        flv = FLV(self.on_video)
        last_data = now()
        if leftover:
            flv.feed(body.feed(leftover), last_data)
        while True:
            self.check_kills()
            at = now()
            if at >= self.deadline or self.stop.is_set():
                return "deadline"
            if at - last_data > STALL_SECONDS:
                raise Closed(f"stall: nothing for {STALL_SECONDS:.0f} s")
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            arrival = now()
            if not data:
                raise Closed("EOF without the last chunk")
            last_data = arrival
            self.conn["bytes"] += len(data)
            flv.feed(body.feed(data), arrival)

    def run(self):
        while not self.stop.is_set() and now() < self.deadline:
            self.check_kills()
            opened = now()
            try:
                sock, body, leftover = self.open()
            except HTTPStatus as status:
                self.attempts[f"http {status.code}"] += 1
                self.pause(1.0)
                continue
            except ConnectionRefusedError:
                self.attempts["refused"] += 1
                self.pause(0.5)
                continue
            except (OSError, Closed) as error:
                self.attempts[f"error: {type(error).__name__}: {error}"[:80]] += 1
                self.pause(1.0)
                continue
            self.attempts["200"] += 1
            self.conn = {"id": len(self.conns), "opened": opened, "firstVideo": None, "lastVideo": None,
                         "closed": None, "end": None, "frames": 0, "keyframes": 0, "sequenceHeaders": 0,
                         "bytes": 0, "regressions": 0, "maxStepMs": 0, "lastTs": None}
            self.conns.append(self.conn)
            try:
                self.play(sock, body, leftover)
                self.conn["end"] = "deadline"
            except (OSError, Closed) as error:
                text = str(error) or type(error).__name__
                self.conn["end"] = "end" if text == "last chunk" else text
            finally:
                self.conn["closed"] = now()
                sock.close()
            self.pause(0.2)
        self.check_kills()

    def pause(self, seconds):
        until = min(now() + seconds, self.deadline)
        while not self.stop.is_set() and now() < until:
            self.check_kills()
            time.sleep(min(0.1, max(0.0, until - now())))

    def record(self):
        conns = [{k: v for k, v in c.items() if k != "lastTs"} for c in self.conns]
        return {"index": self.index, "stream": self.stream, "rendition": self.rendition, "relay": self.relay,
                "url": self.url, "connections": conns, "attempts": dict(self.attempts), "gaps": self.gaps,
                "lastVideo": self.last_video, "failovers": [t.record() for t in self.failovers]}


def spread(count, streams, renditions, relays):
    """Viewer i's (stream, rendition, relay): every run of 6 (with 2 relays, 3 streams, 3 renditions)
    covers each relay 3 times and each stream and rendition twice; every 18 covers each combination once."""
    out = []
    for i in range(count):
        stream = streams[i % len(streams)]
        rendition = renditions[(i + i // (len(streams) * len(relays))) % len(renditions)]
        relay = relays[i % len(relays)]
        out.append((stream, rendition, relay))
    return out


class EventTail(threading.Thread):
    """Tails events.tsv for the script's kills: `epoch kill victim pid streams=a,b;unplaced=c`."""

    def __init__(self, path, kills, stop):
        super().__init__(name="events", daemon=True)
        self.path, self.kills, self.stop = path, kills, stop

    def run(self):
        offset, partial = 0, b""
        while not self.stop.is_set():
            try:
                with open(self.path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
                    offset += len(data)
            except OSError:
                data = b""
            partial += data
            *lines, partial = partial.split(b"\n")
            for line in lines:
                event = parse_event(line.decode("utf-8", "replace"))
                if event and event["kind"] == "kill":
                    self.kills.append(kill_from_event(event, len(self.kills) + 1))
            time.sleep(0.02)


def parse_event(line):
    fields = line.rstrip("\n").split("\t")
    if len(fields) < 2:
        return None
    try:
        t = float(fields[0])
    except ValueError:
        return None
    fields += [""] * (5 - len(fields))
    return {"t": t, "kind": fields[1], "node": fields[2], "pid": fields[3], "extra": fields[4]}


def extra_fields(extra):
    out = {}
    for part in extra.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    return out


def kill_from_event(event, number):
    extra = extra_fields(event["extra"])
    known = extra.get("known") == "1"
    streams = set(filter(None, extra.get("streams", "").split(",")))
    unplaced = set(filter(None, extra.get("unplaced", "").split(",")))
    return {"id": number, "t": event["t"], "victim": event["node"],
            "streams": streams if known else None, "unplaced": unplaced}


def run(args):
    t0 = args.t0
    deadline = t0 + args.duration
    stop = threading.Event()
    streams = [f"soak{i}" for i in range(1, args.streams + 1)]
    relays = [part.split("=", 1) for part in args.relays.split(",")]
    renditions = ["source"] + [r for r in args.rungs.split(",") if r]
    publish = tuple(float(x) for x in args.publish.split(":"))
    pause = tuple(float(x) for x in args.pause.split(":"))
    kills = []

    def on_signal(signum, _frame):
        log(f"signal {signum}: stopping")
        stop.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    # Publishers go on a second past the viewers, so the end of the run is no pause.
    publishers = [Publisher(s, f"{args.ingest}/abr/{s}", args.clip, args.seed, publish, pause, deadline + 1.0, stop, args.dir)
                  for s in streams]
    viewers = [Viewer(i, s, r, relay, dict(relays)[relay], deadline, stop, kills)
               for i, (s, r, relay) in enumerate(spread(args.viewers, streams, renditions, [name for name, _ in relays]))]
    tail = EventTail(os.path.join(args.dir, "events.tsv"), kills, stop)
    tail.start()
    for p in publishers:
        p.start()
    for v in viewers:
        v.start()
    log(f"{len(publishers)} publishers, {len(viewers)} viewers until {time.strftime('%H:%M:%S', time.localtime(deadline))}")
    next_progress = now() + 60
    while now() < deadline + 2 and not stop.is_set():
        time.sleep(0.2)
        if now() >= next_progress:
            next_progress += 60
            playing = sum(1 for v in viewers if v.last_video is not None and now() - v.last_video < 2)
            log(f"t={now() - t0:.0f}s: {sum(p.live for p in publishers)}/{len(publishers)} publishing, "
                f"{playing}/{len(viewers)} viewers with video in the last 2 s, "
                f"{sum(len(v.gaps) for v in viewers)} gaps, "
                f"{sum(1 for v in viewers for c in v.conns if c['end'] not in (None, 'deadline'))} ends, {len(kills)} kills")
    stop.set()
    for thread in viewers + publishers:
        thread.join(10)
    with open(os.path.join(args.dir, "publishers.json"), "w") as f:
        json.dump({p.stream: p.sessions for p in publishers}, f)
    with open(os.path.join(args.dir, "viewers.json"), "w") as f:
        json.dump([v.record() for v in viewers], f)
    with open(os.path.join(args.dir, "load.json"), "w") as f:
        json.dump({"stoppedAt": min(now(), deadline), "complete": now() >= deadline}, f)
    log("wrote publishers.json and viewers.json")


# ============================================================================== placement

def placement(args):
    transcoders = [t for t in args.transcoders.split(",") if t]
    on = {t: set() for t in transcoders}
    count = collections.Counter()
    unplaced = set()
    summary = []
    known = 0
    try:
        request = urllib.request.Request(args.url, headers={"Authorization": "Bearer " + os.environ["ESTUARY_ADMIN_TOKEN"]})
        with urllib.request.urlopen(request, timeout=3) as response:
            streams = json.load(response).get("streams", [])
        known = 1
    except Exception as error:  # noqa: BLE001: any failure means "placement unknown"
        streams = []
        summary.append(f"unknown ({type(error).__name__}: {error})")
    for s in streams:
        if s.get("app") != "abr" or s.get("state", "live") != "live":
            continue
        for r in s.get("renditions", []):
            node = r.get("transcoderNode")
            summary.append(f"{s.get('name')}/{r.get('rung')}:{node or '-'}:{r.get('state')}")
            if node and r.get("state") in ("assigned", "running"):
                on.setdefault(node, set()).add(s.get("name"))
                count[node] += 1
            elif r.get("state") not in ("skipped", "ended"):
                unplaced.add(s.get("name"))
    victim = args.prefer
    if count:
        best = max(count.values())
        leaders = [t for t in transcoders if count[t] == best]
        victim = args.prefer if args.prefer in leaders else (leaders[0] if leaders else max(count, key=count.get))
    print(f"{victim}\tknown={known};streams={','.join(sorted(on.get(victim, ())))};unplaced={','.join(sorted(unplaced))}"
          f"\t{' '.join(summary) or 'no abr stream live'}")


# ================================================================================= report

def pct(values, q):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def fmt_ms(seconds):
    return "—" if seconds is None else f"{seconds * 1000:.0f}"


def report(args):
    d = args.dir
    run_info = json.load(open(os.path.join(d, "run.json")))
    t0, duration = run_info["t0"], run_info["duration"]
    end = t0 + duration
    try:
        load = json.load(open(os.path.join(d, "load.json")))
        end = min(end, load["stoppedAt"])
        if not load.get("complete", True):
            failures_early = [f"the run stopped early, {end - t0:.0f} s in"]
        else:
            failures_early = []
    except (OSError, ValueError, KeyError):
        failures_early = []
    events = [e for e in (parse_event(line) for line in open(os.path.join(d, "events.tsv"))) if e]
    publishers = json.load(open(os.path.join(d, "publishers.json")))
    viewers = json.load(open(os.path.join(d, "viewers.json")))
    out = []
    p = out.append
    failures, warnings = list(failures_early), []

    # --- the windows of each cause --------------------------------------------------------
    churn = collections.defaultdict(list)  # stream -> [(from, to)]
    for stream, sessions in publishers.items():
        for i, s in enumerate(sessions):
            if s.get("stop") is None or s["stop"] >= end:
                continue
            back = sessions[i + 1]["start"] if i + 1 < len(sessions) else float("inf")
            churn[stream].append((s["stop"] - CHURN_BEFORE, back + CHURN_AFTER))
    kills = [kill_from_event(e, n + 1) for n, e in enumerate(e for e in events if e["kind"] == "kill")]
    relay_windows = []  # (relay, from, to, term, exited, ready)
    term = {}
    exited = {}
    for e in events:
        if e["kind"] == "relay-stop":
            term[e["node"]] = e["t"]
        elif e["kind"] == "relay-exit":
            exited[e["node"]] = e
        elif e["kind"] == "ready" and e["node"] in term:
            relay_windows.append((e["node"], term[e["node"]] - RELAY_BEFORE, e["t"] + RELAY_AFTER, term[e["node"]],
                                  exited.get(e["node"]), e["t"]))
            del term[e["node"]]
    for node, t in term.items():  # stopped and never ready again
        relay_windows.append((node, t - RELAY_BEFORE, float("inf"), t, exited.get(node), None))

    def causes(v, at):
        """Every cause whose window holds the instant `at`, the likeliest first: the relay
        restart (its viewers only), the publisher's pause, a transcoder kill (rung viewers of a
        stream the victim ran)."""
        found = []
        if any(v["relay"] == w[0] and w[1] <= at <= w[2] for w in relay_windows):
            found.append("relay restart")
        if any(w[0] <= at <= w[1] for w in churn.get(v["stream"], ())):
            found.append("publisher pause")
        if v["rendition"] != "source":
            for k in kills:
                if (k["streams"] is None or v["stream"] in k["streams"] | k["unplaced"]) and \
                        k["t"] - KILL_BEFORE <= at <= k["t"] + KILL_AFTER:
                    found.append("transcoder kill")
                    break
        return found or ["unexplained"]

    # --- ends and gaps -------------------------------------------------------------------
    ends = collections.defaultdict(list)  # cause -> [(viewer, conn)]
    gaps = collections.defaultdict(list)  # cause -> [(viewer, gap)]
    regressions = 0
    max_step = collections.defaultdict(int)
    for v in viewers:
        for c in v["connections"]:
            regressions += c["regressions"]
            max_step[v["rendition"] != "source"] = max(max_step[v["rendition"] != "source"], c["maxStepMs"])
            if c["end"] in (None, "deadline"):
                continue
            point = c["closed"]
            if c["end"].startswith("stall"):
                point = c["lastVideo"] or c["opened"]
            c["causes"] = causes(v, point)
            ends[c["causes"][0]].append((v, c))
        last = v.get("lastVideo")
        open_gap = [] if last is None or end - last <= GAP_SECONDS else [{"start": last, "end": end, "acrossReconnect": None, "open": True}]
        for g in v["gaps"] + open_gap:
            g["causes"] = causes(v, g["start"])
            gaps[g["causes"][0]].append((v, g))
    never = [v for v in viewers if v.get("lastVideo") is None]

    sessions = sum(len(s) for s in publishers.values())
    early = [(stream, s) for stream, ss in publishers.items() for s in ss if s.get("early")]
    deaths = [e for e in events if e["kind"] == "died"]
    if deaths:
        failures.append(f"{len(deaths)} process(es) exited on their own: " +
                        ", ".join(f"{e['node']} (pid {e['pid']}) at {e['t'] - t0:.0f} s" for e in deaths))
    if early:
        warnings.append(f"{len(early)} publisher session(s) ended early (ffmpeg exited: see publisher-*.log)")

    delay = run_info.get("killRestartDelay") or 0
    restart_when = "at once" if not delay else f"{delay} s later"
    p(f"### Cluster soak ({time.strftime('%Y-%m-%d %H:%M', time.localtime(t0))})")
    p("")
    p(f"Command: `{run_info['command']}`; binary `{run_info['node']}` ({run_info['build']}). "
      f"nats-server, coordinator, ingest, transcode-1/2, relay-1/2 as processes on loopback; "
      f"{len(publishers)} publishers into `abr/soak1..{len(publishers)}` ({run_info['source']} 30 fps H.264 + AAC, 2 s GOPs, "
      f"looped with `-c copy`), each publishing {run_info['publish']} s and pausing {run_info['pause']} s (seed {run_info['seed']}); "
      f"{len(viewers)} HTTP-FLV viewers over the source and rungs ({run_info['rungs']}) of every stream and both relays; "
      f"`kill -9` of the busiest transcoder every {run_info['killEvery']} s (restarted "
      f"{restart_when}, same node id); "
      f"relay-1 restarted (SIGTERM, drain, same ports) at {run_info['relayRestartAt']} s. {duration:.0f} s in all.")
    p("")
    p("| figure | value |")
    p("| --- | --- |")
    p(f"| publisher sessions | {sessions} ({', '.join(f'{k}: {len(v)}' for k, v in publishers.items())}); ended early: {len(early)} |")
    conns = sum(len(v["connections"]) for v in viewers)
    attempts = collections.Counter()
    for v in viewers:
        attempts.update(v["attempts"])
    p(f"| viewer connections | {conns} (requests: {', '.join(f'{k} × {n}' for k, n in attempts.most_common(6))}) |")
    p(f"| viewers that never got video | {len(never)} |")
    p(f"| video timestamp regressions | {regressions}; largest step: source {max_step[False]} ms, rungs {max_step[True]} ms |")
    p(f"| transcoder kills | {len(kills)}; relay restarts: {len(relay_windows)}; processes that exited on their own: {len(deaths)} |")
    p("")

    # Drops.
    p("**Viewers' streams that ended (drops), by cause** (a publisher pause ends the stream: not a drop):")
    p("")
    p("| cause | ends | viewers | how they ended |")
    p("| --- | --- | --- | --- |")
    for cause in ("publisher pause", "transcoder kill", "relay restart", "unexplained"):
        items = ends.get(cause, [])
        how = collections.Counter(c["end"] for _, c in items)
        p(f"| {cause} | {len(items)} | {len({v['index'] for v, _ in items})} | {', '.join(f'{k} × {n}' for k, n in how.most_common(4)) or '—'} |")
    p("")
    unexplained = ends.get("unexplained", [])
    if unexplained:
        failures.append(f"{len(unexplained)} viewer stream(s) ended for no known cause")
        p("Unexplained ends:")
        p("")
        for v, c in unexplained[:20]:
            last_video = "—" if c["lastVideo"] is None else f"{c['lastVideo'] - t0:.1f} s"
            p(f"- viewer {v['index']} `{v['url']}` ({v['relay']}) at {c['closed'] - t0:.1f} s "
              f"(opened {c['opened'] - t0:.1f} s, last video {last_video}): {c['end']}")
        p("")

    # Gaps.
    p(f"**Gaps of over {GAP_SECONDS * 1000:.0f} ms between a viewer's video frames** (across reconnects too), by cause:")
    p("")
    p("| cause | gaps | viewers | median ms | p90 ms | max ms | across a reconnect |")
    p("| --- | --- | --- | --- | --- | --- | --- |")
    for cause in ("publisher pause", "transcoder kill", "relay restart", "unexplained"):
        items = gaps.get(cause, [])
        lengths = [g["end"] - g["start"] for _, g in items]
        p(f"| {cause} | {len(items)} | {len({v['index'] for v, _ in items})} | {fmt_ms(pct(lengths, 0.5))} | "
          f"{fmt_ms(pct(lengths, 0.9))} | {fmt_ms(max(lengths) if lengths else None)} | "
          f"{sum(1 for _, g in items if g.get('acrossReconnect'))} |")
    p("")
    ugaps = gaps.get("unexplained", [])
    if ugaps:
        warnings.append(f"{len(ugaps)} gap(s) of over {GAP_SECONDS * 1000:.0f} ms with no known cause")
        p("Unexplained gaps (longest first):")
        p("")
        for v, g in sorted(ugaps, key=lambda item: item[1]["start"] - item[1]["end"])[:15]:
            p(f"- viewer {v['index']} `{v['url']}` ({v['relay']}): {fmt_ms(g['end'] - g['start'])} ms from "
              f"{g['start'] - t0:.1f} s{' (open at the end of the run)' if g.get('open') else ''}"
              f"{' across a reconnect' if g.get('acrossReconnect') else ''}")
        p("")

    # Failover.
    p("**Transcoder failover** (kill → the first new keyframe, per rung viewer of a stream the killed transcoder ran "
      "and that had video in the 2 s before the kill):")
    p("")
    p("| kill | at s | victim | its streams | then on (5 s later) | viewers | recovered | median ms | max ms | via reconnect |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    all_recoveries = []
    unrecovered = 0
    paused_around = 0

    placements = [e for e in events if e["kind"] == "placement"]

    def taken_over(k):
        """Who ran the killed transcoder's streams at the next placement event: transcoder (renditions)."""
        after = next((e for e in placements if e["t"] > k["t"]), None)
        if after is None or not k["streams"]:
            return "—"
        nodes = collections.Counter()
        for token in after["extra"].split():
            rendition, _, rest = token.partition(":")
            node, _, state = rest.partition(":")
            if rendition.split("/")[0] in k["streams"] and state in ("assigned", "running"):
                nodes[node] += 1
        return ", ".join(f"{n} ({c})" for n, c in sorted(nodes.items())) or "nothing"

    def live_through(stream, a, b):
        return any(s["start"] <= a and (s.get("stop") or float("inf")) >= b for s in publishers.get(stream, ()))

    for k in kills:
        records = []
        for v in viewers:
            for f in v["failovers"]:
                if f["kill"] != k["id"] or not f["receiving"]:
                    continue
                # A publisher that paused around the kill would make its end, not the kill's, the figure.
                after = max(5.0, (f["recoveryMs"] or 0) / 1000)
                if not live_through(v["stream"], k["t"] - 3.0, k["t"] + after):
                    paused_around += 1
                    continue
                records.append(f)
        rec = [f["recoveryMs"] / 1000 for f in records if f["recoveryMs"] is not None]
        all_recoveries += rec
        unrecovered += len(records) - len(rec)
        streams = "unknown" if k["streams"] is None else (",".join(sorted(k["streams"])) or "none")
        p(f"| {k['id']} | {k['t'] - t0:.0f} | {k['victim']} | {streams} | {taken_over(k)} | {len(records)} | {len(rec)} | "
          f"{fmt_ms(pct(rec, 0.5))} | {fmt_ms(max(rec) if rec else None)} | {sum(1 for f in records if f['reconnected'])} |")
    p(f"| all | | | | | {len(all_recoveries) + unrecovered} | {len(all_recoveries)} | {fmt_ms(pct(all_recoveries, 0.5))} | "
      f"{fmt_ms(max(all_recoveries) if all_recoveries else None)} | |")
    p("")
    if paused_around:
        p(f"Left out: {paused_around} rung viewer(s) whose publisher paused within 3 s before or 5 s after the kill "
          "(or before their recovery).")
        p("")
    if unrecovered:
        warnings.append(f"{unrecovered} rung viewer(s) got no new keyframe within {FAILOVER_LIMIT:.0f} s of a kill")
    back = []
    for k in kills:
        ready = next((e for e in events if e["kind"] == "ready" and e["node"] == k["victim"] and e["t"] >= k["t"]), None)
        after = "never" if ready is None else f"{ready['t'] - k['t']:.1f} s"
        back.append(f"{k['victim']} {after}")
    if back:
        p("The killed transcoder was ready (`/readyz`) again (restarted under the same id): " + ", ".join(back) + " after the kill.")
        p("")
    for node, _, _, t_term, ex, ready in relay_windows:
        drain = "" if ex is None else f"exited {ex['t'] - t_term:.1f} s after SIGTERM ({ex['extra']}), "
        p(f"Relay restart: {node} got SIGTERM at {t_term - t0:.0f} s, {drain}ready again "
          f"{'never' if ready is None else f'{ready - t_term:.1f} s after SIGTERM'}.")
        p("")

    # RSS.
    rss_table(d, t0, duration, p, failures, warnings)

    # Verdict.
    p("")
    if failures:
        p("**FAIL**: " + "; ".join(failures) + ".")
    else:
        p("**PASS**: no viewer was dropped except by a kill, a relay restart or its publisher's pause; RSS is flat after warm-up.")
    if warnings:
        p("")
        p("Notes: " + "; ".join(warnings) + ".")
    print("\n".join(out))
    return 1 if failures else 0


def rss_table(d, t0, duration, p, failures, warnings):
    rows = []  # (epoch, round, name, pid, rss KiB, cpu ticks)
    for line in open(os.path.join(d, "rss.tsv")):
        f = line.rstrip("\n").split("\t")
        if len(f) == 6:
            rows.append((float(f[0]), int(f[1]), f[2], f[3], int(f[4] or 0), int(f[5] or 0)))
    names = []
    for r in rows:
        if r[2] not in names:
            names.append(r[2])
    rounds = sorted({r[1] for r in rows})
    by = {(r[1], r[2]): r for r in rows}
    events = [e for e in (parse_event(line) for line in open(os.path.join(d, "events.tsv"))) if e]
    started = {e["pid"]: e["t"] for e in events if e["kind"] == "start"}  # pid -> its start
    # Renditions each transcoder ran at each sample (the placement asked right after it).
    loads = []
    for e in events:
        if e["kind"] == "placement":
            count = collections.Counter()
            for token in e["extra"].split():
                _, _, rest = token.partition(":")
                node, _, state = rest.partition(":")
                if state in ("assigned", "running"):
                    count[node] += 1
            loads.append((e["t"], count if e["extra"] != "unknown" else None))

    def load_at(name, t):
        after = next((c for at, c in loads if t <= at <= t + 10), None)
        return None if after is None else after[name]

    hz = os.sysconf("SC_CLK_TCK")
    # CPU: per name, ticks between samples of one process (a killed one's last moments are not seen).
    cpu = collections.defaultdict(float)
    last = {}
    for r in rows:
        key = (r[2], r[3])
        if key in last and r[5] >= last[key][5]:
            cpu[r[2]] += (r[5] - last[key][5]) / hz
        last[key] = r
    span = (rows[-1][0] - rows[0][0]) if rows else 0
    machine = [line.split("\t") for line in open(os.path.join(d, "machine.tsv")) if line.strip()]
    busy_cores = None
    if len(machine) >= 2:
        (b0, all0), (b1, all1) = (int(machine[0][1]), int(machine[0][2])), (int(machine[-1][1]), int(machine[-1][2]))
        busy_cores = (b1 - b0) / max(1, all1 - all0) * os.cpu_count()

    transcoders = [n for n in names if n.startswith("transcode")]
    p("**RSS of every process (MiB), every sample** (`*`: a new process since the last sample; "
      "a transcoder's renditions then in brackets):")
    p("")
    p("| t min | " + " | ".join(names) + " |")
    p("| --- | " + " | ".join("---" for _ in names) + " |")
    prev_pid = {}
    for n in rounds:
        cells = []
        t = None
        for name in names:
            r = by.get((n, name))
            if r is None:
                cells.append("—")
                continue
            t = r[0]
            mark = "*" if name in prev_pid and prev_pid[name] != r[3] else ""
            prev_pid[name] = r[3]
            load = load_at(name, r[0]) if name in transcoders else None
            cells.append((f"{r[4] / 1024:.1f}{mark}" if r[4] else "—") + ("" if load is None else f" [{load}]"))
        p(f"| {((t or t0) - t0) / 60:.1f} | " + " | ".join(cells) + " |")
    p("")
    if span > 0:
        ours = sum(cpu.values()) / span
        p("CPU over the run (cores): " + ", ".join(f"{name} {cpu[name] / span:.2f}" for name in names) +
          ("" if busy_cores is None else
           f"; the whole machine {busy_cores:.2f} of {os.cpu_count()}, of which {max(0.0, busy_cores - ours):.2f} "
           "none of these (the kernel, anything else running on the machine)"))
    if busy_cores is not None and busy_cores > 0.9 * os.cpu_count():
        ours = sum(cpu.values()) / span if span > 0 else 0.0
        warnings.append(f"the machine was saturated ({busy_cores:.2f} of {os.cpu_count()} cores busy, {ours:.2f} of them "
                        "this soak's processes): gaps and failover times are CPU-bound")
    p("")

    # Flatness per process instance.
    warm_from, warm_to = min(300.0, duration / 6), min(600.0, duration / 3)
    final_from = t0 + 2 * duration / 3
    p(f"RSS flat after warm-up: per process, the mean of its samples in the last third of the run (from "
      f"{2 * duration / 3 / 60:.1f} min, and past its own warm-up) against the mean of its samples aged "
      f"{warm_from / 60:.1f}–{warm_to / 60:.1f} min; flat when it grew by at most "
      f"{RSS_ALLOW_FRACTION * 100:.0f} % or {RSS_ALLOW_KIB // 1024} MiB, whichever is more. A process started later "
      "(a killed transcoder, the restarted relay) is judged on its own age, when it lived long enough. A transcoder's "
      "memory follows the renditions it runs, which kills and publisher pauses move: its samples are compared at equal "
      "load (the same number of renditions in both windows), and not judged when the two windows share none.")
    p("")
    p("| process | pid | warm-up MiB | last third MiB | growth | verdict |")
    p("| --- | --- | --- | --- | --- | --- |")
    instances = collections.OrderedDict()
    for r in rows:
        instances.setdefault((r[2], r[3]), []).append(r)
    judged = 0
    for (name, pid), samples in instances.items():
        if name in ("viewers", "publishers"):
            continue
        born = max(started.get(pid, samples[0][0]), t0)  # warm-up counts from the load's start
        ref = [r for r in samples if warm_from <= r[0] - born <= warm_to and r[4]]
        fin = [r for r in samples if r[0] >= final_from and r[0] - born > warm_to and r[4]]
        if name in transcoders:
            pairs = collections.defaultdict(lambda: ([], []))
            for r in ref:
                pairs[load_at(name, r[0])][0].append(r[4])
            for r in fin:
                pairs[load_at(name, r[0])][1].append(r[4])
            common = {k: v for k, v in pairs.items() if k is not None and v[0] and v[1]}
            if (ref and fin) and not common:
                p(f"| {name} | {pid} | {mean_mib([r[4] for r in ref])} | {mean_mib([r[4] for r in fin])} | — | "
                  f"not judged (its load changed: {loads_of(pairs, 0)} renditions, then {loads_of(pairs, 1)}) |")
                continue
            comparisons = [(k, statistics.mean(a), statistics.mean(b)) for k, (a, b) in sorted(common.items())]
        else:
            comparisons = [(None, statistics.mean([r[4] for r in ref]), statistics.mean([r[4] for r in fin]))] if ref and fin else []
        if not comparisons:
            p(f"| {name} | {pid} | {mean_mib([r[4] for r in ref])} | {mean_mib([r[4] for r in fin])} | — | "
              f"not judged (lived {(samples[-1][0] - born) / 60:.1f} min) |")
            continue
        judged += 1
        for load, a, b in comparisons:
            flat = b - a <= max(RSS_ALLOW_FRACTION * a, RSS_ALLOW_KIB)
            at = "" if load is None else f" ({load} renditions)"
            if not flat:
                failures.append(f"RSS of {name} (pid {pid}){at} grew {100 * (b - a) / a:+.1f} % after warm-up")
            p(f"| {name}{at} | {pid} | {a / 1024:.1f} | {b / 1024:.1f} | {100 * (b - a) / a:+.1f} % | "
              f"{'flat' if flat else '**grew**'} |")
    if not judged:
        failures.append("no process lived long enough for its RSS to be judged")


def loads_of(pairs, side):
    return "/".join("?" if k is None else str(k) for k in sorted((k for k, v in pairs.items() if v[side]),
                                                                  key=lambda k: -1 if k is None else k)) or "—"


def mean_mib(values):
    return "—" if not values else f"{statistics.mean(values) / 1024:.1f}"


# =================================================================================== main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--t0", type=float, required=True)
    r.add_argument("--duration", type=float, required=True)
    r.add_argument("--ingest", required=True, help="rtmp://host:port")
    r.add_argument("--relays", required=True, help="name=http://host:port,…")
    r.add_argument("--clip", required=True)
    r.add_argument("--viewers", type=int, default=50)
    r.add_argument("--streams", type=int, default=3)
    r.add_argument("--rungs", default="360p,240p")
    r.add_argument("--seed", type=int, default=23)
    r.add_argument("--publish", default="120:300", help="min:max seconds a publisher publishes")
    r.add_argument("--pause", default="10:30", help="min:max seconds a publisher pauses")
    pl = sub.add_parser("placement")
    pl.add_argument("url")
    pl.add_argument("--transcoders", required=True)
    pl.add_argument("--prefer", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("dir")
    args = parser.parse_args()
    if args.command == "run":
        if not 0 < args.duration <= 24 * 3600:
            parser.error("--duration must be within (0, 86400]")
        run(args)
        return 0
    if args.command == "placement":
        placement(args)
        return 0
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
