#!/usr/bin/env python3
"""`rdzvscope watch` on damaged and half-written trace files: each is counted and named in the
report, the intact files are still read, and watch never crashes or fails. While a refresh
loop runs, a file appears with its header not yet complete (as a writer that is creating it
leaves it) and is completed later: it must be read once complete.

    watch_damaged.py --rdzvscope BIN --gen GEN_JOB --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import Fail, expect, finish_scenario, run_script  # noqa: E402

HEADER = 4096
RECORD = 192


def damage(d, good):
    """Four damaged files beside the good ones; returns their names."""
    with open(good, "rb") as f:
        data = f.read()
    files = {
        "cut.rzt": data[:HEADER + RECORD + 100],   # ends inside a record
        "garbage.rzt": b"not a trace at all\n" * 300,
        "empty.rzt": b"",
        "unsealed.rzt": b"\0" * 8 + data[8:],      # magic not stored yet
    }
    for name, content in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(content)
    return sorted(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    t_start = time.monotonic()
    work = os.path.join(args.work, f"watch_damaged-{os.getpid()}")
    src, d = os.path.join(work, "src"), os.path.join(work, "traces")
    os.makedirs(work)
    subprocess.run([args.gen, src, "9"], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(d)
    names = sorted(os.listdir(src))
    late = names.pop()                     # the file that appears while watching
    for n in names:
        shutil.copy(os.path.join(src, n), d)
    bad = damage(d, os.path.join(src, names[0]))
    errors = []

    # One report: the damage counted and named, the 8 intact files read.
    p = subprocess.run([args.rdzvscope, "watch", d, "--once", "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    expect(p.returncode == 0, f"watch --once exited {p.returncode}: {p.stderr[:500]}", errors)
    w = json.loads(p.stdout)
    expect(w["inputs"]["trace_files"] == 12, f"trace_files {w['inputs']['trace_files']}, expected 12", errors)
    expect(w["inputs"]["damaged_files"] == 4, f"damaged_files {w['inputs']['damaged_files']}, expected 4", errors)
    for name in bad:
        expect(any(name in problem for problem in w["inputs"]["problems"]),
               f"{name} not named among the problems {w['inputs']['problems']}", errors)
    expect(len([r for r in w["ranks"] if r["state"] != "not_started"]) == 8, "the intact files' ranks", errors)
    t = subprocess.run([args.rdzvscope, "watch", d, "--once"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    expect(t.returncode == 0 and "4 damaged or still being written" in t.stdout,
           f"text report: exit {t.returncode}, no damage line:\n{t.stdout}", errors)

    # A file created while watching: first its header is incomplete, then it is complete.
    loop = subprocess.Popen([args.rdzvscope, "watch", d, "--count", "12", "--interval", "0.25", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(os.path.join(src, late), "rb") as f:
        data = f.read()
    time.sleep(0.6)
    with open(os.path.join(d, late), "wb") as f:
        f.write(b"\0" * 8 + data[8:])
    time.sleep(0.8)
    with open(os.path.join(d, late), "r+b") as f:
        f.write(data[:8])
    out, err = loop.communicate(timeout=60)
    expect(loop.returncode == 0, f"watch --count exited {loop.returncode}: {err[:500]}", errors)
    w = json.loads(out)
    expect(w["inputs"]["damaged_files"] == 4, f"after the late file was completed: damaged_files "
           f"{w['inputs']['damaged_files']}, expected 4 (the completed file still counted?)", errors)
    expect(len([r for r in w["ranks"] if r["state"] != "not_started"]) == 9,
           f"the completed file's rank not read: {[r['rank'] for r in w['ranks'] if r['state'] != 'not_started']}",
           errors)
    return finish_scenario("watch_damaged", errors, work, t_start, keep=False)


if __name__ == "__main__":
    run_script(main)
