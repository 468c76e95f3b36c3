#!/usr/bin/env python3
"""Create and remove a small network of Linux network namespaces.

Used by Estuary's multi-node integration tests: each node runs in its own
network namespace, all joined to one bridge. Latency between nodes is added
with delay_proxy.py (in userspace, because the test machines' kernel has no
`netem` qdisc), not here.

    netns_topology.py up --prefix PFX --nodes a,b,c [--subnet 10.213.0.0/24]
    netns_topology.py down --prefix PFX
    netns_topology.py check

`up` creates namespaces PFX-a, PFX-b, PFX-c and a hub namespace PFX-hub that
holds a bridge `br0`. Node number i (0-based, in the order given) gets a veth
`veth0` whose peer `p<i>` is a port of the hub's bridge, the address
(subnet's network address + i + 1)/prefixlen, and `lo` up. It prints a JSON
object {node: {"netns": name, "address": ip}} on stdout. Nothing is created in
the root namespace and the host's interfaces and routes are not touched. If
any step fails, what this run created is deleted and the exit status is 1.

`down` deletes every namespace whose name starts with `PFX-`; deleting a
namespace deletes its veth ends. It succeeds when there is nothing to delete.
Processes still running in a namespace keep it alive (unnamed) until they
exit; `down` lists them on stderr, and the tests should stop them first.

`check` exits 0 if namespaces (with a bridge and a veth pair) can be created
here, by creating and deleting a throwaway namespace; otherwise it prints the
reason on stdout and exits 3, so tests can skip with that reason.

Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and `ip` from iproute2.
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys

IP_TIMEOUT_S = 10.0
BRIDGE = "br0"
NODE_IFACE = "veth0"
HUB_SUFFIX = "hub"
CHECK_EXIT = 3
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class TopologyError(Exception):
    pass


def ip(*args):
    """Run `ip ARGS`; return stdout; raise TopologyError on failure or timeout."""
    cmd = ["ip", *args]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=IP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise TopologyError("`ip` (iproute2) is not installed or not on PATH")
    except subprocess.TimeoutExpired:
        raise TopologyError(f"timed out after {IP_TIMEOUT_S:.0f} s: {' '.join(cmd)}")
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"
        raise TopologyError(f"`{' '.join(cmd)}` failed: {detail}")
    return result.stdout


def list_namespaces():
    # Lines look like "name" or "name (id: 3)".
    return [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]


def delete_namespace(name):
    try:
        ip("netns", "delete", name)
    except TopologyError:
        if name in list_namespaces():
            raise


def namespace_pids(name):
    try:
        return ip("netns", "pids", name).split()
    except TopologyError:
        return []


def validate_name(kind, name):
    if not NAME_RE.match(name) or len(name) > 200:
        raise TopologyError(
            f"invalid {kind} {name!r}: use letters, digits, '_', '.', '-' "
            "(not starting with '.', '_' or '-')")


def plan(prefix, nodes, subnet):
    validate_name("prefix", prefix)
    if not nodes:
        raise TopologyError("--nodes is empty")
    for node in nodes:
        validate_name("node name", node)
    if len(set(nodes)) != len(nodes):
        raise TopologyError(f"duplicate node names in {','.join(nodes)}")
    if HUB_SUFFIX in nodes:
        raise TopologyError(f"node name {HUB_SUFFIX!r} is reserved for the bridge namespace")
    try:
        network = ipaddress.IPv4Network(subnet, strict=True)
    except ValueError as error:
        raise TopologyError(f"invalid --subnet {subnet!r}: {error}")
    if len(nodes) > network.num_addresses - 2:
        raise TopologyError(f"--subnet {subnet} has room for {network.num_addresses - 2} "
                            f"nodes, not {len(nodes)}")
    return network, [(node, f"{prefix}-{node}", str(network.network_address + i + 1))
                     for i, node in enumerate(nodes)]


def up(prefix, nodes, subnet):
    network, layout = plan(prefix, nodes, subnet)
    hub = f"{prefix}-{HUB_SUFFIX}"
    wanted = [hub] + [netns for _, netns, _ in layout]
    existing = set(list_namespaces()).intersection(wanted)
    if existing:
        raise TopologyError(f"namespace(s) already exist: {', '.join(sorted(existing))}; "
                            f"run `down --prefix {prefix}` first")
    created = []
    try:
        ip("netns", "add", hub)
        created.append(hub)
        ip("-n", hub, "link", "set", "lo", "up")
        ip("-n", hub, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0")
        ip("-n", hub, "link", "set", BRIDGE, "up")
        for index, (_, netns, address) in enumerate(layout):
            port = f"p{index}"
            ip("netns", "add", netns)
            created.append(netns)
            ip("-n", netns, "link", "set", "lo", "up")
            ip("-n", netns, "link", "add", NODE_IFACE, "type", "veth",
               "peer", "name", port, "netns", hub)
            ip("-n", hub, "link", "set", port, "master", BRIDGE)
            ip("-n", hub, "link", "set", port, "up")
            ip("-n", netns, "addr", "add", f"{address}/{network.prefixlen}", "dev", NODE_IFACE)
            ip("-n", netns, "link", "set", NODE_IFACE, "up")
    except BaseException:
        for netns in reversed(created):
            try:
                delete_namespace(netns)
            except TopologyError as error:
                print(f"netns_topology: cleanup: {error}", file=sys.stderr)
        raise
    return {node: {"netns": netns, "address": address} for node, netns, address in layout}


def down(prefix):
    validate_name("prefix", prefix)
    failures = []
    for netns in list_namespaces():
        if not netns.startswith(f"{prefix}-"):
            continue
        pids = namespace_pids(netns)
        if pids:
            print(f"netns_topology: warning: processes still in {netns}: {' '.join(pids)}; "
                  "the namespace lives on until they exit", file=sys.stderr)
        try:
            delete_namespace(netns)
        except TopologyError as error:
            failures.append(str(error))
    if failures:
        raise TopologyError("; ".join(failures))


def check():
    """Return None if namespaces work here, else the reason."""
    if shutil.which("ip") is None:
        return "`ip` (iproute2) is not installed or not on PATH"
    if os.geteuid() != 0:
        return "network namespaces need root (not running as root)"
    name = f"estuary-netns-check-{os.getpid()}"
    try:
        ip("netns", "add", name)
    except TopologyError as error:
        return f"cannot create a network namespace: {error}"
    try:
        ip("-n", name, "link", "add", "cbr0", "type", "bridge")
        ip("-n", name, "link", "add", "cv0", "type", "veth", "peer", "name", "cv1")
        ip("-n", name, "link", "set", "cv1", "master", "cbr0")
    except TopologyError as error:
        return f"cannot create a bridge and veth pair in a namespace: {error}"
    finally:
        try:
            delete_namespace(name)
        except TopologyError as error:
            print(f"netns_topology: cleanup: {error}", file=sys.stderr)
    return None


def main():
    parser = argparse.ArgumentParser(
        description="Network namespaces joined by one bridge, for multi-node tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="create the namespaces; print JSON node -> netns, address")
    p_up.add_argument("--prefix", required=True)
    p_up.add_argument("--nodes", required=True, help="comma-separated node names, e.g. a,b,c")
    p_up.add_argument("--subnet", default="10.213.0.0/24")
    p_down = sub.add_parser("down", help="delete every namespace named PREFIX-*")
    p_down.add_argument("--prefix", required=True)
    sub.add_parser("check", help=f"exit 0 if netns work here, else print why and exit {CHECK_EXIT}")
    args = parser.parse_args()

    if args.command == "check":
        reason = check()
        if reason is not None:
            print(reason, flush=True)
            return CHECK_EXIT
        print("ok: network namespaces are available", flush=True)
        return 0
    try:
        if args.command == "up":
            # Turn SIGTERM into an exception so a killed `up` still cleans up.
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
            nodes = [n.strip() for n in args.nodes.split(",") if n.strip()]
            print(json.dumps(up(args.prefix, nodes, args.subnet)), flush=True)
        else:
            down(args.prefix)
    except TopologyError as error:
        print(f"netns_topology: {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
