#!/usr/bin/env python3
"""The README's commands, run as a user runs them, with their verdicts checked.

    run_examples.py demo        --rdzvscope BIN --python PY --work DIR
    run_examples.py torchrun_sh --rdzvscope BIN --python PY --work DIR

demo: `bash scripts/demo.sh` (the README's first command; its install and build steps find
everything in place), then its diagnosis.json: straggler_timeout, initiating rank 2.
torchrun_sh: `bash examples/torchrun.sh examples/train_min.py` on one node with 4 workers
(PyTorch 2.x's torchrun first on PATH, rank 2 late through RDZV_LATE_RANK), then
`rdzvscope analyze` on its trace directory: straggler_timeout, initiating rank 2.
--examples DIR runs DIR's torchrun.sh and train_min.py instead (tests/package: the installed
ones, with the installed CLI as --rdzvscope).
Standard library only.
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
from rdzvtest.launch import job_env  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def verdict_of(diag):
    v = diag.get("verdict") or {}
    return v.get("class"), v.get("initiating_rank")


def check(diag, want, where, output):
    got = verdict_of(diag)
    if got != want:
        print(output[-6000:])
        print(f"FAIL: {where}: verdict {got}, expected {want}")
        return 1
    print(f"PASS: {where}: {got[0]}, initiating rank {got[1]}: {diag['verdict']['summary']}")
    return 0


def case_demo(args, work):
    out = os.path.join(work, "demo")
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "demo.sh")], cwd=ROOT,
                       env=job_env(DEMO_OUT=out, BUILD_DIR=args.build_dir, DEMO_PYTHON=args.python),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout[-6000:])
        print(f"FAIL: scripts/demo.sh exited {p.returncode}")
        return 1
    if "VERDICT  straggler_timeout" not in p.stdout:
        print(p.stdout[-6000:])
        print("FAIL: the demo printed no straggler verdict")
        return 1
    with open(os.path.join(out, "diagnosis.json")) as f:
        return check(json.load(f), ("straggler_timeout", 2), "scripts/demo.sh", p.stdout)


def case_torchrun_sh(args, work):
    traces = os.path.join(work, "traces")
    bindir = os.path.dirname(args.python)
    env = job_env(PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                    RDZVSCOPE=args.rdzvscope, RDZV_HOST="127.0.0.1", RDZV_PORT=str(free_port()),
                    NNODES="1", NPROC_PER_NODE="4", TRACE_DIR=traces,
                    RDZV_TIMEOUT_S="3", RDZV_DELAY_S="9", RDZV_LATE_RANK="2",
                    GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    log = os.path.join(work, "torchrun.log")
    with open(log, "w") as f:
        p = subprocess.run(["bash", os.path.join(args.examples, "torchrun.sh"),
                            os.path.join(args.examples, "train_min.py")],
                           env=env, stdout=f, stderr=subprocess.STDOUT, timeout=120)
    with open(log) as f:
        text = f.read()
    if p.returncode == 0 or "sleeping 9s before the rendezvous" not in text:
        print(text[-6000:])
        print(f"FAIL: examples/torchrun.sh exited {p.returncode}; the straggler did not happen")
        return 1
    a = subprocess.run([args.rdzvscope, "analyze", traces, "--log", log, "--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if a.returncode != 0:
        print(a.stderr)
        print(f"FAIL: rdzvscope analyze exited {a.returncode}")
        return 1
    return check(json.loads(a.stdout), ("straggler_timeout", 2), "examples/torchrun.sh", text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=["demo", "torchrun_sh"])
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--python", required=True, help="an interpreter with PyTorch 2.x and its torchrun")
    ap.add_argument("--build-dir", default="build", help="the build tree demo.sh uses")
    ap.add_argument("--examples", default=os.path.join(ROOT, "examples"),
                    help="torchrun_sh: the examples directory (tests/package: the installed one)")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.rdzvscope = os.path.abspath(args.rdzvscope)
    os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f"{args.case}-", dir=args.work)
    rc = {"demo": case_demo, "torchrun_sh": case_torchrun_sh}[args.case](args, work)
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"(scratch kept in {work})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
