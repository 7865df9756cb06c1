#!/usr/bin/env python3
"""End-to-end tests of clock alignment across hosts in `rdzvscope analyze`, on the real traces
of tests/golden/straggler (one host, captured from a real PyTorch run) turned into a two-host
job by trace_patch.py: ranks 1 and 3 move to host "vm2", whose clock runs SHIFT seconds
ahead, and their store connections get the addresses two hosts would have (10.9.0.2 for
vm2's clients, 10.9.0.1 for the store host) on both ends: in their files and in the store
host's accept/send/recv records of those connections.

usage: clocks_cli_test.py RDZVSCOPE GOLDEN_DIR CASE
"""
import importlib.util
import json
import os
import re
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import trace_patch  # noqa: E402
from rdzvtest.cli import expect, run_case, run_cli  # noqa: E402

RDZVSCOPE, GOLDEN, CASE = sys.argv[1], sys.argv[2], sys.argv[3]


def run(args, **kw):
    """rdzvscope ARGS, the parent environment scrubbed (RDZVSCOPE read at each call)."""
    return run_cli(RDZVSCOPE, args, **kw)

LOOPBACK = bytes([127, 0, 0, 1])
VM2_CLIENT = bytes([10, 9, 0, 2])
STORE_HOST = bytes([10, 9, 0, 1])
MOVED_RANKS = (1, 3)


def two_host_copy(tmp, name, shift_s):
    files = trace_patch.copy_scenario(os.path.join(GOLDEN, "straggler"), os.path.join(tmp, name))
    moved = [f for f in files if trace_patch.rank_of(f) in MOVED_RANKS]
    server = [f for f in files if trace_patch.rank_of(f) == 0]
    expect(len(moved) == 2 and len(server) == 1, "ranks 0, 1 and 3 in the scenario", files)
    client_ports = set()

    def client_side(which, ip, port, kind):
        if ip != LOOPBACK:
            return None
        if which == "local":
            if kind in (8, 9):  # connect, connect_done: this client's end of a store connection
                client_ports.add(port)
            return VM2_CLIENT
        return STORE_HOST

    for f in moved:
        trace_patch.patch_header(f, host="vm2", shift_s=shift_s)
        trace_patch.rewrite_addresses(f, client_side)
    expect(client_ports, "the moved ranks connected to the store", moved)

    # The server's records of vm2's connections: peer = one of client_ports on loopback.
    with open(server[0], "r+b") as fh:
        data = bytearray(fh.read())
    for slot in range(trace_patch.header_field(server[0], trace_patch.OFF_CAPACITY, "<I")):
        base = trace_patch.HEADER_SIZE + slot * trace_patch.RECORD_SIZE
        if base + trace_patch.RECORD_SIZE > len(data) or data[base] not in trace_patch.NET_KINDS:
            continue
        peer, local = base + trace_patch.REC_PEER, base + trace_patch.REC_LOCAL
        if (trace_patch.ipv4_of(data, peer) == LOOPBACK and trace_patch.ipv4_of(data, local) == LOOPBACK
                and int.from_bytes(data[peer + 2:peer + 4], "little") in client_ports):
            trace_patch.set_ipv4(data, peer, VM2_CLIENT)
            trace_patch.set_ipv4(data, local, STORE_HOST)
    with open(server[0], "r+b") as fh:
        fh.write(data)
    return os.path.join(tmp, name, "traces"), len(client_ports)


def analyze_json(traces):
    rc, out, err = run(["analyze", traces, "--format", "json"])
    expect(rc == 0, f"exit {rc}", out, err)
    return json.loads(out)


