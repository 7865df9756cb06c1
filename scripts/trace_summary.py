#!/usr/bin/env python3
"""Summarize `rdzvscope dump` output: one line per trace file, one per interesting event.

    build/bin/rdzvscope dump DIR | python3 scripts/trace_summary.py [--kinds K,K,...|--all]

Reads the JSON lines that `rdzvscope dump` prints (header, events, summary per file) from
stdin or from the files given. Standard library only.
"""
import argparse
import json
import sys

DEFAULT_KINDS = "proc_start,proc_exit,resolve,connect,connect_done,bind,listen,accept"


def ident_text(ident):
    if not ident:
        return "no identity"
    parts = []
    rank = ident.get("rank")
    if rank is not None and rank >= 0:
        parts.append(f"rank {rank}/{ident.get('world_size')}")
    else:
        parts.append("no RANK")
    if ident.get("local_rank") is not None and ident.get("local_rank") >= 0:
        parts.append(f"local {ident['local_rank']}")
    if ident.get("master_addr") or (ident.get("master_port") or -1) >= 0:
        parts.append(f"master {ident.get('master_addr') or '?'}:{ident.get('master_port')}")
    if ident.get("run_id"):
        parts.append(f"run_id {ident['run_id']}")
    if ident.get("slurm_job_id"):
        parts.append(f"slurm job {ident['slurm_job_id']} procid {ident.get('slurm_procid')}")
    return ", ".join(parts)


def cut(text, n):
    text = text or ""
    return text if len(text) <= n else text[: n - 3] + "..."


def event_text(ev):
    kind = ev.get("kind", "?")
    t = ev.get("since_start_s")
    out = [f"{t:+9.3f}s" if isinstance(t, (int, float)) else f"{'?':>10}", f"{kind:<12}"]
    if ev.get("op") and ev.get("op") != kind:
        out.append(f"({ev['op']})")
    if ev.get("fd") is not None and ev.get("fd", -1) >= 0:
        out.append(f"fd={ev['fd']}")
    if kind == "resolve":
        out.append(f"{ev.get('host')!s}:{ev.get('service')!s} -> {ev.get('naddrs')} addr(s)")
        if ev.get("first"):
            out.append(f"first={ev['first']}")
        if ev.get("gai_error"):
            out.append(f"gai_error={ev['gai_error']}")
    for key in ("local", "peer"):
        if ev.get(key):
            out.append(f"{key}={ev[key]}")
    if kind == "listen" and ev.get("size") is not None:
        out.append(f"backlog={ev['size']}")
    if ev.get("errno"):
        out.append(f"ret={ev.get('ret')} {ev.get('errno_name') or ev.get('errno')}")
    elif kind not in ("proc_start",):
        out.append(f"ret={ev.get('ret')}")
    if ev.get("timeout_ms") not in (None, -1) and kind in ("poll", "sockopt", "connect_done"):
        out.append(f"timeout={ev['timeout_ms']}ms")
    dur = ev.get("dur_ns")
    if dur:
        out.append(f"{dur / 1e6:.3f}ms")
    flags = ev.get("flags") or []
    if flags:
        out.append("[" + ",".join(flags) + "]")
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="dump output files (default: stdin)")
    ap.add_argument("--kinds", default=DEFAULT_KINDS, help=f"event kinds to show (default {DEFAULT_KINDS})")
    ap.add_argument("--all", action="store_true", help="show every event")
    args = ap.parse_args()
    kinds = set(k.strip() for k in args.kinds.split(",") if k.strip())

    streams = [open(f, encoding="utf-8") for f in args.files] if args.files else [sys.stdin]
    files = events = hidden = 0
    for stream in streams:
        for lineno, line in enumerate(stream, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                print(f"  (not JSON, line {lineno}: {cut(line, 100)})")
                continue
            typ = rec.get("type")
            if typ == "header":
                files += 1
                name = rec.get("file") or f"{rec.get('host')}.{rec.get('pid')}"
                print(f"== {name}  pid {rec.get('pid')} ppid {rec.get('ppid')}  "
                      f"{ident_text(rec.get('identity'))}")
                print(f"   started {rec.get('start_time')}  store ports {rec.get('store_ports')}  "
                      f"cmd: {cut(rec.get('cmdline') or rec.get('exe'), 90)}")
            elif typ == "event":
                events += 1
                if args.all or rec.get("kind") in kinds or rec.get("errno"):
                    print("   " + event_text(rec))
                else:
                    hidden += 1
            elif typ == "summary":
                counts = " ".join(f"{k}={rec.get(k)}" for k in ("records", "torn", "invalid", "dropped", "lost"))
                print(f"   -- {counts}")
            else:
                print(f"   {cut(line, 120)}")
    print(f"{files} trace file(s), {events} event(s)"
          + (f", {hidden} not shown (send/recv/poll/close...; --all shows them)" if hidden else ""))
    return 0 if files else 1


if __name__ == "__main__":
    sys.exit(main())
