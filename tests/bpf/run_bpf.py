#!/usr/bin/env python3
"""Tests of `rdzvscope attach`: a real program, real errnos, checked through `rdzvscope dump`.

    run_bpf.py --rdzvscope CLI --target PROG --shim LIB --work DIR SCENARIO

The target program (bpf_target.c) is started untraced and waits; attach starts; the program
then fails a blocking and a non-blocking connect (ECONNREFUSED on its MASTER_PORT), a
getaddrinfo (EAI_NONAME) and a bind (EADDRINUSE), and talks to itself on a store port: a
0-byte recv, EPIPE and ECONNRESET on send, an expired SO_RCVTIMEO, a poll timeout. In a
network namespace that drops SYNs, its connects time out (connect_timeout). Run as root:
these tests fail, not skip, when BPF does not work, since the machines that run them permit it.
Exit status 0 = pass, 1 = fail (with the reason and the dump on stderr).
"""
import argparse
import collections
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import Fail, check  # noqa: E402
from rdzvtest.launch import job_env  # noqa: E402
from rdzvtest.ports import free_ports  # noqa: E402

OPTS = None
SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


class Ports:
    """A store port where nothing listens, a port the test holds (for EADDRINUSE), and a
    store port (RDZVSCOPE_PORTS) where the target talks to itself."""

    def __init__(self):
        self.held = socket.socket()
        self.held.bind(("127.0.0.1", 0))
        self.held.listen()
        self.taken = self.held.getsockname()[1]
        self.store, self.io = free_ports(2)

    def named(self, addr):
        """An address as both recorders must agree on it: ephemeral ports differ run to run."""
        if addr is None:
            return None
        port = int(addr.rsplit(":", 1)[1])
        return addr if port in (self.store, self.taken, self.io) else "ephemeral"


def target_env(ports):
    return job_env(MASTER_PORT=str(ports.store), RDZVSCOPE_PORTS=str(ports.io), RANK="3", WORLD_SIZE="4",
                   LC_ALL="C")


def start_target(ports, prefix=(), args=None, program=None):
    args = args or [str(ports.store), str(ports.taken), str(ports.io)]
    p = subprocess.Popen(list(prefix) + [program or OPTS.target] + args,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=target_env(ports),
                         text=True)
    line = p.stdout.readline()
    check(line == "ready\n", "target did not start: %r" % line)
    return p


def finish_target(p):
    p.stdin.write("go\n")
    p.stdin.flush()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0, "target failed: " + out)
    return dict((l.split()[0], [int(x) for x in l.split()[1:]]) for l in out.splitlines())


def start_attach(args):
    return cli.start_attach(OPTS.rdzvscope, args)


def stop_attach(a, sig=signal.SIGINT):
    return cli.stop_attach(a, sig)


def dump(out_dir):
    """(every file's header, every event) of `rdzvscope dump OUT_DIR`."""
    files = cli.dump(OPTS.rdzvscope, out_dir, timeout=60)
    return [f["header"] for f in files], [e for f in files for e in f["events"]]


def dump_by_pid(out_dir):
    """The events of the files that have some, by the pid in their header."""
    by_pid = {}
    for f in cli.dump(OPTS.rdzvscope, out_dir, timeout=60):
        if f["events"]:
            by_pid.setdefault(f["header"]["pid"], []).extend(f["events"])
    return by_pid


def find(events, **want):
    return [e for e in events if all(e.get(k) == v for k, v in want.items())]


PROBE_FLAGS = ("sock_error", "reset_received", "reset_sent")


def by_probe(events, probe, **want):
    """tcp_state records of one kernel probe, named by its flag (trace_format.h); a state
    change has none of the three."""
    return [e for e in find(events, kind="tcp_state", **want)
            if [f for f in e["flags"] if f in PROBE_FLAGS] == ([probe] if probe else [])]


def attached_run(work, extra_args=()):
    """Target under attach: returns (what the target printed, headers, events, attach's stderr)."""
    ports = Ports()
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports)
    a = start_attach(["--pid", str(t.pid), "--out", out_dir] + list(extra_args))
    printed = finish_target(t)
    time.sleep(0.2)
    summary = stop_attach(a) if "--duration" not in extra_args else a.stderr.read()
    if "--duration" in extra_args:
        check(a.wait(timeout=30) == 0, "attach with --duration failed: " + summary)
    headers, events = dump(out_dir)
    return ports, t.pid, printed, headers, events, summary


def key_events(events, ports):
    """The events both recorders must agree on, counted: (kind, op, errno, ret, address...).
    bpf-only records (tcp_state) and the shim's resource snapshots are left out."""
    keys = collections.Counter()
    for e in events:
        kind, flags = e["kind"], tuple(sorted(e["flags"]))
        if kind in ("connect", "bind") or (kind == "connect_done" and e["errno"]):
            addr = e.get("peer") if kind != "bind" else e.get("local")
            # The shim names the call that read a connect's outcome (getsockopt, poll...);
            # bpf sees the kernel decide it (op "kernel"): only the outcome must agree.
            op = None if kind == "connect_done" else e["op"]
            keys[(kind, op, e["errno_name"], e["ret"], ports.named(addr), "store" in flags)] += 1
        elif kind == "resolve" and e["host"].startswith("rdzv-no-such-host"):
            keys[(kind, e["op"], e["gai_error"], e["ret"], e["host"], False)] += 1
        elif kind in ("listen", "accept"):
            keys[(kind, e["op"], e["errno_name"], e["ret"] >= 0, ports.named(e["local"]),
                  ports.named(e["peer"]), flags)] += 1
        elif kind in ("send", "recv", "poll", "sockopt"):
            keys[(kind, e["op"], e["errno_name"], e["ret"], ports.named(e["peer"]),
                  ports.named(e["local"]), flags, e["size"], e["timeout_ms"])] += 1
        elif kind == "close":
            keys[(kind, e["op"], flags, ports.named(e["peer"]), ports.named(e["local"]), e["bytes_sent"],
                  e["bytes_recv"], e["calls_send"], e["calls_recv"])] += 1
    return keys


