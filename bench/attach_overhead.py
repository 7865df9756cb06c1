#!/usr/bin/env python3
"""Cost of `rdzvscope attach` on a loopback 64-byte send() loop, and its event throughput.

Per send, wall clock and the sender's CPU time (user + system: the probes run inside its
syscalls; far steadier than wall time on a shared machine), interleaved rounds, medians,
ratios against no probe:
  bare   no attach running
  floor  no attach; the kernel's syscall tracepoint on for a syscall nobody makes (see below)
  other  attach running on ANOTHER pid (a sleeping process): the filtered case, every
         syscall of the sender costs the tgid lookup only
  self   attach on the sender itself, its connection a store socket (--port): every send
         goes through the store-socket table (first 32 recorded, then totals only, as the shim)
  every  as self with --io-events 0: every send is a trace record through the ring buffer
Syscall cost: what every syscall of the machine pays, in a process attach does not follow, in
ns per call (wall and CPU) over two loops, `send_loop null` (write() to /dev/null: the probes
look at every write, for the caller's pid) and `send_loop getppid` (a syscall they never look
at), in three interleaved modes:
  bare   no syscall tracepoint on
  floor  the kernel's own syscall tracepoint switched on for a syscall nobody makes (tracefs,
         syscalls/sys_enter_acct): no BPF at all, only the kernel's traced syscall path that
         any syscall tracepoint puts every task of the machine on
  other  attach running on another (sleeping) pid
'other' minus 'floor' is what attach's own programs add; 'floor' minus 'bare' is what no
design built on syscall tracepoints can avoid on this kernel.
Throughput: a sender paced at --rate sends/s (default 50,000) for --seconds, attached with
--io-events 0: the trace's lost counter must be 0 and its send records must number the sends.

  attach_overhead.py --rdzvscope BUILD/bin/rdzvscope --send-loop BUILD/bin/send_loop \
                     --sender BUILD/bin/attach_sender [--json F]     (root)
Exit status 1 when events were lost or missing.
"""
import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_attach(args, pid, port, out_dir, extra=()):
    a = subprocess.Popen([args.rdzvscope, "attach", "--pid", str(pid), "--port", str(port), "--out", out_dir]
                         + list(extra), stderr=subprocess.PIPE, text=True)
    line = a.stderr.readline()
    if "recording" not in line:
        sys.exit("attach_overhead: attach did not start: " + line + a.stderr.read())
    return a


def stop_attach(a):
    a.send_signal(signal.SIGINT)
    summary = a.stderr.read()
    if a.wait(timeout=60) != 0:
        sys.exit("attach_overhead: attach failed: " + summary)
    m = re.search(r"(\d+) lost", summary)
    return summary.strip(), int(m.group(1)) if m else None


class SyscallTracepointFloor:
    """The kernel's syscall tracepoint on for acct(2), which nothing calls: no BPF program runs,
    but every task of the machine now takes the traced syscall path."""
    TRACEFS = "/sys/kernel/tracing"
    ENABLE = TRACEFS + "/events/syscalls/sys_enter_acct/enable"

    def __enter__(self):
        self.mounted = False
        if not os.path.exists(self.ENABLE):
            subprocess.run(["mount", "-t", "tracefs", "nodev", self.TRACEFS], check=True)
            self.mounted = True
        with open(self.ENABLE) as f:
            self.was = f.read().strip()[:1]  # left as someone else had it
        with open(self.ENABLE, "w") as f:
            f.write("1")
        return self

    def __exit__(self, *exc):
        with open(self.ENABLE, "w") as f:
            f.write(self.was or "0")
        if self.mounted:
            subprocess.run(["umount", self.TRACEFS], check=True)


