#!/usr/bin/env python3
"""Userspace UDP proxy that delays and drops datagrams, for SRT over a bad network.

Used by Estuary's SRT integration tests: the test machines' kernel has no `netem` qdisc,
so loss and latency are made here, between an SRT caller and the node.

    lossy_udp_proxy.py --listen HOST:PORT --connect HOST:PORT --delay-ms N --loss P
                       [--seed S] [--max-queue N]

The first peer that sends to --listen is the client; its datagrams go to --connect, and
the answers come back to it. In each direction every datagram is dropped with probability
P (0..1) or forwarded N ms after it arrived (one-way delay, so the round trip gains 2N).
At most --max-queue datagrams (default 20000) wait in one direction; past that they are
dropped too. Counts are printed on exit (SIGTERM, SIGINT): `forwarded A dropped B`.
When ready it prints `listening HOST:PORT` on stdout.
"""

import argparse
import heapq
import random
import select
import signal
import socket
import sys
import time


def address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True, type=address)
    parser.add_argument("--connect", required=True, type=address)
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--loss", type=float, default=0)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--max-queue", type=int, default=20000)
    options = parser.parse_args()
    chance = random.Random(options.seed)

    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(options.listen)
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.connect(options.connect)
    print("listening %s:%d" % front.getsockname(), flush=True)

    client = None
    queue = []  # (due, sequence, socket, payload, destination)
    sequence = 0
    counts = {"forwarded": 0, "dropped": 0}
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    delay = options.delay_ms / 1000.0

    while running:
        now = time.monotonic()
        timeout = 0.05
        if queue:
            timeout = max(0.0, min(timeout, queue[0][0] - now))
        try:
            readable, _, _ = select.select([front, back], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for sock in readable:
            try:
                payload, source = sock.recvfrom(65535)
            except OSError:
                continue
            if sock is front:
                client = source
                target = (back, None)
            elif client is None:
                continue
            else:
                target = (front, client)
            if chance.random() < options.loss or len(queue) >= options.max_queue:
                counts["dropped"] += 1
                continue
            sequence += 1
            heapq.heappush(queue, (now + delay, sequence, target[0], payload, target[1]))
        while queue and queue[0][0] <= time.monotonic():
            _, _, sock, payload, destination = heapq.heappop(queue)
            try:
                if destination is None:
                    sock.send(payload)
                else:
                    sock.sendto(payload, destination)
                counts["forwarded"] += 1
            except OSError:
                counts["dropped"] += 1
    print("forwarded %d dropped %d" % (counts["forwarded"], counts["dropped"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