def same_as_shim(ports, bpf_events, shim_events, at_least):
    mine, theirs = key_events(bpf_events, ports), key_events(shim_events, ports)
    check(sum(theirs.values()) >= at_least, "the shim recorded too little: %s" % sorted(map(str, theirs)),
          shim_events)
    check(mine == theirs, "bpf and shim disagree:\n  bpf only:  %s\n  shim only: %s"
          % (sorted(map(str, (mine - theirs).elements())), sorted(map(str, (theirs - mine).elements()))))
    print("bpf and shim agree on %d events:" % sum(theirs.values()))
    for k, n in sorted(theirs.items(), key=str):
        print("  %dx %s" % (n, k))


@scenario
def attach_events(work):
    ports, pid, printed, headers, events, summary = attached_run(work)
    check(printed["connect"] == [-1, 111], "target's connect was not refused: %s" % printed)
    check(len(headers) == 1, "one trace file expected, got %d" % len(headers), headers)
    h = headers[0]
    check(h["source"] == "bpf" and h["pid"] == pid, "header source/pid", [h])
    check(h["identity"]["rank"] == 3 and h["identity"]["world_size"] == 4, "identity from environ", [h])
    check(ports.store in h["store_ports"], "MASTER_PORT is a store port", [h])
    check("lost_counter" in h["features"] and h["lost"] == 0, "lost counter", [h])
    check(h["cmdline"].endswith("%d %d %d" % (ports.store, ports.taken, ports.io)), "cmdline", [h])
    check(events and events[0]["kind"] == "proc_start", "proc_start first", events)
    store = "127.0.0.1:%d" % ports.store
    blocking = find(events, kind="connect", peer=store, errno_name="ECONNREFUSED", ret=-1)
    check(len(blocking) == 1 and "store" in blocking[0]["flags"]
          and "nonblock" not in blocking[0]["flags"], "refused blocking connect", events)
    check(find(events, kind="connect", peer=store, errno_name="EINPROGRESS"), "non-blocking connect", events)
    done = find(events, kind="connect_done", op="kernel", peer=store, errno_name="ECONNREFUSED")
    check(len(done) == 1 and "nonblock" in done[0]["flags"], "non-blocking connect's outcome", events)
    failed = [e for e in by_probe(events, None, peer=store, tcp_state=7)
              if e["size"] == 2 and e["errno_name"] == "ECONNREFUSED"]
    check(len(failed) == 2, "SYN_SENT -> CLOSE with ECONNREFUSED, twice", events)
    reports = by_probe(events, "sock_error", peer=store, errno_name="ECONNREFUSED")
    check(len(reports) == 2 and all(e["size"] == e["tcp_state"] == 7 for e in reports),
          "inet_sk_error_report ECONNREFUSED, twice", events)
    resets = by_probe(events, "reset_received", peer=store, errno_name="ECONNREFUSED", tcp_state=2)
    check(len(resets) == 2, "tcp_receive_reset in SYN_SENT (ECONNREFUSED), twice", events)
    # The probe is named by a flag of the shared format, no longer by a private value of nfds.
    check(all(e["nfds"] == 0 for e in find(events, kind="tcp_state")), "tcp_state records' nfds is 0",
          find(events, kind="tcp_state"))
    res = find(events, kind="resolve", host="rdzv-no-such-host.invalid")
    check(len(res) == 1 and res[0]["ret"] == printed["getaddrinfo"][0] and res[0]["ret"] != 0
          and res[0]["service"] == str(ports.store) and res[0]["dur_ns"] > 0, "failed getaddrinfo", events)
    check(not find(events, kind="connect", peer=None), "no AF_UNIX/UDP connect (nscd, DNS)", events)
    bind = find(events, kind="bind", local="127.0.0.1:%d" % ports.taken, errno_name="EADDRINUSE")
    check(len(bind) == 1 and bind[0]["ret"] == -1, "bind EADDRINUSE", events)
    check(find(events, kind="proc_exit", status=0), "proc_exit", events)
    check("%d: %d" % (pid, len(events) - 1) in summary and "0 lost" in summary,
          "summary line counts the events: " + summary)
    check_store_io(ports, printed, events)
    # As the shim: a resource snapshot at the first failure and at the first store connect,
    # read from /proc/PID by the loader.
    for reason in ("failure", "first_store_connect"):
        snap = find(events, kind="snapshot", reason=reason)
        check(snap and snap[0]["rchar"] > 0 and snap[0]["since_start_ns"] > 0 and snap[0]["maxrss_kb"] > 0,
              "a %s snapshot" % reason, events)