def case_host_ahead_by_seconds(tmp):
    in_step = analyze_json(two_host_copy(tmp, "in_step", 0)[0])
    ahead_dir, connections = two_host_copy(tmp, "ahead", 7.5)
    ahead = analyze_json(ahead_dir)

    clocks = ahead.get("clocks")
    expect(clocks and len(clocks) == 2, "two hosts' clocks", ahead.get("clocks"))
    ref, vm2 = clocks
    expect(ref["host"] == "vm" and ref["reference"] and ref["offset_ms"] == 0, "the store host is the reference", ref)
    expect(vm2["host"] == "vm2" and not vm2["reference"] and vm2["pairs"] == connections and vm2["applied"],
           f"vm2: every one of the {connections} store connections of ranks 1 and 3 matched", vm2)
    expect(abs(vm2["offset_ms"] - 7500) <= vm2["uncertainty_ms"] + 0.01, "offset within the uncertainty", vm2)
    expect(vm2["uncertainty_ms"] < 5, "a tight window on one machine", vm2)
    # Clocks in step: estimated near 0 and not applied.
    s = in_step["clocks"][1]
    expect(abs(s["offset_ms"]) <= s["uncertainty_ms"] + 0.01 and not s["applied"], "in step", s)

    for key in ("class", "initiating_rank", "initiating_host"):
        expect(ahead["verdict"][key] == in_step["verdict"][key], f"verdict {key} as with clocks in step",
               ahead["verdict"], in_step["verdict"])
    expect(ahead["verdict"]["class"] == "straggler_timeout" and ahead["verdict"]["initiating_rank"] == 2,
           "the stored scenario's fault", ahead["verdict"])
    expect(ahead["discriminators"]["seconds_late"] == in_step["discriminators"]["seconds_late"], "lateness",
           ahead["discriminators"], in_step["discriminators"])
    # Every rank's time line as with clocks in step (ISO times to the millisecond).
    for a, b in zip(ahead["ranks"], in_step["ranks"]):
        for k in ("launched", "first_store_connect", "connected"):
            expect(a[k] == b[k] or (a[k] and b[k] and a[k][:21] == b[k][:21]), f"rank {a['rank']} {k}", a, b)

    rc, out, err = run(["analyze", ahead_dir])
    expect(rc == 0, f"exit {rc}", err)
    flat = " ".join(out.split())  # the line is wrapped at 80 columns
    expect(re.search(r"CLOCK vm2's clock is \+(7499\.9\d|7500\.0\d) ms \(\+- \d+\.\d\d ms\) off vm's", flat)
           and "its times were moved onto vm's clock" in flat, "text report line", out)
    # The ticket summary and the HTML page say it too.
    rc, out, err = run(["analyze", ahead_dir, "--format", "markdown"])
    expect(rc == 0, f"exit {rc}", err)
    row = [ln for ln in out.splitlines() if ln.startswith("| Clock of vm2 |")]
    expect(len(row) == 1 and re.search(r"\+(7499\.9\d|7500\.0\d) ms", row[0]), "markdown clock row", out)
    html = os.path.join(tmp, "ahead.html")
    rc, out, err = run(["analyze", ahead_dir, "--html", html])
    expect(rc == 0, f"exit {rc}", err)
    with open(html, encoding="utf-8") as fh:
        page = fh.read()
    section = re.search(r'<section id="clocks">(.*?)</section>', page, re.S)
    expect(section and "vm2" in section.group(1) and re.search(r"\+(7499\.9\d|7500\.0\d) ms", section.group(1)),
           "HTML clocks section", section.group(0) if section else page[:3000])

    rc, out, err = run(["analyze", two_host_copy(tmp, "small", 0.02)[0]])
    expect(rc == 0 and "CLOCK" not in out, "20 ms is not worth a line", out)


def case_one_host_shows_no_clocks(tmp):
    traces = trace_patch.copy_scenario(os.path.join(GOLDEN, "straggler"), os.path.join(tmp, "s"))
    j = analyze_json(os.path.dirname(traces[0]))
    expect("clocks" not in j, "nothing to align on one host", j.keys())


if __name__ == "__main__":
    run_case(globals(), CASE)