@contextlib.contextmanager
def probing(args, mode, out_dir, port, sender_pid=None):
    """The measured mode set up for the block: yields attach's process, or None (bare, floor).
    other: attach on a sleeping process; self/every: attach on `sender_pid`."""
    idle = attach = None
    try:
        if mode == "floor":
            with SyscallTracepointFloor():
                yield None
            return
        if mode == "other":
            idle = subprocess.Popen(["sleep", "600"])
            attach = start_attach(args, idle.pid, port, out_dir)
        elif mode in ("self", "every"):
            attach = start_attach(args, sender_pid, port, out_dir,
                                  ["--io-events", "0", "--max-mb", "64"] if mode == "every" else [])
        yield attach
    finally:
        for p in (idle, attach):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def one_run(args, mode, n, rate, work):
    """Returns ((wall, cpu) ns per send, attach summary line or None, lost or None, trace dir)."""
    port = free_port()
    out_dir = os.path.join(work, "%s-%d" % (mode, port))
    # The sender on the first CPU, the sink on the last one, spinning (never sleeping): no send
    # has to wake an idle CPU (on a VM an IPI costs more than the send, and varies by 20 %
    # between runs). The throughput run's sink reads as any, not to starve attach's loader.
    cpus = sorted(os.sched_getaffinity(0))
    spin = rate == 0 and len(cpus) > 1
    pin = (lambda cpu: (lambda: os.sched_setaffinity(0, {cpu}))) if spin else (lambda cpu: None)
    sink = subprocess.Popen([args.send_loop, "sink", str(port)] + (["spin"] if spin else []),
                            stdout=subprocess.PIPE, text=True, preexec_fn=pin(cpus[-1]))
    sender = subprocess.Popen([args.sender, str(port), str(n), str(args.size), str(rate)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              preexec_fn=pin(cpus[0]))
    try:
        if sink.stdout.readline().strip() != "ready" or sender.stdout.readline().strip() != "ready":
            sys.exit("attach_overhead: the sink or the sender did not start")
        with probing(args, mode, out_dir, port, sender.pid) as attach:
            sender.stdin.write("go\n")
            sender.stdin.close()
            out = sender.stdout.read()
            if sender.wait(timeout=600) != 0:
                sys.exit("attach_overhead: the sender failed: " + out)
            summary, lost = stop_attach(attach) if attach else (None, None)
        m = re.search(r"([0-9.]+) ns/send ([0-9.]+) cpu-ns/send", out)
        return (float(m.group(1)), float(m.group(2))), summary, lost, out_dir
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
        sink.wait(timeout=60)


def wall_clock(args, work):
    modes = ("bare", "floor", "other", "self", "every")
    wall, cpu = {m: [] for m in modes}, {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes:
            (w, c), _, _, _ = one_run(args, m, args.sends, 0, work)
            wall[m].append(w)
            cpu[m].append(c)
        print("  round %d/%d: %s" % (r + 1, args.rounds, ", ".join("%s %.0f/%.0f ns" % (m, wall[m][-1], cpu[m][-1])
                                                                  for m in modes)), file=sys.stderr)
    mw = {m: statistics.median(v) for m, v in wall.items()}
    mc = {m: statistics.median(v) for m, v in cpu.items()}
    return {m: {"median_wall_ns": mw[m], "wall_ratio": mw[m] / mw["bare"], "median_cpu_ns": mc[m],
                "cpu_ratio": mc[m] / mc["bare"], "wall_samples": wall[m], "cpu_samples": cpu[m]} for m in modes}


def one_syscall_loop(args, loop, mode, work, cpu0):
    """(wall, cpu) ns per call of `send_loop LOOP` in one mode."""
    with probing(args, mode, tempfile.mkdtemp(dir=work), free_port()) as attach:
        out = subprocess.run([args.send_loop, loop, str(args.null_calls)], capture_output=True, text=True,
                             check=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu0})).stdout
        if attach:
            stop_attach(attach)
    m = re.search(r"([0-9.]+) ns/call ([0-9.]+) cpu-ns/call", out)
    return float(m.group(1)), float(m.group(2))


def syscall_cost(args, work):
    """ns per call of the two syscall loops in the three modes, interleaved rounds, medians."""
    cpu0 = min(os.sched_getaffinity(0))
    loops, modes = ("null", "getppid"), ("bare", "floor", "other")
    samples = {l: {m: {"wall": [], "cpu": []} for m in modes} for l in loops}
    for r in range(args.rounds):
        for loop in loops:
            for mode in modes:
                w, c = one_syscall_loop(args, loop, mode, work, cpu0)
                samples[loop][mode]["wall"].append(w)
                samples[loop][mode]["cpu"].append(c)
        print("  syscall round %d/%d: %s" % (r + 1, args.rounds, "; ".join(
            "%s %s" % (l, " ".join("%s %.0f" % (m, samples[l][m]["cpu"][-1]) for m in modes)) for l in loops)),
            file=sys.stderr)
    out = {"calls": args.null_calls}
    for loop in loops:
        med = {m: {k: statistics.median(v) for k, v in samples[loop][m].items()} for m in modes}
        out[loop] = {"median_ns": med, "samples": samples[loop],
                     "floor_added_cpu_ns": med["floor"]["cpu"] - med["bare"]["cpu"],
                     "attach_added_cpu_ns": med["other"]["cpu"] - med["bare"]["cpu"],
                     "floor_ratio_cpu": med["floor"]["cpu"] / med["bare"]["cpu"],
                     "attach_ratio_cpu": med["other"]["cpu"] / med["bare"]["cpu"],
                     "attach_ratio_wall": med["other"]["wall"] / med["bare"]["wall"]}
    return out


