#!/usr/bin/env python3
"""Userspace TCP proxy that adds a fixed one-way delay in each direction.

Used by Estuary's multi-node integration tests to put latency between nodes
(for example between two network namespaces made by netns_topology.py). The
delay is added in userspace because the test machines' kernel has no `netem`
qdisc.

    delay_proxy.py --listen HOST:PORT --connect HOST:PORT --delay-ms N
                   [--max-buffer-bytes B] [--ready-file PATH]

For each accepted connection the proxy connects to the upstream (5 s timeout;
on failure the client connection is reset at once). Each direction reads
chunks and forwards every chunk at (time it was read + delay), in order; the
delay is not cumulative. At most --max-buffer-bytes (default 8 MiB) wait in
one direction; past that the proxy stops reading that side until the queue
drains, so TCP back-pressure reaches the sender.

EOF from one side is forwarded (half-close) after the data queued before it.
A reset or error on either side resets both connections.

When ready it prints `listening HOST:PORT` (the bound address, so `:0` may be
used to pick a free port) on stdout and, with --ready-file, writes the same
line to that file (atomically, via rename). SIGTERM or SIGINT stops it with
exit status 0.
"""

import argparse
import asyncio
import collections
import os
import signal
import socket
import struct
import sys

CHUNK_BYTES = 64 * 1024
CONNECT_TIMEOUT_S = 5.0
SHUTDOWN_TIMEOUT_S = 2.0
_EOF = None  # queue marker: forward EOF to the destination


def log(message):
    print(f"delay_proxy: {message}", file=sys.stderr, flush=True)


def parse_hostport(text):
    """Parse HOST:PORT or [IPv6]:PORT."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def format_hostport(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def reset(writer):
    """Close a connection at once with an RST (SO_LINGER 0), dropping buffers."""
    transport = writer.transport
    if transport.is_closing():
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


class Direction:
    """One direction of a proxied connection: a bounded queue of (deadline, bytes)."""

    def __init__(self, name, reader, writer, delay_s, max_buffer):
        self.name = name
        self.reader = reader
        self.writer = writer
        self.delay_s = delay_s
        self.max_buffer = max_buffer
        self.queue = collections.deque()
        self.queued_bytes = 0
        self.has_data = asyncio.Event()
        self.has_room = asyncio.Event()
        self.has_room.set()

    async def read_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            while self.queued_bytes > self.max_buffer:
                self.has_room.clear()
                await self.has_room.wait()
            data = await self.reader.read(CHUNK_BYTES)
            deadline = loop.time() + self.delay_s
            if not data:
                self.queue.append((deadline, _EOF))
                self.has_data.set()
                return
            self.queue.append((deadline, data))
            self.queued_bytes += len(data)
            self.has_data.set()

    async def write_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            while not self.queue:
                self.has_data.clear()
                await self.has_data.wait()
            wait = self.queue[0][0] - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            # Send every chunk that is due now in one write.
            now = loop.time()
            parts = []
            saw_eof = False
            while self.queue and self.queue[0][0] <= now:
                _, data = self.queue.popleft()
                if data is _EOF:
                    saw_eof = True
                    break
                parts.append(data)
            if parts:
                size = sum(len(p) for p in parts)
                self.writer.write(b"".join(parts))
                self.queued_bytes -= size
                if self.queued_bytes <= self.max_buffer:
                    self.has_room.set()
                await self.writer.drain()
            if saw_eof:
                if self.writer.can_write_eof():
                    self.writer.write_eof()
                await self.writer.drain()
                return


class Proxy:
    def __init__(self, upstream, delay_s, max_buffer):
        self.upstream = upstream
        self.delay_s = delay_s
        self.max_buffer = max_buffer
        self.handlers = set()

    async def handle(self, client_reader, client_writer):
        task = asyncio.current_task()
        self.handlers.add(task)
        peer = client_writer.get_extra_info("peername")
        upstream_writer = None
        try:
            try:
                upstream_reader, upstream_writer = await asyncio.wait_for(
                    asyncio.open_connection(*self.upstream), CONNECT_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as error:
                log(f"{peer}: upstream {format_hostport(*self.upstream)} "
                    f"connect failed: {error!r}")
                reset(client_writer)
                return
            to_upstream = Direction("client->upstream", client_reader, upstream_writer,
                                    self.delay_s, self.max_buffer)
            to_client = Direction("upstream->client", upstream_reader, client_writer,
                                  self.delay_s, self.max_buffer)
            tasks = [asyncio.create_task(coro) for coro in (
                to_upstream.read_loop(), to_upstream.write_loop(),
                to_client.read_loop(), to_client.write_loop())]
            try:
                done, pending = await asyncio.wait(
                    tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for t in tasks:
                    t.cancel()
                # Collect results so no "exception never retrieved" warnings.
                await asyncio.gather(*tasks, return_exceptions=True)
            failures = [t.exception() for t in done
                        if not t.cancelled() and t.exception() is not None]
            if failures:
                # Reset or error on one side: reset both.
                if not isinstance(failures[0], (ConnectionError, OSError)):
                    log(f"{peer}: {failures[0]!r}")
                reset(client_writer)
                reset(upstream_writer)
            else:
                # Both sides sent EOF and it has been forwarded both ways.
                client_writer.close()
                upstream_writer.close()
        except asyncio.CancelledError:
            # Shutdown. Not re-raised: Python 3.11's start_server callback
            # calls task.exception() on the handler task, which raises (and
            # prints a traceback) for a cancelled task.
            reset(client_writer)
            if upstream_writer is not None:
                reset(upstream_writer)
        finally:
            self.handlers.discard(task)


async def main_async(args):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    proxy = Proxy(args.connect, args.delay_ms / 1000.0, args.max_buffer_bytes)
    host, port = args.listen
    server = await asyncio.start_server(proxy.handle, host, port, reuse_address=True)
    bound = server.sockets[0].getsockname()
    line = f"listening {format_hostport(bound[0], bound[1])}"
    print(line, flush=True)
    if args.ready_file:
        tmp = f"{args.ready_file}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.replace(tmp, args.ready_file)

    await stop.wait()
    server.close()
    for task in list(proxy.handlers):
        task.cancel()
    if proxy.handlers:
        await asyncio.wait(list(proxy.handlers), timeout=SHUTDOWN_TIMEOUT_S)
    try:
        await asyncio.wait_for(server.wait_closed(), SHUTDOWN_TIMEOUT_S)
    except asyncio.TimeoutError:
        pass


def main():
    parser = argparse.ArgumentParser(
        description="TCP proxy adding a fixed one-way delay in each direction.")
    parser.add_argument("--listen", required=True, type=parse_hostport,
                        metavar="HOST:PORT", help="address to accept on (port 0: any free port)")
    parser.add_argument("--connect", required=True, type=parse_hostport,
                        metavar="HOST:PORT", help="upstream address")
    parser.add_argument("--delay-ms", required=True, type=float, metavar="N",
                        help="one-way delay added in each direction, milliseconds")
    parser.add_argument("--max-buffer-bytes", type=int, default=8 * 1024 * 1024, metavar="B",
                        help="bytes queued per direction before reading pauses (default 8 MiB)")
    parser.add_argument("--ready-file", metavar="PATH",
                        help="also write the `listening HOST:PORT` line to this file")
    args = parser.parse_args()
    if args.delay_ms < 0:
        parser.error("--delay-ms must be >= 0")
    if args.max_buffer_bytes <= 0:
        parser.error("--max-buffer-bytes must be > 0")
    try:
        asyncio.run(main_async(args))
    except OSError as error:
        log(f"cannot listen on {format_hostport(*args.listen)}: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