def check_store_io(ports, printed, events):
    """bpf_target's io_section, as the trace must show it (see bpf_target.c)."""
    want = {"recv_zero": [0, 0], "send_after_fin": [1, 0], "send_epipe": [-1, 32], "send_reset": [-1, 104],
            "recv_timeout": [-1, 11], "poll_timeout": [0, 0], "sendmmsg": [2, 0], "recvmmsg_bytes": [5, 0]}
    check(all(printed.get(k) == v for k, v in want.items()), "the target's I/O went otherwise: %s" % printed)
    io = "127.0.0.1:%d" % ports.io

    def one(what, **want):
        got = [e for e in find(events, **want) if "store" in e["flags"]]
        check(len(got) == 1, "%s: %d records" % (what, len(got)), events)
        return got[0]

    one("the 0-byte recv", kind="recv", op="recv", ret=0, peer=io, flags=["store", "zero_read"], size=64)
    one("the send answered by RST", kind="send", op="send", ret=1, peer=io, errno=0)
    one("EPIPE on send", kind="send", op="send", ret=-1, peer=io, errno_name="EPIPE", flags=["store"])
    one("ECONNRESET on send", kind="send", op="send", ret=-1, peer=io, errno_name="ECONNRESET")
    t = one("the expired SO_RCVTIMEO", kind="recv", ret=-1, peer=io, errno_name="EAGAIN", timeout_ms=200)
    check(t["flags"] == ["store", "timeout"] and t["dur_ns"] > 150e6, "a blocking recv timed out", [t])
    one("SO_RCVTIMEO set", kind="sockopt", op="setsockopt", size=20, timeout_ms=200, peer=io)
    p = one("the poll timeout", kind="poll", op="poll", peer=io, timeout_ms=100, nfds=1)
    check(p["flags"] == ["store", "timeout"] and p["dur_ns"] == 100e6, "poll timeout record", [p])
    one("the server's recv", kind="recv", op="recv", ret=4, local=io)
    # Several messages in one call: the bytes done and asked, as the shim records them.
    one("the server's sendmmsg", kind="send", op="sendmmsg", ret=5, size=5, local=io, errno=0)
    one("the client's recvmmsg", kind="recv", op="recvmmsg", ret=5, size=128, peer=io, errno=0)
    c = one("the first client's close", kind="close", peer=io, calls_send=3, calls_recv=1)
    check(c["bytes_sent"] == 5 and c["bytes_recv"] == 0, "close totals", [c])
    one("the listener's close", kind="close", local=io, peer=None)
    accepts = [e for e in find(events, kind="accept", local=io) if "store" in e["flags"]]
    check(len(accepts) == 3, "three store accepts", events)
    # The server ends send the resets, already in CLOSE (their local port is unhashed by then):
    # the first to the data that reached it after its close, the second at its SO_LINGER 0 close.
    for what, acc in (("data after close", accepts[0]), ("SO_LINGER 0 close", accepts[1])):
        sent = by_probe(events, "reset_sent", peer=acc["peer"])
        check(len(sent) == 1 and sent[0]["errno_name"] == "ECONNRESET", "tcp_send_reset of the " + what, events)
    got = by_probe(events, "reset_received", peer=io)
    check(sorted(e["errno_name"] for e in got) == ["ECONNRESET", "EPIPE"],
          "tcp_receive_reset: EPIPE (after FIN) and ECONNRESET", events)


@scenario
def matches_shim(work):
    ports, pid, printed, headers, bpf_events, _ = attached_run(work)
    shim_dir = os.path.join(work, "shim")
    t = start_target(ports, prefix=[OPTS.rdzvscope, "run", "--shim", OPTS.shim, "--out", shim_dir, "--"])
    shim_printed = finish_target(t)
    check(printed == shim_printed, "target behaved differently: %s vs %s" % (printed, shim_printed))
    shim_headers, shim_events = dump(shim_dir)
    same_as_shim(ports, bpf_events, shim_events, at_least=20)
    check(headers[0]["identity"] == shim_headers[0]["identity"], "identity differs",
          [headers[0]["identity"], shim_headers[0]["identity"]])


class SynDropNamespace:
    """A network namespace where SYNs to `port` are dropped and SYN retries are 1 (or
    syn_retries), so that a connect times out in about 3 s (as tests/e2e's connect_timeout;
    7 s with 2 retries). Removed on exit, also on
    failure; ones left by a test killed before its cleanup are removed at the next start."""

    PREFIX = "rdzvbpf-"

    def __init__(self, port, syn_retries=1):
        self.name = "%s%d" % (self.PREFIX, os.getpid())
        self.port = port
        self.syn_retries = syn_retries

    @staticmethod
    def sh(*cmd):
        r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
        check(r.returncode == 0, "`%s` exited %d: %s" % (" ".join(cmd), r.returncode, r.stdout.strip()))

    def __enter__(self):
        for tool in ("ip", "iptables"):
            check(shutil.which(tool) is not None, "connect_timeout needs `%s` (iproute2, iptables)" % tool)
        listing = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout.split()
        for old in listing:
            pid = old[len(self.PREFIX):]
            if old.startswith(self.PREFIX) and pid.isdigit() and not os.path.exists("/proc/" + pid):
                subprocess.run(["ip", "netns", "del", old], stderr=subprocess.DEVNULL)
        self.sh("ip", "netns", "add", self.name)
        try:
            self.sh(*self.prefix(), "ip", "link", "set", "lo", "up")
            self.sh(*self.prefix(), "sysctl", "-q", "-w", "net.ipv4.tcp_syn_retries=%d" % self.syn_retries)
            self.sh(*self.prefix(), "iptables", "-A", "INPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport",
                    str(self.port), "--syn", "-j", "DROP")
        except BaseException:
            self.__exit__()
            raise
        return self

    def prefix(self):
        return ("ip", "netns", "exec", self.name)

    def __exit__(self, *exc):
        subprocess.run(["ip", "netns", "del", self.name], stderr=subprocess.DEVNULL)
        check(not os.path.exists("/run/netns/" + self.name), "namespace %s still exists" % self.name)


