#!/usr/bin/env python3
"""Cost of the rdzvscope shim on a loopback 64-byte send() loop.

Wall clock: interleaved rounds of (no shim | shim, plain socket | shim, store socket |
strace -f -e trace=network), medians and ratios against no shim.
Instructions: callgrind counts of the sender at two loop lengths; the difference divided by
the extra sends is the cost per send(), which is repeatable where wall time is not.

  overhead.py --send-loop BUILD/bin/send_loop --shim BUILD/lib/librdzvscope.so [--json F]
  overhead.py ... --callgrind-only --check     # exit 1 when over budget (used by ctest)
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

PLAIN_BUDGET = 30   # instructions added per send() on a socket that is not a store socket
STORE_BUDGET = 150  # ... on a store socket
PEER_BUDGET = 150   # ... on a peer socket (a process group's connection, once a store was reached)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mode_env(mode, port, trace_dir, shim):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "RDZVSCOPE_DIR", "RDZVSCOPE_PORTS", "MASTER_PORT")}
    if mode in ("plain", "store", "peer"):
        env["LD_PRELOAD"] = shim
        env["RDZVSCOPE_DIR"] = trace_dir
        if mode in ("store", "peer"):
            env["RDZVSCOPE_PORTS"] = str(port)
    return env


def start_sink(args, port, trace_dir):
    sink = subprocess.Popen([args.send_loop, "sink", str(port)], stdout=subprocess.PIPE, text=True,
                            env=mode_env("base", port, trace_dir, args.shim))
    if sink.stdout.readline().strip() != "ready":
        sys.exit("overhead: the sink did not start")
    return sink


def run_once(args, mode, n, trace_dir, wrapper=()):
    # peer: the sender first connects to a second sink on the store port, so that its
    # connection to the first is a peer socket (kFdPeer), as a process group's pairs are.
    port = free_port()
    store_port = free_port() if mode == "peer" else None
    sinks = [start_sink(args, port, trace_dir)]
    try:
        if store_port:
            sinks.append(start_sink(args, store_port, trace_dir))
        cmd = list(wrapper) + [args.send_loop, "send", str(port), str(n), str(args.size)] + \
            ([str(store_port)] if store_port else [])
        out = subprocess.run(cmd, env=mode_env(mode, store_port or port, trace_dir, args.shim),
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            sys.exit(f"overhead: {' '.join(cmd)} failed: {out.stderr.strip()[-400:]}")
        return out
    finally:
        for sink in sinks:
            sink.wait(timeout=60)


def ns_per_send(out):
    m = re.search(r"([0-9.]+) ns/send", out.stdout)
    if not m:
        sys.exit(f"overhead: no timing in {out.stdout!r}")
    return float(m.group(1))


def wall_clock(args, trace_dir):
    modes = ["base", "plain", "store"] + (["strace"] if shutil.which("strace") else [])
    samples = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes:
            if m == "strace":
                out = run_once(args, "base", max(args.sends // 20, 1000), trace_dir,
                               wrapper=("strace", "-f", "-qq", "-e", "trace=network", "-o", os.devnull))
            else:
                out = run_once(args, m, args.sends, trace_dir)
            samples[m].append(ns_per_send(out))
        print(f"  round {r + 1}/{args.rounds}: " +
              ", ".join(f"{m} {samples[m][-1]:.0f} ns" for m in modes), file=sys.stderr)
    med = {m: statistics.median(v) for m, v in samples.items()}
    return {m: {"median_ns_per_send": med[m], "ratio_vs_no_shim": med[m] / med["base"],
                "samples": samples[m]} for m in modes}


def callgrind_total(args, mode, n, trace_dir):
    with tempfile.TemporaryDirectory() as tmp:
        outfile = os.path.join(tmp, "cg.out")
        run_once(args, mode, n, trace_dir,
                 wrapper=("valgrind", "--tool=callgrind", f"--callgrind-out-file={outfile}", "-q"))
        with open(outfile) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
    sys.exit("overhead: no callgrind total")


def instructions(args, trace_dir):
    n1, n2 = args.cg_sends, args.cg_sends * 3
    per_call = {}
    for m in ("base", "plain", "store", "peer"):
        t1 = callgrind_total(args, m, n1, trace_dir)
        t2 = callgrind_total(args, m, n2, trace_dir)
        per_call[m] = (t2 - t1) / (n2 - n1)
        print(f"  callgrind {m}: {per_call[m]:.1f} instructions per loop iteration", file=sys.stderr)
    return {"per_send_base": per_call["base"],
            "added_plain": per_call["plain"] - per_call["base"],
            "added_store": per_call["store"] - per_call["base"],
            "added_peer": per_call["peer"] - per_call["base"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--send-loop", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--sends", type=int, default=200000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cg-sends", type=int, default=20000)
    ap.add_argument("--callgrind-only", action="store_true")
    ap.add_argument("--check", action="store_true", help="fail when over the instruction budget")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.shim = os.path.abspath(args.shim)

    result = {"size": args.size}
    with tempfile.TemporaryDirectory() as trace_dir:
        if not args.callgrind_only:
            result["wall_clock"] = wall_clock(args, trace_dir)
        if shutil.which("valgrind"):
            result["instructions"] = instructions(args, trace_dir)
        elif args.check:
            sys.exit("overhead: --check needs valgrind")

    if "wall_clock" in result:
        print(f"{args.size}-byte loopback send loop, median of {args.rounds} interleaved rounds:")
        for m, v in result["wall_clock"].items():
            print(f"  {m:7s} {v['median_ns_per_send']:9.1f} ns/send  x{v['ratio_vs_no_shim']:.3f}")
    if "instructions" in result:
        i = result["instructions"]
        print(f"callgrind: send loop iteration {i['per_send_base']:.1f} instr without the shim; "
              f"shim adds {i['added_plain']:.1f} (plain socket, budget {PLAIN_BUDGET}) and "
              f"{i['added_store']:.1f} (store socket, budget {STORE_BUDGET}) and "
              f"{i['added_peer']:.1f} (peer socket, budget {PEER_BUDGET})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    if args.check and "instructions" in result:
        i = result["instructions"]
        if i["added_plain"] > PLAIN_BUDGET or i["added_store"] > STORE_BUDGET or i["added_peer"] > PEER_BUDGET:
            print("overhead: over the instruction budget", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
