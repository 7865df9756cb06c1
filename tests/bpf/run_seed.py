#!/usr/bin/env python3
"""attach on store sockets that existed before it started (bpf/seed.cpp, store_identify in
bpf/rdzv_sock.bpf.h): the case of a job that is already hung.

    run_seed.py --rdzvscope CLI --target SEED_TARGET --work DIR SCENARIO

seeded_sockets (attach --pid) and seeded_all (--all --port): seed_target.c opens its sockets (two store connections to this test's server,
a store listener of its own with a connection to itself, a connection to a port that is no
store port) and waits; attach starts; the test closes the server's end of one connection;
the program then reads 0 bytes, sends, gets EPIPE, times out in poll, and closes. Every event
is checked in attach's trace, with the close totals counting only what happened after attach.
Run as root; exit status 0 = pass, 1 = fail.
"""
import importlib.util
import os
import socket
import struct
import subprocess
import sys
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import check  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

import run_bpf  # noqa: E402
from run_bpf import by_probe, find, scenario, start_attach, stop_attach, target_env  # noqa: E402


def one(events, what, **want):
    got = find(events, **want)
    check(len(got) == 1, "%s: %d records" % (what, len(got)), events)
    return got[0]


def listening(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


@scenario
def seeded_sockets(work):
    seeded(work, lambda ports, pid: ["--pid", str(pid)])


@scenario
def seeded_all(work):
    """The same with --all: every process's store sockets are looked up at start, this test's
    own too (its server's listener and ends)."""
    files = seeded(work, lambda ports, pid: ["--all", "--port", str(ports.store), "--port", str(ports.io)])
    mine = [e for e in files.get(os.getpid(), []) if "preexisting" in e["flags"]]
    check(len(find(mine, kind="listen")) == 1 and len(find(mine, kind="accept")) == 5,
          "this test's store listener and its 5 accepted ends found too", mine)


def seeded(work, attach_args):
    """The scenario, attach started with attach_args(ports, target pid); returns every
    process's events, by pid."""
    ports = run_bpf.Ports()  # store: MASTER_PORT (served here); io: RDZVSCOPE_PORTS (the target's own)
    other = free_port()
    server, other_server = listening(ports.store), listening(other)
    out_dir = os.path.join(work, "bpf")
    t = subprocess.Popen([run_bpf.OPTS.target, str(ports.store), str(ports.io), str(other)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=target_env(ports), text=True)
    ready = t.stdout.readline().split()
    check(len(ready) == 10 and ready[0] == "ready", "target did not start: %r" % ready)
    fd_a, fd_b, fd_l, fd_c, fd_s, fd_d, fd_e, fd_f, fd_g = (int(x) for x in ready[1:])
    end_a, _ = server.accept()
    end_b, _ = server.accept()
    end_e, _ = server.accept()
    end_f, _ = server.accept()
    end_g, _ = server.accept()
    end_d, _ = other_server.accept()
    check(end_a.recv(16) == b"hello", "A's bytes sent before attach")
    port_a, port_b, port_g = end_a.getpeername()[1], end_b.getpeername()[1], end_g.getpeername()[1]
    t0 = time.monotonic()
    a = start_attach(attach_args(ports, t.pid) + ["--out", out_dir])
    end_a.close()  # FIN: the target's recv returns 0, its next send is answered by a reset
    end_e.close()  # the recv blocked since before attach returns 0
    end_g.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    end_g.close()  # a reset, before the target calls anything on G
    time.sleep(0.1)
    t.stdin.write("go\n")
    t.stdin.flush()
    out = t.stdout.read()
    check(t.wait(timeout=30) == 0, "target failed: " + out)
    printed = dict((l.split()[0], [int(x) for x in l.split()[1:]]) for l in out.splitlines())
    kid, kid_status = printed.pop("kid", [0, -1])
    check(kid_status == 0, "the child's send on B failed")
    time.sleep(0.2)
    stop_attach(a)
    attached_s = time.monotonic() - t0
    want = {"recv_a": [0, 0], "send_a": [4, 0], "send_a2": [-1, 32], "poll_b": [0, 0], "send_s": [3, 0],
            "send_d": [3, 0], "recv_e": [0, 0], "poll_f": [0, 0]}
    check(printed == want, "the target's calls went otherwise: %s" % printed)
    files = run_bpf.dump_by_pid(out_dir)
    events = files[t.pid]

    store = "127.0.0.1:%d" % ports.store
    io = "127.0.0.1:%d" % ports.io
    found = [e for e in events if "preexisting" in e["flags"] and e["kind"] in ("connect", "accept", "listen")]
    for e in found:
        check(e["flags"] == ["store", "preexisting"] and e["ret"] == (e["fd"] if e["kind"] == "accept" else 0)
              and e["dur_ns"] == 0, "a found socket's record", [e])
    found_at = {e["fd"]: e["ts_ns"] for e in found}
    check(sorted(e["fd"] for e in found) == sorted([fd_a, fd_b, fd_l, fd_c, fd_s, fd_e, fd_f, fd_g]),
          "found: A, B, the listener, C and its accepted end S, E, F, G (not D, on no store port)", found)
    for fd, port in ((fd_a, port_a), (fd_b, port_b)):
        e = one(found, "found connect", kind="connect", fd=fd)
        check(e["peer"] == store and e["local"] == "127.0.0.1:%d" % port and e["tcp_state"] == 1, "found connect", [e])
    e = one(found, "found listener", kind="listen", fd=fd_l)
    check(e["local"] == io and e["peer"] is None and e["tcp_state"] == 10, "found listener", [e])
    c = one(found, "found C", kind="connect", fd=fd_c)
    check(c["peer"] == io, "found C", [c])
    e = one(found, "found S", kind="accept", fd=fd_s)
    check(e["local"] == io and e["peer"] == c["local"], "found S: the store's end of C", [e])

    def on(fd, kind, **want):
        return one([x for x in events if "preexisting" not in x["flags"]], "%s on fd %d" % (kind, fd),
                   kind=kind, fd=fd, **want)

    e = on(fd_a, "recv", op="recv", ret=0)
    check(e["flags"] == ["store", "zero_read"] and e["peer"] == store, "0-byte recv on A", [e])
    e = on(fd_a, "send", op="send", ret=4)
    check(e["flags"] == ["store"], "send on A", [e])
    e = on(fd_a, "send", op="send", errno_name="EPIPE")
    check(e["flags"] == ["store"] and e["ret"] == -1 and e["size"] == 4, "EPIPE on A", [e])
    # Known by its socket since its first call: the reset the peer sent is recorded too.
    resets = by_probe(events, "reset_received", local="127.0.0.1:%d" % port_a)
    check(len(resets) == 1 and resets[0]["errno_name"] == "EPIPE", "the reset A received", events)
    e = on(fd_b, "poll", op="poll")
    check(e["flags"] == ["store", "timeout"] and e["timeout_ms"] == 200 and e["peer"] == store, "poll timeout on B", [e])
    e = on(fd_s, "send", op="send", ret=3)
    check(e["local"] == io, "send on S", [e])
    check(not find(events, fd=fd_d), "nothing on D (no store port)", events)
    # Calls blocked since before attach (bpf/store_io.bpf.h, late_io_exit): recorded at their
    # exit, the recv dated from when attach found E (it began earlier: preexisting).
    e = one(events, "the recv blocked on E", kind="recv", fd=fd_e)
    check(e["flags"] == ["store", "zero_read", "preexisting"] and e["ret"] == 0 and e["size"] == 16
          and e["ts_ns"] == found_at[fd_e] and e["dur_ns"] > 0 and e["peer"] == store, "late recv on E", [e])
    e = one(events, "the poll blocked on F", kind="poll", fd=fd_f)
    check(e["flags"] == ["store", "timeout"] and e["timeout_ms"] == 5000 and e["dur_ns"] == 5000e6, "late poll on F", [e])

    # Close totals: what happened after attach only (A's 5 bytes before it are not counted).
    closes = {x["fd"]: x for x in find(events, kind="close")}
    check(sorted(closes) == sorted([fd_a, fd_b, fd_l, fd_c, fd_s, fd_e, fd_f, fd_g]),
          "a close record for each found socket", events)
    # Known by its socket from attach's start (rdzv_identify_found), not only from its first call.
    resets = by_probe(events, "reset_received", local="127.0.0.1:%d" % port_g)
    check(len(resets) == 1 and resets[0]["errno_name"] == "ECONNRESET", "the reset G received before any call",
          events)
    check(closes[fd_g]["tcp_state"] == 7, "G closed after the reset", [closes[fd_g]])
    # A child forked after attach inherits the found sockets (in the kernel, at fork).
    e = one(files.get(kid, []), "the child's send on B", kind="send", fd=fd_b)
    check(e["flags"] == ["store"] and e["ret"] == 3 and e["peer"] == store, "the child's send on B", [e])
    e = closes[fd_a]
    check((e["bytes_sent"], e["calls_send"], e["bytes_recv"], e["calls_recv"]) == (4, 2, 0, 1), "A's totals", [e])
    check(0 < e["open_ns"] < attached_s * 1e9, "A's open time counts from attach", [e])
    e = closes[fd_b]
    check((e["bytes_sent"], e["calls_send"], e["bytes_recv"], e["calls_recv"]) == (0, 0, 0, 0)
          and e["tcp_state"] == 1, "B's totals and state", [e])
    check(closes[fd_s]["bytes_sent"] == 3, "S's totals", [closes[fd_s]])
    check((closes[fd_e]["calls_recv"], closes[fd_f]["calls_recv"]) == (1, 0), "E's recv counted, F's poll not", events)
    for s in (server, other_server, end_b, end_d, end_f):
        s.close()
    return files


if __name__ == "__main__":
    sys.exit(run_bpf.main())  # its options and checks; this file's scenario is registered
