#!/usr/bin/env python3
"""`rdzvscope run --verdict` around a real PyTorch job under torchrun (gloo, static
rendezvous, 3 workers, tests/e2e/rank.py), as a job script would use it: the verdict must be
the last thing on stderr, the exit status torchrun's own.

usage: run_verdict_test.py --rdzvscope BIN --python PY --work DIR CASE

Cases:
    worker_crashed  worker 2 raises before init_process_group; torchrun stops the others and
                    exits 1: the verdict names rank 2 dead (rank_died), from the traces alone.
    cancelled       worker 2 stalls before init_process_group (timeout 30 minutes, as many jobs
                    keep it); the scheduler's SIGTERM comes to rdzvscope after the others have
                    waited some seconds, is passed on to torchrun, which stops its workers: the
                    verdict names rank 2, the one the others waited for, and says no timeout
                    fired.
"""
import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest.launch import job_env, torchrun_cmd  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

RANK_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "rank.py")
NPROC = 3


def start(args, work, rank_env, timeout_s):
    port = free_port()
    env = job_env(E2E_TIMEOUT_S=str(timeout_s), E2E_RANK_ENV=json.dumps(rank_env),
                  GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    cmd = [args.rdzvscope, "run", "--verdict", "--out", os.path.join(work, "traces"), "--",
           *torchrun_cmd(args.python), "--nnodes", "1", "--nproc-per-node", str(NPROC),
           "--rdzv-backend", "static", "--master-addr", "127.0.0.1", "--master-port", str(port),
           "--node-rank", "0", "--max-restarts", "0", RANK_PY]
    log = open(os.path.join(work, "job.log"), "w+")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.PIPE, text=True, env=env), log


def verdict_of(err):
    """The block run --verdict printed: from its heading to the end of stderr."""
    at = err.rfind("rdzvscope: the command")
    if at < 0:
        raise Fail("no verdict on stderr:\n" + err[-3000:])
    return err[at:]


def wait_for_lines(log, text, count, bound_s):
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        log.seek(0)
        if log.read().count(text) >= count:
            return
        time.sleep(0.1)
    log.seek(0)
    raise Fail(f"{count} x {text!r} not seen within {bound_s} s:\n" + log.read()[-3000:])


def case_worker_crashed(args, work):
    p, log = start(args, work, {"2": {"E2E_FAULT": "raise@before_init"}}, timeout_s=60)
    _, err = p.communicate(timeout=120)
    if p.returncode != 1:
        raise Fail(f"torchrun's exit status 1 expected, got {p.returncode}:\n{err[-3000:]}")
    v = verdict_of(err)
    if "exited with status 1" not in v.splitlines()[0]:
        raise Fail("heading: " + v.splitlines()[0])
    for want in ("VERDICT  rank_died", "initiating rank: 2"):
        if want not in v:
            raise Fail(f"{want!r} not in the verdict:\n{v}")


def case_cancelled(args, work):
    p, log = start(args, work, {"2": {"E2E_FAULT": "stall@before_init", "E2E_STALL_S": "600"}},
                   timeout_s=1800)
    # The two others are in the store waiting for rank 2 once all three imported torch and
    # rank 2 said it stalls; a scheduler's cancel comes a few seconds later.
    wait_for_lines(log, "e2e: torch imported", NPROC, 90)
    wait_for_lines(log, "fault stall at before_init", 1, 30)
    time.sleep(5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    if p.returncode == 0:
        raise Fail("a cancelled job exited 0:\n" + err[-3000:])
    v = verdict_of(err)
    if "rdzvscope passed on SIGTERM" not in v.splitlines()[0]:
        raise Fail("the heading says the cancel was passed on: " + v.splitlines()[0])
    for want in ("VERDICT  straggler_timeout", "initiating rank: 2"):
        if want not in v:
            raise Fail(f"{want!r} not in the verdict:\n{v}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=["worker_crashed", "cancelled"])
    args = ap.parse_args()
    work = os.path.join(args.work, args.case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    globals()["case_" + args.case](args, work)
    print(f"{args.case}: ok")


if __name__ == "__main__":
    main()