@scenario
def connect_timeout(work):
    ports = Ports()
    args = ["timeout", str(ports.store)]
    with SynDropNamespace(ports.store) as ns:
        out_dir = os.path.join(work, "bpf")
        t = start_target(ports, prefix=ns.prefix(), args=args)
        a = start_attach(["--pid", str(t.pid), "--out", out_dir])
        printed = finish_target(t)
        time.sleep(0.2)
        stop_attach(a)
        shim_dir = os.path.join(work, "shim")
        t = start_target(ports, prefix=list(ns.prefix()) + [OPTS.rdzvscope, "run", "--shim", OPTS.shim,
                                                             "--out", shim_dir, "--"], args=args)
        shim_printed = finish_target(t)
    want = {"connect": [-1, 110], "connect_nonblock": [-1, 115], "poll_connect": [0, 0]}
    check(printed == want and shim_printed == want, "the target's connects went otherwise: %s / %s"
          % (printed, shim_printed))
    _, events = dump(out_dir)
    store = "127.0.0.1:%d" % ports.store
    c = find(events, kind="connect", peer=store, errno_name="ETIMEDOUT", ret=-1)
    check(len(c) == 1 and "store" in c[0]["flags"] and c[0]["dur_ns"] > 2e9, "ETIMEDOUT connect", events)
    p = find(events, kind="poll", peer=store, timeout_ms=300)
    check(len(p) == 1 and p[0]["flags"] == ["store", "nonblock", "timeout"], "poll timeout on the pending connect", events)
    closed = find(events, kind="close", peer=store, tcp_state=2)
    check(len(closed) == 1 and closed[0]["flags"] == ["store", "abandoned"], "pending connect abandoned", events)
    # Closing it moves it from SYN_SENT to CLOSE with no error: not a connect that succeeded.
    check(not find(events, kind="connect_done"), "no connect_done for the abandoned connect", events)
    _, shim_events = dump(shim_dir)
    same_as_shim(ports, events, shim_events, at_least=4)



@scenario
def found_connecting(work):
    """A blocking connect to the store port already in SYN_SENT when attach starts (SYNs
    dropped): found, recorded as in progress, and its ETIMEDOUT recorded when the kernel
    decides it."""
    ports = Ports()
    # Two SYN retries: the connect gives up after about 7 s, time enough to start attach on a
    # loaded machine while it is still in SYN_SENT.
    with SynDropNamespace(ports.store, syn_retries=2) as ns:
        out_dir = os.path.join(work, "bpf")
        t = subprocess.Popen(list(ns.prefix()) + [OPTS.target, "connect_now", str(ports.store)],
                             stdout=subprocess.PIPE, env=target_env(ports), text=True)
        check(t.stdout.readline() == "ready\n", "target did not start")
        time.sleep(0.3)   # in connect() now: its SYN is dropped
        a = start_attach(["--pid", str(t.pid), "--out", out_dir])
        out = t.stdout.read()
        check(t.wait(timeout=60) == 0 and out.startswith("connect -1 110"), "the target's connect: %r" % out)
        time.sleep(0.2)
        stop_attach(a)
    _, events = dump(out_dir)
    store = "127.0.0.1:%d" % ports.store
    found = find(events, kind="connect", peer=store)
    check(len(found) == 1 and found[0]["flags"] == ["store", "preexisting"] and found[0]["ret"] == -1
          and found[0]["errno_name"] == "EINPROGRESS", "the connect found in progress", events)
    done = find(events, kind="connect_done", peer=store)
    check(len(done) == 1 and done[0]["errno_name"] == "ETIMEDOUT" and "store" in done[0]["flags"],
          "its outcome, ETIMEDOUT", events)


