#!/usr/bin/env python3
"""A real 4-rank PyTorch job with a straggler, traced twice: once by the shim, once by
`rdzvscope attach` on a job started without it. `rdzvscope analyze --format json` must give
the same verdict class (straggler_timeout) and initiating rank (2) on both.

    straggler.py --rdzvscope CLI --shim LIB --rank-script tests/e2e/rank.py --work DIR

The ranks are tests/e2e/rank.py under /usr/bin/python3 (Debian's python3-torch), launched as
tests/e2e/harness.py launches them (RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
MASTER_PORT, E2E_TIMEOUT_S=3, E2E_DELAY_S=9 on rank 2), by one small shell launcher that
waits for a line on stdin. attach is given the launcher's pid and follows its children, so
it is recording before any rank exists: attach cannot see what happened before it started.
Exit status 0 = pass, 1 = fail (with the reason on stderr).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

WORLD = 4
LATE_RANK = 2
TIMEOUT_S = 3
DELAY_S = 9      # as tests/e2e/harness.py: after rank 0 (the store host) gave up, about 2T + 1 s
JOB_BOUND_S = 30

# Each rank in the background with its own environment and log; the launcher waits for all.
LAUNCHER = r'''
read go || exit 3
for r in 0 1 2 3; do
  delay=0
  [ "$r" = "$LATE_RANK" ] && delay=$DELAY_S
  RANK=$r LOCAL_RANK=$r E2E_DELAY_S=$delay "$PYTHON" "$RANK_SCRIPT" > "$LOGS/rank$r.log" 2>&1 &
done
wait
'''


class Fail(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(opts, port, logs):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "RANK", "LOCAL_RANK", "E2E_DELAY_S", "E2E_MODE")
           and not k.startswith("RDZVSCOPE_") and not k.startswith("TORCHELASTIC_")}
    env.update(WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               E2E_TIMEOUT_S=str(TIMEOUT_S), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
               PYTHONUNBUFFERED="1", LATE_RANK=str(LATE_RANK), DELAY_S=str(DELAY_S),
               PYTHON=opts.python, RANK_SCRIPT=opts.rank_script, LOGS=logs)
    return env


def run_job(opts, mode, work):
    """Runs the job once; returns the trace directory."""
    port = free_port()
    trace_dir, logs = os.path.join(work, mode, "traces"), os.path.join(work, mode, "logs")
    os.makedirs(logs)
    prefix = [opts.rdzvscope, "run", "--shim", opts.shim, "--out", trace_dir, "--"] if mode == "shim" else []
    job = subprocess.Popen(prefix + ["/bin/sh", "-c", LAUNCHER], stdin=subprocess.PIPE, text=True,
                           env=job_env(opts, port, logs), start_new_session=True)
    attach = None
    try:
        if mode == "bpf":
            attach = subprocess.Popen([opts.rdzvscope, "attach", "--pid", str(job.pid), "--out", trace_dir],
                                      stderr=subprocess.PIPE, text=True)
            line = attach.stderr.readline()
            if "recording" not in line:
                raise Fail("attach did not start: %s%s" % (line, attach.stderr.read()))
        job.stdin.write("go\n")
        job.stdin.close()
        try:
            job.wait(timeout=JOB_BOUND_S)
        except subprocess.TimeoutExpired:
            raise Fail("%s: the job did not end within %d s" % (mode, JOB_BOUND_S))
        if attach:
            stop_attach(attach)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        if attach and attach.poll() is None:
            attach.kill()
            attach.wait()
    texts = {}
    for r in range(WORLD):
        with open(os.path.join(logs, "rank%d.log" % r), errors="replace") as f:
            texts[r] = f.read()
    if "No module named 'torch'" in "".join(texts.values()):
        raise Fail("%s has no torch: apt-get install python3-torch" % opts.python)
    for r in range(WORLD):
        if r != LATE_RANK and "Socket Timeout" not in texts[r]:
            raise Fail("%s: rank %d did not time out waiting for the straggler:\n%s" % (mode, r, texts[r][-2000:]))
    if "sleeping %ds" % DELAY_S not in texts[LATE_RANK]:
        raise Fail("%s: rank %d was not late:\n%s" % (mode, LATE_RANK, texts[LATE_RANK][-2000:]))
    return trace_dir


def stop_attach(attach):
    """Stops attach once the job is over (its last events drained), prints its summary."""
    time.sleep(0.3)
    attach.send_signal(signal.SIGINT)
    summary = attach.stderr.read()
    if attach.wait(timeout=30) != 0:
        raise Fail("attach failed: " + summary)
    print("bpf: " + summary.strip())


def verdict(opts, trace_dir):
    r = subprocess.run([opts.rdzvscope, "analyze", trace_dir, "--format", "json"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise Fail("analyze %s exited %d: %s" % (trace_dir, r.returncode, r.stderr))
    diag = json.loads(r.stdout)
    return diag


def ranks_traced(opts, trace_dir):
    r = subprocess.run([opts.rdzvscope, "dump", trace_dir], capture_output=True, text=True, timeout=60)
    headers = [h for h in map(json.loads, r.stdout.splitlines()) if h["type"] == "header"]
    return sorted(h["identity"]["rank"] for h in headers if h["identity"]["rank"] is not None), headers


def torch_test_options(required):
    """The options of the torch tests (this one, store_killed.py), their work directory
    emptied; None (said on stderr) when not run as root."""
    ap = argparse.ArgumentParser()
    for o in required:
        ap.add_argument(o, required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter that has torch")
    opts = ap.parse_args()
    if os.geteuid() != 0:
        print("FAIL: the bpf tests run as root (CI runs them as root)", file=sys.stderr)
        return None
    shutil.rmtree(opts.work, ignore_errors=True)
    return opts


def main():
    opts = torch_test_options(("--rdzvscope", "--shim", "--rank-script", "--work"))
    if not opts:
        return 1
    try:
        got = {}
        for mode in ("shim", "bpf"):
            trace_dir = run_job(opts, mode, opts.work)
            ranks, headers = ranks_traced(opts, trace_dir)
            if ranks != list(range(WORLD)):
                raise Fail("%s: traces of ranks %s, want 0-3" % (mode, ranks))
            if mode == "bpf" and any(h["source"] != "bpf" for h in headers):
                raise Fail("bpf: a trace file not written by attach")
            diag = verdict(opts, trace_dir)
            v = diag["verdict"]
            d = diag["discriminators"]
            got[mode] = (v["class"], v["initiating_rank"], d.get("late_ranks"), d.get("timed_out_ranks"),
                         (d.get("timeout") or {}).get("ms"), bool(d.get("late_rank_activity")))
            print("%s: what the late rank did before it arrived: %s" % (mode, d.get("late_rank_activity")))
            print("%s: %s, initiating rank %s: %s" % (mode, v["class"], v["initiating_rank"], v["summary"]))
        if got["shim"] != ("straggler_timeout", LATE_RANK, [LATE_RANK], [0, 1, 3], TIMEOUT_S * 1000, True):
            raise Fail("the shim's traces give %s, want straggler_timeout from rank %d" % (got["shim"], LATE_RANK))
        if got["bpf"] != got["shim"]:
            raise Fail("attach's traces give %s, the shim's %s (class, rank, late, timed out, timeout ms, activity known)"
                       % (got["bpf"], got["shim"]))
    except Fail as f:
        print("FAIL straggler: %s" % f, file=sys.stderr)
        return 1
    print("ok straggler: both give straggler_timeout from rank %d" % LATE_RANK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
