#!/usr/bin/env python3
"""Runs tests/stress/stress under a shim and checks what it left:
  - the program's exit status is 0 (every threaded/forked exchange echoed exactly);
  - with --tsan: ThreadSanitizer reported nothing (TSAN_OPTIONS halt_on_error=1 exitcode=66,
    and no "WARNING: ThreadSanitizer" on stderr);
  - `rdzvscope dump` reads every trace file without error, none has a torn or invalid record,
    there is one file per process (the parent + every forked child), and the parent's file
    holds the store connects it made (unless the file filled up: then `dropped` says so).
Usage: run_stress.py --shim LIB --cli RDZVSCOPE --prog STRESS [--tsan] [--threads N --rounds N]
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.ports import free_port  # noqa: E402


def fail(msg, detail=""):
    print("FAIL: " + msg)
    if detail:
        print(detail)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--tsan", action="store_true")
    ap.add_argument("--suppressions", default="")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--fork-every", type=int, default=25)
    a = ap.parse_args()

    out = tempfile.mkdtemp(prefix="rdzvscope-stress-")
    try:
        port = free_port()
        env = dict(os.environ)
        env.update({"LD_PRELOAD": a.shim, "RDZVSCOPE_DIR": os.path.join(out, "traces"),
                    "RDZVSCOPE_PORTS": str(port)})
        if a.tsan:
            opts = "halt_on_error=1 exitcode=66 second_deadlock_stack=1"
            if a.suppressions:
                opts += " suppressions=" + a.suppressions
            env["TSAN_OPTIONS"] = opts
        argv = [a.prog, str(port), str(a.threads), str(a.rounds), str(a.fork_every)]
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        detail = "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr[-20000:])
        if "WARNING: ThreadSanitizer" in p.stderr or p.returncode == 66:
            fail("ThreadSanitizer reported a problem (exit %d)" % p.returncode, detail)
        if p.returncode != 0:
            fail("stress exited %d" % p.returncode, detail)
        print(p.stdout.strip())
        children = int(p.stdout.split("children=")[1].split()[0])

        tdir = os.path.join(out, "traces")
        files = sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []
        d = subprocess.run([a.cli, "dump", tdir], capture_output=True, text=True, timeout=300)
        if d.returncode != 0 or d.stderr.strip():
            fail("dump found damage (exit %d)" % d.returncode, d.stderr[-5000:])
        headers, summaries = {}, {}
        for line in d.stdout.splitlines():
            j = json.loads(line)
            if j["type"] == "header":
                headers[j["file"]] = j
            elif j["type"] == "summary":
                summaries[j["file"]] = j
        if len(summaries) != len(files):
            fail("dump read %d of %d files" % (len(summaries), len(files)), "\n".join(files))
        bad = [s for s in summaries.values() if s["torn"] or s["invalid"]]
        if bad:
            fail("torn or invalid records", json.dumps(bad, indent=1))
        if len(files) != 1 + children:
            fail("%d trace files for 1 process + %d children" % (len(files), children), "\n".join(files))
        pids = {h["pid"] for h in headers.values()}
        if len(pids) != len(files):
            fail("two files of one pid", json.dumps(sorted(pids)))
        total = sum(s["records"] for s in summaries.values())
        dropped = sum(s["dropped"] for s in summaries.values())
        expect = a.threads * a.rounds + children  # successful store connects, at least
        if total + dropped < expect:
            fail("%d records + %d dropped, fewer than the %d connects made" % (total, dropped, expect))
        print("stress: %d trace files, %d records, %d dropped, no torn/invalid record%s"
              % (len(files), total, dropped, ", TSan clean" if a.tsan else ""))
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