@scenario
def found_waiting(work):
    """ppoll, select and epoll_wait already waiting on store connections when attach starts,
    timing out after it did: each recorded with its store socket, its 4 s timeout (read from
    the process before the kernel wrote over it) and flag preexisting."""
    ports = Ports()
    server = socket.socket()
    server.bind(("127.0.0.1", ports.store))
    server.listen(8)   # never accepts, never answers: the waits time out
    out_dir = os.path.join(work, "bpf")
    t = subprocess.Popen([OPTS.target, "waits_now", str(ports.store)], stdout=subprocess.PIPE,
                         env=target_env(ports), text=True)
    line = t.stdout.readline().split()
    check(len(line) == 4 and line[0] == "ready", "target did not start: %r" % line)
    fds = dict(zip(("ppoll", "select", "epoll_wait"), map(int, line[1:])))
    time.sleep(0.3)
    a = start_attach(["--pid", str(t.pid), "--out", out_dir])
    out = t.stdout.read()
    check(t.wait(timeout=30) == 0 and out.split() == ["ppoll", "0", "select", "0", "epoll_wait", "0"],
          "the target's waits: %r" % out)
    time.sleep(0.2)
    stop_attach(a)
    server.close()
    _, events = dump(out_dir)
    store = "127.0.0.1:%d" % ports.store
    for op, fd in fds.items():
        got = find(events, kind="poll", op=op, fd=fd)
        check(len(got) == 1 and got[0]["flags"] == ["store", "timeout", "preexisting"]
              and got[0]["timeout_ms"] == 4000 and got[0]["peer"] == store,
              "the %s on fd %d found waiting, then timed out" % (op, fd), events)


def inflight_of(out_dir):
    """The calls in flight of every file in out_dir (`dump`, while attach writes it or after)."""
    return [c for f in cli.dump(OPTS.rdzvscope, out_dir, timeout=60) for c in f["inflight"]]


def expect_inflight(out_dir, expected, when):
    got = inflight_of(out_dir)
    for want in expected:
        check(len([c for c in got if all(c.get(k) == v for k, v in want.items())]) == 1,
              "%s: no call in flight like %s" % (when, want), got)


def blocked_then_killed(work, ports, args, expected, prefix=(), found=False, live=True):
    """bpf_target ARGS under attach from before its calls (found: from once they block): once it
    says it waits, each call of `expected` (a list of dicts a slot must match) is in flight in
    its file, live; then it is SIGKILLed, and after attach stopped, the same calls are still
    there, for good. live=False: killed 0.1 s after it began its calls, between two of attach's
    passes over the calls in flight (most likely), and looked at after the kill only."""
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports, prefix=prefix, args=args)
    a = None if found else start_attach(["--pid", str(t.pid), "--out", out_dir])
    try:
        if not live:
            time.sleep(0.25)   # past attach's first pass, made as it starts; the next is 0.5 s later
        t.stdin.write("go\n")
        t.stdin.flush()
        check(t.stdout.readline() == "waiting\n", "the target did not start its calls")
        if found:
            time.sleep(0.3)   # in its calls now
            a = start_attach(["--pid", str(t.pid), "--out", out_dir])
        time.sleep(1.5 if live else 0.1)   # attach passes over the calls in flight twice a second
        if live:
            expect_inflight(out_dir, expected, "while blocked")
        check(t.poll() is None, "the target's calls returned")
        t.kill()
        t.wait(timeout=10)
        time.sleep(0.3)
        stop_attach(a)
        a = None
        expect_inflight(out_dir, expected, "after SIGKILL")
    finally:
        if a is not None:
            stop_attach(a)
        if t.poll() is None:
            t.kill()


def forever(work, found):
    ports = Ports()
    server = socket.socket()
    server.bind(("127.0.0.1", ports.store))
    server.listen(8)   # the handshakes complete, nothing is ever sent
    try:
        store = "127.0.0.1:%d" % ports.store
        flags = ["store", "preexisting"] if found else ["store"]
        want = [dict(kind="poll", op=op, flags=flags, peer=store, timeout_ms=None) for op in ("poll", "ppoll")]
        blocked_then_killed(work, ports, ["forever", str(ports.store)], want, found=found)
    finally:
        server.close()


@scenario
def inflight_forever(work):
    """A poll and a ppoll with no timeout on store connections whose server never answers, in
    flight as the shim publishes them (timeout none), live and after SIGKILL."""
    forever(work, found=False)


@scenario
def inflight_forever_found(work):
    """The same waits already blocked when attach starts: found (flag preexisting), live and
    after SIGKILL."""
    forever(work, found=True)


@scenario
def inflight_found_once(work):
    """A thread in a loop of 1 ms polls on a store connection when attach starts: the poll it
    is in as attach looks at it began, most likely, after the probes were attached, so it is
    both seen entering and found blocked. One call, one slot: never two for the thread, nor
    the found one (preexisting) once that poll is over."""
    ports = Ports()
    server = socket.socket()
    server.bind(("127.0.0.1", ports.store))
    server.listen(8)
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports, args=["polls", str(ports.store)])
    a = None
    try:
        time.sleep(0.2)
        a = start_attach(["--pid", str(t.pid), "--out", out_dir])
        for _ in range(3):
            time.sleep(0.6)   # past a pass over the calls in flight
            got = inflight_of(out_dir)
            check(len(got) <= 1 and not any("preexisting" in c["flags"] for c in got),
                  "the polling thread's slots: one call at most, none found at start", got)
    finally:
        if a is not None:
            stop_attach(a)
        t.kill()
        t.wait()
        server.close()


@scenario
def inflight_lookups(work):
    """getaddrinfo and gethostbyname of a name only a DNS server that never answers could know
    (a network namespace of the test's own), in flight as the shim publishes them (the name
    asked for), live and after SIGKILL, which ends them inside the resolver."""
    lookups(work, live=True)


@scenario
def inflight_lookups_killed_at_once(work):
    """The same lookups killed 0.1 s after they began, before attach's pass over the calls in
    flight most likely: their threads' ends say they died in them, and they stay in flight."""
    lookups(work, live=False)