def throughput(args, work):
    n = int(args.rate * args.seconds)
    (ns, _), summary, lost, out_dir = one_run(args, "every", n, args.rate, work)
    dump = subprocess.run([args.rdzvscope, "dump", out_dir], capture_output=True, text=True, timeout=300)
    sends = header_lost = 0
    for line in dump.stdout.splitlines():
        j = json.loads(line)
        if j["type"] == "header":
            header_lost += j["lost"]
        elif j["type"] == "event" and j["kind"] == "send" and j["ret"] == args.size:
            sends += 1
    achieved = 1e9 / ns
    return {"rate_asked": args.rate, "rate_achieved": achieved, "sends": n, "send_records": sends,
            "lost_summary": lost, "lost_header": header_lost, "attach": summary}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for o in ("--rdzvscope", "--send-loop", "--sender"):
        ap.add_argument(o, required=True)
    ap.add_argument("--sends", type=int, default=200000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rate", type=int, default=50000)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--null-calls", type=int, default=2000000)
    ap.add_argument("--parts", default="send,syscall,throughput",
                    help="which measurements, comma-separated (default: all three)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("attach_overhead: attach needs root")

    parts = set(args.parts.split(","))
    if not parts or parts - {"send", "syscall", "throughput"}:
        sys.exit("attach_overhead: --parts takes send, syscall and throughput, comma-separated")
    result = {"size": args.size}
    with tempfile.TemporaryDirectory() as work:
        if "send" in parts:
            result["wall_clock"] = wall_clock(args, work)
        if "syscall" in parts:
            result["syscall"] = syscall_cost(args, work)
        if "throughput" in parts:
            result["throughput"] = throughput(args, work)

    if "wall_clock" in result:
        print("%d-byte loopback send loop, %d sends, median of %d interleaved rounds (wall | sender CPU):"
              % (args.size, args.sends, args.rounds))
        for m, v in result["wall_clock"].items():
            print("  %-6s %8.0f ns/send x%.2f | %8.0f ns/send x%.2f" % (m, v["median_wall_ns"], v["wall_ratio"],
                                                                      v["median_cpu_ns"], v["cpu_ratio"]))
    if "syscall" in result:
        s = result["syscall"]
        print("syscalls of another process, %d calls, median of %d interleaved rounds, CPU ns per call "
              "(bare | kernel syscall tracepoint on, no BPF | attach on another pid):" % (s["calls"], args.rounds))
        for loop, what in (("null", "write() to /dev/null"), ("getppid", "getppid()")):
            v = s[loop]
            med = v["median_ns"]
            print("  %-20s %5.0f | %5.0f (+%.0f, x%.2f) | %5.0f (+%.0f, x%.2f; wall x%.2f)"
                  % (what, med["bare"]["cpu"], med["floor"]["cpu"], v["floor_added_cpu_ns"], v["floor_ratio_cpu"],
                     med["other"]["cpu"], v["attach_added_cpu_ns"], v["attach_ratio_cpu"], v["attach_ratio_wall"]))
    ok = True
    if "throughput" in result:
        t = result["throughput"]
        ok = t["lost_summary"] == 0 and t["lost_header"] == 0 and t["send_records"] == t["sends"]
        print("throughput: %d sends at %.0f/s (asked %d/s), every one a record: %d send records, %s lost (header %d): "
              "%s" % (t["sends"], t["rate_achieved"], t["rate_asked"], t["send_records"], t["lost_summary"],
                      t["lost_header"], "ok" if ok else "FAILED"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
