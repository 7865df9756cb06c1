#!/usr/bin/env python3
"""Capture golden analyzer inputs from real end-to-end scenarios.

    capture.py --rdzvscope build/bin/rdzvscope SCENARIO... [--out tests/golden]

Runs each scenario as tests/e2e/harness.py does (rdzvtest.e2e: a real 4-rank torch job with
its fault, checked to have happened), then stores its inputs, small, in OUT/<scenario>/:

    traces/<host>.<pid>.rzt   every trace file, compacted: the header's capacity is rewritten
                              to the number of slots used (next_slot, capped by capacity) and
                              the file is cut after those records (header + n * 192 bytes);
                              the records themselves are untouched
    logs/<label>.log          every process's stdout+stderr, as the job wrote it
    scenario.json             what was run: the harness's expectation (class, initiating rank,
                              cause; a "computed" rank is resolved), the store port, every
                              process's exit status, the harness's notes

OUT/<scenario>/ is replaced as a whole. expected.json (the analyzer's expected diagnosis) is
not written here: it is kept beside these files by the golden test's owner.
Standard library only.
"""
import argparse
import importlib.util
import json
import os
import shutil
import struct
import sys
import tempfile

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import e2e  # noqa: E402
from rdzvtest.checks import Fail, log  # noqa: E402
# include/rdzvscope/trace_format.h: capacity u32, next_slot u64
from rdzvtest.trace_patch import HEADER_SIZE, MAGIC, OFF_CAPACITY, OFF_NEXT_SLOT, RECORD_SIZE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def compact(src, dst):
    """Copy trace file src to dst holding only the used slots. Returns (slots kept, bytes)."""
    with open(src, "rb") as f:
        head = bytearray(f.read(HEADER_SIZE))
        if len(head) < HEADER_SIZE or bytes(head[:8]) != MAGIC:
            raise Fail(f"{src}: not a finished trace file (no magic)")
        (capacity,) = struct.unpack_from("<I", head, OFF_CAPACITY)
        (next_slot,) = struct.unpack_from("<Q", head, OFF_NEXT_SLOT)
        used = min(next_slot, capacity)
        records = f.read(used * RECORD_SIZE)
    if len(records) != used * RECORD_SIZE:
        raise Fail(f"{src}: {len(records)} bytes of records, expected {used * RECORD_SIZE}")
    struct.pack_into("<I", head, OFF_CAPACITY, used)
    with open(dst, "wb") as f:
        f.write(head)
        f.write(records)
    return used, HEADER_SIZE + len(records)


def capture(h, name, out_root, launch="hand", tag=""):
    run, errors = e2e.run_scenario(h, name, launch)
    for n in run.notes:
        log(f"[{name}] {n}")
    if errors:
        for e in errors:
            log(f"  - {e}")
        raise Fail(f"{name}: the fault did not happen as designed; nothing stored")

    dest = os.path.join(out_root, f"{tag}{name}")
    tmp = dest + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "traces"))
    os.makedirs(os.path.join(tmp, "logs"))
    total = 0
    traces = sorted(os.listdir(run.trace_dir)) if os.path.isdir(run.trace_dir) else []
    for fn in traces:
        if fn.endswith(".rzt"):
            used, size = compact(os.path.join(run.trace_dir, fn), os.path.join(tmp, "traces", fn))
            total += size
            log(f"[{name}] traces/{fn}: {used} records, {size} bytes")
    for path in run.logs():
        shutil.copyfile(path, os.path.join(tmp, "logs", os.path.basename(path)))
        total += os.path.getsize(path)
    spec = run.spec
    meta = {
        "scenario": name,
        "fault": spec["fault"],
        "expect": {"class": spec["cls"], "initiating_rank": run.expect_rank, "cause": spec["cause"],
                   "log_only_class": spec["log_cls"]},
        "timeout_s": spec["timeout"],
        "master_port": run.port,
        "processes": [{"label": p.label, "rank": p.rank, "pid": p.pid, "exit": p.rc,
                       "killed_by_harness": p.killed_by_bound} for p in run.procs],
        "notes": run.notes,
        "captured_with": f"tests/golden/capture.py (torch {h.torch_version}, launch {launch})",
    }
    with open(os.path.join(tmp, "scenario.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    # keep an expected.json that the golden test's owner already wrote
    old_expected = os.path.join(dest, "expected.json")
    if os.path.exists(old_expected):
        shutil.copyfile(old_expected, os.path.join(tmp, "expected.json"))
        log(f"[{name}] kept the existing expected.json (check it against the new capture)")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    log(f"[{name}] stored in {dest}: {len(traces)} trace file(s), {total} bytes")
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="+", help="one or more of: " + ", ".join(e2e.SCENARIOS))
    ap.add_argument("--rdzvscope", required=True, help="path of the rdzvscope CLI")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter that has torch")
    ap.add_argument("--out", default=HERE, help="golden root (default: this directory)")
    ap.add_argument("--launch", choices=sorted(e2e.MODES), default="hand",
                    help="how the ranks are started (tests/e2e/harness.py --launch)")
    ap.add_argument("--tag", default="",
                    help="prefix of the stored directory's name, e.g. torch2.13-")
    args = ap.parse_args()
    specs = e2e.MODES[args.launch][0]
    unknown = [s for s in args.scenarios if s not in specs]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; known: {', '.join(specs)}")
    work = tempfile.mkdtemp(prefix="rdzvscope-golden-")
    h = e2e.Harness(os.path.abspath(args.rdzvscope), args.python, work)
    rc = 0
    try:
        for name in args.scenarios:
            try:
                capture(h, name, os.path.abspath(args.out), args.launch, args.tag)
            except Fail as e:
                log(f"FAIL: {e}")
                rc = 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