def lookups(work, live):
    from rdzvtest import e2e   # the silent DNS server and the resolver's view, as resolver_silent's
    run = types.SimpleNamespace(name="inflight_lookups", dir=work, netns=())
    hosts = e2e.write_hosts_file(os.path.join(work, "hosts"), [])
    resolv = os.path.join(work, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver %s\noptions timeout:30 attempts:1\n" % e2e.SILENT_DNS)
    name = "rdzv-store.example"
    with e2e.lone_netns(run) as inns:
        dns = subprocess.Popen(list(inns) + ["python3", "-c", e2e.SILENT_DNS_SERVER, e2e.SILENT_DNS],
                               stdout=subprocess.PIPE, text=True)
        try:
            check(dns.stdout.readline() == "listening\n", "the silent DNS server did not start")
            want = [dict(kind="resolve", op=op, host=name) for op in ("getaddrinfo", "gethostbyname")]
            blocked_then_killed(work, Ports(), ["lookups", name], want, live=live,
                                prefix=list(inns) + list(e2e.resolver_view_prefix(hosts, resolv)))
        finally:
            dns.kill()
            dns.wait()


def fd_run(work, mode, shim=True, extra=lambda ports: []):
    """fd_target MODE under attach, then (shim=True) under the shim: (ports, what the target
    printed, attach's events by pid, the shim's events, all attach's events)."""
    ports = Ports()
    args = [mode, str(ports.io)] + extra(ports)
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports, args=args, program=OPTS.fd_target)
    a = start_attach(["--pid", str(t.pid), "--out", out_dir])
    printed = finish_target(t)
    time.sleep(0.2)
    stop_attach(a)
    by_pid = dump_by_pid(out_dir)
    shim_events = None
    if shim:
        shim_dir = os.path.join(work, "shim")
        t = start_target(ports, prefix=[OPTS.rdzvscope, "run", "--shim", OPTS.shim, "--out", shim_dir, "--"],
                         args=args, program=OPTS.fd_target)
        shim_printed = finish_target(t)
        check({k: v[:2] for k, v in printed.items()} == {k: v[:2] for k, v in shim_printed.items()},
              "target behaved differently: %s vs %s" % (printed, shim_printed))
        _, shim_events = dump(shim_dir)
    return ports, printed, by_pid, shim_events, [e for evs in by_pid.values() for e in evs]


def one_store(events, what, **want):
    got = [e for e in find(events, **want) if "store" in e["flags"]]
    check(len(got) == 1, "%s: %d records" % (what, len(got)), events)
    return got[0]


@scenario
def dup_copies(work):
    """Copies of a store socket (dup, dup2, dup3, F_DUPFD, F_DUPFD_CLOEXEC) are store sockets,
    with totals of their own; dup2 over a store socket closes it (its close record)."""
    ports, printed, _, shim_events, events = fd_run(work, "dup")
    io = "127.0.0.1:%d" % ports.io
    for what, n in (("dup", 3), ("dup2", 4), ("dup3", 5), ("dupfd", 6), ("dupfd_cloexec", 7), ("dup2_over", 8)):
        fd = printed[what][2]
        check(printed[what][:2] == [n, 0], "the target's send on its %s copy: %s" % (what, printed))
        e = one_store(events, "the send on the %s copy (fd %d)" % (what, fd), kind="send", fd=fd, size=n, ret=n,
                      peer=io)
        check(e["flags"] == ["store"] and e["op"] == "send", "send record", [e])
        one_store(events, "the close of the %s copy" % what, kind="close", fd=fd, peer=io, calls_send=1, bytes_sent=n)
    other = printed["other"][2]
    over = one_store(events, "dup2 over a store socket", kind="close", fd=other, bytes_sent=1, calls_send=1)
    check(over["flags"] == ["store"] and over["tcp_state"] == 0, "closed by dup2: its close record", [over])
    same_as_shim(ports, events, shim_events, at_least=16)


@scenario
def fork_inherits(work):
    """A forked child's inherited store socket: its send and close in the child's own file,
    with the child's own totals."""
    ports, printed, by_pid, shim_events, events = fd_run(work, "fork")
    io = "127.0.0.1:%d" % ports.io
    child = printed["child"][2]
    check(printed["child"][0] == 0 and child in by_pid, "the child's file (pid %d): %s" % (child, sorted(by_pid)),
          events)
    mine = by_pid[child]
    e = one_store(mine, "the child's send", kind="send", size=9, ret=9, peer=io)
    check(e["flags"] == ["store"], "send record", [e])
    one_store(mine, "the child's close", kind="close", peer=io, calls_send=1, bytes_sent=9)
    parent = [e for pid, evs in by_pid.items() if pid != child for e in evs]
    one_store(parent, "the parent's close: its own totals", kind="close", peer=io, calls_send=1, bytes_sent=2)
    same_as_shim(ports, events, shim_events, at_least=8)


@scenario
def close_range_drops(work):
    """close_range closes two copies (their close records); the numbers, reused by an AF_UNIX
    socketpair, are no longer store sockets."""
    ports, printed, _, shim_events, events = fd_run(work, "close_range")
    io = "127.0.0.1:%d" % ports.io
    first = printed["close_range"][2]
    check(printed["close_range"][:2] == [0, 0] and printed["reused_write"][:2] == [1, 0], "target: %s" % printed)
    for fd in (first, first + 1):
        e = one_store(events, "close_range's close of fd %d" % fd, kind="close", fd=fd, peer=io)
        check(e["flags"] == ["store"] and e["calls_send"] == 0, "close record", [e])
    check(not find(events, kind="send", fd=first), "the write on the reused number is not a store send", events)
    check(len(find(events, kind="close", fd=first)) == 1, "one close of fd %d" % first, events)
    same_as_shim(ports, events, shim_events, at_least=7)


@scenario
def exec_drops(work):
    """exec: the close-on-exec copy is forgotten (its number, reused, is no store socket); the
    copy that survives exec is still the store socket. bpf only: the shim's table dies with
    the image."""
    ports, printed, _, _, events = fd_run(work, "exec", shim=False)
    io = "127.0.0.1:%d" % ports.io
    cloexec, kept = printed["cloexec_copy"][2], printed["kept_copy"][2]
    check(printed["reused_write"][:2] == [1, 0] and printed["kept_send"][:2] == [6, 0], "target: %s" % printed)
    # The number is reused at once by the new image's loader (ld.so.cache, then closed), then
    # by the target's socketpair: neither is the store socket.
    check(not find(events, kind="send", fd=cloexec), "the write on the close-on-exec copy's number", events)
    check(not find(events, kind="close", fd=cloexec), "no close record for the close-on-exec copy's number", events)
    one_store(events, "the send on the copy that survived exec", kind="send", fd=kept, size=6, ret=6, peer=io)
    one_store(events, "its close", kind="close", fd=kept, peer=io, calls_send=1, bytes_sent=6)


@scenario
def waits_timeouts(work):
    """select and pselect time out on a store socket; epoll_wait and epoll_pwait while a store
    connect is pending; a readv of a store socket (bpf only: the shim has no readv hook)."""
    ports, printed, _, shim_events, events = fd_run(work, "waits", extra=lambda p: [str(p.store)])
    io = "127.0.0.1:%d" % ports.io
    want = {"select": [0, 0], "pselect": [0, 0], "epoll_wait": [0, 0], "epoll_pwait": [0, 0], "readv": [5, 0]}
    check(all(printed[k][:2] == v for k, v in want.items()), "the target's waits went otherwise: %s" % printed)
    c = printed["select"][2]
    for op in ("select", "pselect"):
        e = one_store(events, op, kind="poll", op=op, fd=c, peer=io, timeout_ms=100, nfds=c + 1)
        check(e["flags"] == ["store", "timeout"] and e["dur_ns"] == 100e6, op + " timeout record", [e])
    ep = printed["epoll_wait"][2]
    for op in ("epoll_wait", "epoll_pwait"):
        e = one_store(events, op, kind="poll", op=op, fd=ep, timeout_ms=100)
        check(e["flags"] == ["store", "timeout"] and e["peer"] is None, op + " timeout record", [e])
    s = printed["readv"][2]
    e = one_store(events, "readv", kind="recv", op="read", fd=s, size=16, ret=5)
    check(e["flags"] == ["store"] and e["local"] == io, "readv record", [e])
    same_as_shim(ports, [x for x in events if x is not e], shim_events, at_least=12)


# Each child's environment, not the launcher's, names the port; each connects as the first
# thing it does. Five of them, so that a loader that only learns ports after being woken
# (as attach did before the kernel read them at exec) cannot win every race.
QUICK_LAUNCHER = r'''
read go || exit 3
for i in 1 2 3 4 5; do
  MASTER_PORT=$PORT "$TARGET" quick_client $PORT &
done
wait
'''


def echo_server(port, n):
    """Accepts n connections on 127.0.0.1:port, answers each one's 4 bytes with "pong"."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)

    def serve():
        for _ in range(n):
            c, _ = ls.accept()
            c.recv(4)
            c.sendall(b"pong")
            c.close()
        ls.close()
    threading.Thread(target=serve, daemon=True).start()


@scenario
def exec_learns_ports(work):
    """Programs that connect to their store port at once, the port named only in their own
    environment (set by the launcher for the child): their connect, send and recv are store
    records, from the first call on (the kernel reads the port at exec)."""
    port = free_ports(1)[0]
    echo_server(port, 5)
    out_dir = os.path.join(work, "bpf")
    env = job_env(PORT=str(port), TARGET=OPTS.fd_target)
    job = subprocess.Popen(["/bin/sh", "-c", QUICK_LAUNCHER], stdin=subprocess.PIPE, env=env, text=True)
    a = start_attach(["--pid", str(job.pid), "--out", out_dir])
    job.stdin.write("go\n")
    job.stdin.close()
    check(job.wait(timeout=30) == 0, "the quick clients failed")
    time.sleep(0.2)
    stop_attach(a)
    by_pid = dump_by_pid(out_dir)
    peer = "127.0.0.1:%d" % port
    clients = {pid: evs for pid, evs in by_pid.items() if find(evs, kind="connect", peer=peer)}
    check(len(clients) == 5, "connects of %d quick clients recorded, want 5" % len(clients),
          [e for evs in by_pid.values() for e in evs])
    for pid, evs in sorted(clients.items()):
        for kind, size in (("connect", None), ("send", 4), ("recv", 4)):
            got = [e for e in find(evs, kind=kind, peer=peer) if "store" in e["flags"]]
            check(got and (size is None or got[0]["ret"] == size),
                  "pid %d: no store %s record (the port was not known at its first call)" % (pid, kind), evs)


@scenario
def status_line(work):
    """On a terminal (script(1) gives it one), attach keeps a status line up to date once a
    second, then the summary replaces it; redirected, only the summary is written."""
    check(shutil.which("script") is not None, "script (bsdutils) is needed")
    ports = Ports()
    t = start_target(ports)
    out_dir = os.path.join(work, "bpf")
    cmd = "%s attach --pid %d --duration 2.5 --out %s" % (OPTS.rdzvscope, t.pid, out_dir)
    # Bytes: text mode would turn the carriage returns into newlines.
    r = subprocess.run(["script", "-qefc", cmd, "/dev/null"], stdout=subprocess.PIPE, timeout=30)
    out = r.stdout.decode(errors="replace")
    finish_target(t)
    check(r.returncode == 0, "attach on a terminal exited %d: %r" % (r.returncode, out))
    status = [p for p in out.split("\r") if p.startswith("rdzvscope attach: following ")]
    check(len(status) >= 1 and "following 1 process(es)" in status[0] and "lost" in status[0],
          "no status line on the terminal: %r" % out)
    # The status line is cleared (CR, erase line), then the summary.
    check("events from 1 process(es)" in out.split("\r\x1b[K")[-1], "the summary after it: %r" % out)
    piped = subprocess.run([OPTS.rdzvscope, "attach", "--pid", str(os.getpid()), "--duration", "1.5", "--out",
                            os.path.join(work, "piped")], stderr=subprocess.PIPE, text=True, timeout=30)
    check("following" not in piped.stderr and "\r" not in piped.stderr, "a status line when redirected: %r"
          % piped.stderr)


@scenario
def port_filter(work):
    ports = Ports()
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports)
    a = start_attach(["--pid", str(t.pid), "--out", out_dir, "--port", str(ports.store)])
    finish_target(t)
    time.sleep(0.2)
    stop_attach(a, signal.SIGTERM)
    _, events = dump(out_dir)
    check(find(events, kind="connect", errno_name="ECONNREFUSED"), "store connect kept", events)
    check(not find(events, kind="bind"), "bind on another port filtered out", events)


@scenario
def duration_stops(work):
    ports = Ports()
    out_dir = os.path.join(work, "bpf")
    t = start_target(ports)
    t0 = time.monotonic()
    a = start_attach(["--pid", str(t.pid), "--out", out_dir, "--duration", "2"])
    finish_target(t)
    rest = a.stderr.read()
    check(a.wait(timeout=20) == 0, "attach --duration failed: " + rest)
    took = time.monotonic() - t0
    check(1.5 < took < 10, "--duration 2 took %.1fs" % took)
    _, events = dump(out_dir)
    check(find(events, kind="bind", errno_name="EADDRINUSE"), "events flushed at the end", events)
    mode = os.stat(os.path.join(out_dir, os.listdir(out_dir)[0])).st_mode & 0o777
    check(mode == 0o600, "trace file mode %o" % mode)


@scenario
def no_such_pid(work):
    r = subprocess.run([OPTS.rdzvscope, "attach", "--pid", "999999999", "--out", os.path.join(work, "x")],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "no such process" in r.stderr and r.stderr.count("\n") == 1,
          "no such pid: %d %r" % (r.returncode, r.stderr))
    r = subprocess.run([OPTS.rdzvscope, "attach", "--out", os.path.join(work, "x")], capture_output=True, text=True)
    check(r.returncode == 2, "no target given: exit %d" % r.returncode)


@scenario
def not_root(work):
    setpriv = shutil.which("setpriv")
    check(setpriv is not None, "setpriv (util-linux) is needed")
    out = os.path.join(tempfile.gettempdir(), "rdzv-bpf-notroot-%d" % os.getpid())
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", OPTS.rdzvscope,
                        "attach", "--pid", str(os.getpid()), "--out", out], capture_output=True, text=True)
    shutil.rmtree(out, ignore_errors=True)
    check(r.returncode == 2 and "root" in r.stderr and r.stderr.count("\n") == 1,
          "not root: %d %r" % (r.returncode, r.stderr))


@scenario
def built_without_bpf(work):
    r = subprocess.run([OPTS.rdzvscope, "attach", "--pid", "1", "--out", os.path.join(work, "x")],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "built without BPF support" in r.stderr, "%d %r" % (r.returncode, r.stderr))


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    for o in ("--rdzvscope", "--target", "--shim", "--work"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--fd-target", help="fd_target.c, for the store sockets whose descriptor changes")
    OPTS = ap.parse_args()
    if SCENARIOS[OPTS.scenario] is not built_without_bpf and os.geteuid() != 0:
        print("FAIL: the bpf tests run as root (CI runs them as root)", file=sys.stderr)
        return 1
    work = os.path.join(OPTS.work, OPTS.scenario)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        SCENARIOS[OPTS.scenario](work)
    except Fail as f:
        print("FAIL %s: %s" % (OPTS.scenario, f), file=sys.stderr)
        return 1
    print("ok", OPTS.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
