#!/usr/bin/env python3
"""A real 4-rank PyTorch job with a straggler, traced twice: once by the shim, once by
`rdzvscope attach` on a job started without it. `rdzvscope analyze --format json` must give
the same verdict class (straggler_timeout) and initiating rank (2) on both.

    straggler.py --rdzvscope CLI --shim LIB --rank-script tests/e2e/rank.py --work DIR
                 [--python PY] [--torchrun]

The ranks are tests/e2e/rank.py under /usr/bin/python3 (Debian's python3-torch), launched as
tests/e2e/harness.py launches them (RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
MASTER_PORT, E2E_TIMEOUT_S=3, E2E_DELAY_S=9 on rank 2), by one small shell launcher that
waits for a line on stdin. attach is given the launcher's pid and follows its children, so
it is recording before any rank exists: attach cannot see what happened before it started.
With --torchrun (PyTorch 2.x), the launcher runs `torchrun --rdzv-backend c10d` with 4
workers instead: the agent hosts the store and gives its workers a MASTER_PORT picked at run
time, which attach learns when each worker execs; the agent stops rank 2 before it ever
reaches the store.
--launcher FORM starts the same job another way (LAUNCH_FORMS: torchrun's static backend,
`env VAR=... cmd &`, export then exec, Python's subprocess with env=, attach --comm started
before any rank exists, and each rank in a PID namespace of its own: `unshare --pid --fork`); with --attach-only only attach's run is made, its verdict compared
with the one the shim gives for this job.
Exit status 0 = pass, 1 = fail (with the reason on stderr).
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
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest import launch  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

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
# The same job under torchrun (c10d): one agent, every worker's output in one log.
LAUNCHER_TORCHRUN = r'''
read go || exit 3
"$TORCHRUN" --nnodes 1 --nproc-per-node 4 --max-restarts 0 --monitor-interval 0.2 \
  --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$MASTER_PORT" --rdzv-id straggler \
  "$RANK_SCRIPT" > "$LOGS/agent.log" 2>&1
'''
# torchrun's static backend: the agent does not host a store; worker 0 hosts it on
# --master-port, as a rank started by hand does.
LAUNCHER_TORCHRUN_STATIC = r'''
read go || exit 3
"$TORCHRUN" --nnodes 1 --node-rank 0 --nproc-per-node 4 --max-restarts 0 --monitor-interval 0.2 \
  --rdzv-backend static --master-addr 127.0.0.1 --master-port "$JOB_PORT" \
  "$RANK_SCRIPT" > "$LOGS/agent.log" 2>&1
'''
# The launch forms below give each rank its rendezvous settings in its own environment only:
# the launcher's has no MASTER_PORT, so attach learns the store port when each rank execs.
# `env VAR=... cmd &`: the rank is exec'd twice (sh's child execs env, env execs python).
LAUNCHER_ENV_CMD = r'''
read go || exit 3
for r in 0 1 2 3; do
  delay=0
  [ "$r" = "$LATE_RANK" ] && delay=$DELAY_S
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$JOB_PORT E2E_DELAY_S=$delay \
    "$PYTHON" "$RANK_SCRIPT" > "$LOGS/rank$r.log" 2>&1 &
done
wait
'''
# Each rank in a PID namespace of its own (`unshare --pid --fork`, as a container runtime with
# the host's network gives): every rank is pid 1 in its namespace, attach sees host pids.
LAUNCHER_PIDNS = r'''
read go || exit 3
for r in 0 1 2 3; do
  delay=0
  [ "$r" = "$LATE_RANK" ] && delay=$DELAY_S
  unshare --pid --fork env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$JOB_PORT \
    E2E_DELAY_S=$delay "$PYTHON" "$RANK_SCRIPT" > "$LOGS/rank$r.log" 2>&1 &
done
wait
'''
# `export` in a subshell, then exec.
LAUNCHER_EXPORT_EXEC = r'''
read go || exit 3
for r in 0 1 2 3; do
  (
    export RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$JOB_PORT E2E_DELAY_S=0
    [ "$r" = "$LATE_RANK" ] && export E2E_DELAY_S=$DELAY_S
    exec "$PYTHON" "$RANK_SCRIPT" > "$LOGS/rank$r.log" 2>&1
  ) &
done
wait
'''
# Python's subprocess with env=: a launcher written in Python (its own interpreter is the
# launcher process attach follows).
LAUNCHER_SUBPROCESS = r'''
import os, subprocess, sys
if not sys.stdin.readline():
    sys.exit(3)
procs = []
for r in range(4):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=os.environ["JOB_PORT"],
               E2E_DELAY_S=os.environ["DELAY_S"] if str(r) == os.environ["LATE_RANK"] else "0")
    log = open(os.path.join(os.environ["LOGS"], "rank%d.log" % r), "w")
    procs.append(subprocess.Popen([os.environ["PYTHON"], os.environ["RANK_SCRIPT"]], env=env,
                                  stdout=log, stderr=subprocess.STDOUT))
sys.exit(max(p.wait() for p in procs))
'''
# name: (launcher, interpreter of the launcher, the ranks' settings only in their environment)
LAUNCH_FORMS = {
    "sh": (LAUNCHER, "/bin/sh", False),
    "torchrun": (LAUNCHER_TORCHRUN, "/bin/sh", False),
    "torchrun_static": (LAUNCHER_TORCHRUN_STATIC, "/bin/sh", True),
    "env_cmd": (LAUNCHER_ENV_CMD, "/bin/sh", True),
    "pidns": (LAUNCHER_PIDNS, "/bin/sh", True),
    "export_exec": (LAUNCHER_EXPORT_EXEC, "/bin/sh", True),
    "subprocess_env": (LAUNCHER_SUBPROCESS, "python", True),
    # attach --comm, started before any rank exists (the env_cmd job): ranks are followed from
    # their exec of an image of that name.
    "comm": (LAUNCHER_ENV_CMD, "/bin/sh", True),
}
# What the ranks that waited print: 1.13, then 2.x (by hand, and under torchrun).
TIMED_OUT = ("Socket Timeout", "wait timeout after", "waiting for clients")
# A client that was still waiting when the store host (rank 0) gave up at its own timeout and
# exited reads the end of its store connection instead of timing out itself: the ranks enter
# their waits up to seconds apart on a loaded machine (their torch imports), so this is waiting
# for the straggler too (seen beside other jobs: rank 3 "Failed to recv, got 0 bytes").
STORE_HOST_GONE = ("Failed to recv, got 0 bytes", "Connection reset by peer")


def job_env(opts, port, logs, own_env_only=False):
    """The launcher's environment (rdzvtest.launch.job_env: nothing of a tracer or another
    job inherited). own_env_only: no rendezvous settings in it (the launcher gives each rank
    its own; JOB_PORT is the store port)."""
    e = launch.job_env(
        WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), JOB_PORT=str(port),
        E2E_TIMEOUT_S=str(TIMEOUT_S), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
        PYTHONUNBUFFERED="1", LATE_RANK=str(LATE_RANK), DELAY_S=str(DELAY_S),
        PYTHON=opts.python, RANK_SCRIPT=opts.rank_script, LOGS=logs,
        TORCHRUN=os.path.join(os.path.dirname(opts.python), "torchrun"),
        E2E_RANK_ENV=json.dumps({str(LATE_RANK): {"E2E_DELAY_S": str(DELAY_S)}}))
    if own_env_only:
        for k in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            del e[k]
    return e


def under_torchrun(opts):
    return opts.launcher.startswith("torchrun")


def run_job(opts, mode, work):
    """Runs the job once; returns the trace directory."""
    port = free_port()
    trace_dir, logs = os.path.join(work, mode, "traces"), os.path.join(work, mode, "logs")
    os.makedirs(logs)
    prefix = [opts.rdzvscope, "run", "--shim", opts.shim, "--out", trace_dir, "--"] if mode == "shim" else []
    script, interpreter, own_env_only = LAUNCH_FORMS[opts.launcher]
    interpreter = opts.python if interpreter == "python" else interpreter
    job = subprocess.Popen(prefix + [interpreter, "-c", script], stdin=subprocess.PIPE, text=True,
                           env=job_env(opts, port, logs, own_env_only), start_new_session=True)
    attach = None
    try:
        if mode == "bpf":
            # --comm: by the ranks' image name, before any of them exists; else the launcher.
            target = (["--comm", os.path.basename(opts.python)] if opts.launcher == "comm"
                      else ["--pid", str(job.pid)])
            attach = subprocess.Popen([opts.rdzvscope, "attach"] + target + ["--out", trace_dir],
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
        if under_torchrun(opts):   # the lines rank.py prints carry "[rankN]"
            with open(os.path.join(logs, "agent.log"), errors="replace") as f:
                texts[r] = "".join(l for l in f if "[rank%d]" % r in l)
        else:
            with open(os.path.join(logs, "rank%d.log" % r), errors="replace") as f:
                texts[r] = f.read()
    if "No module named 'torch'" in "".join(texts.values()):
        raise Fail("%s has no torch: apt-get install python3-torch" % opts.python)
    # By hand every other rank times out; under torchrun the agent stops the rest once the
    # first one failed, which may be before they print theirs.
    waited = [r for r in range(WORLD) if r != LATE_RANK and any(t in texts[r] for t in TIMED_OUT)]
    if 0 in waited and not under_torchrun(opts):   # by hand rank 0 hosts the store
        waited += [r for r in range(1, WORLD) if r != LATE_RANK and r not in waited
                   and any(t in texts[r] for t in STORE_HOST_GONE)]
    for r in range(WORLD):
        if r != LATE_RANK and r not in waited and (not under_torchrun(opts) or not waited or "e2e: done" in texts[r]):
            raise Fail("%s: rank %d did not time out waiting for the straggler:\n%s" % (mode, r, texts[r][-2000:]))
    if "sleeping %ds" % DELAY_S not in texts[LATE_RANK]:
        raise Fail("%s: rank %d was not late:\n%s" % (mode, LATE_RANK, texts[LATE_RANK][-2000:]))
    return trace_dir


def expect_own_pid_namespaces(mode, headers):
    """pidns: each rank's header names its own PID namespace, its pid there (1), and its host
    pid (attach sees host pids), one process per rank."""
    ranks = [h for h in headers if h["identity"]["rank"] is not None]
    origins = [h.get("origin") or {} for h in ranks]
    namespaces = {o.get("pid_namespace") for o in origins}
    if len(namespaces) != WORLD or None in namespaces:
        raise Fail("%s: PID namespaces of the ranks %s, want %d different ones" % (mode, sorted(map(str, namespaces)), WORLD))
    if any(o.get("ns_pid") != 1 for o in origins):
        raise Fail("%s: pids in their namespaces %s, want 1 each" % (mode, [o.get("ns_pid") for o in origins]))
    host_pids = [o.get("host_pid") for o in origins]
    if len(set(host_pids)) != WORLD or any(not p or p == 1 for p in host_pids):
        raise Fail("%s: host pids %s, want the ranks' %d different ones" % (mode, host_pids, WORLD))
    print("%s: ranks in PID namespaces %s, each pid 1 there, host pids %s" % (mode, sorted(namespaces), sorted(host_pids)))


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
    headers = [f["header"] for f in cli.dump(opts.rdzvscope, trace_dir, timeout=60)]
    return sorted(h["identity"]["rank"] for h in headers if h["identity"]["rank"] is not None), headers


def torch_test_options(required):
    """The options of the torch tests (this one, store_killed.py), their work directory
    emptied; None (said on stderr) when not run as root."""
    ap = argparse.ArgumentParser()
    for o in required:
        ap.add_argument(o, required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter that has torch")
    ap.add_argument("--torchrun", action="store_true",
                    help="launch with torchrun --rdzv-backend c10d (PyTorch 2.x) instead of by hand")
    ap.add_argument("--launcher", choices=sorted(LAUNCH_FORMS),
                    help="how the ranks are started (default: sh, or torchrun with --torchrun)")
    ap.add_argument("--attach-only", action="store_true",
                    help="no shim run: attach's verdict is compared with the shim's verdict of the "
                         "same job (bpf.straggler_torch and the e2e straggler tests establish it)")
    opts = ap.parse_args()
    opts.launcher = opts.launcher or ("torchrun" if opts.torchrun else "sh")
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
        for mode in ("bpf",) if opts.attach_only else ("shim", "bpf"):
            trace_dir = run_job(opts, mode, opts.work)
            ranks, headers = ranks_traced(opts, trace_dir)
            if ranks != list(range(WORLD)):
                raise Fail("%s: traces of ranks %s, want 0-3" % (mode, ranks))
            if mode == "bpf" and any(h["source"] != "bpf" for h in headers):
                raise Fail("bpf: a trace file not written by attach")
            if opts.launcher == "pidns":
                expect_own_pid_namespaces(mode, headers)
            diag = verdict(opts, trace_dir)
            v = diag["verdict"]
            d = diag["discriminators"]
            timed_out = d.get("timed_out_ranks")
            if under_torchrun(opts) and timed_out and set(timed_out) <= {0, 1, 3}:
                timed_out = [0, 1, 3]   # those the agent stopped first did not get to time out
            got[mode] = (v["class"], v["initiating_rank"], d.get("late_ranks"), timed_out,
                         (d.get("timeout") or {}).get("ms"), bool(d.get("late_rank_activity")))
            print("%s: what the late rank did before it arrived: %s" % (mode, d.get("late_rank_activity")))
            print("%s: %s, initiating rank %s: %s" % (mode, v["class"], v["initiating_rank"], v["summary"]))
        # Under torchrun the late rank is stopped before it arrives: nothing to say what it did.
        # By hand on 2.x the store host (rank 0) waits for its clients in a sleep loop, on no
        # socket: no timeout of its own in either recorder's trace (the golden
        # torch2.13-straggler says the same).
        store_host_waits_on_socket = under_torchrun(opts) or launch.torch_version(opts.python).startswith("1.")
        want = ("straggler_timeout", LATE_RANK, [LATE_RANK], [0, 1, 3] if store_host_waits_on_socket else [1, 3],
                TIMEOUT_S * 1000, not under_torchrun(opts))
        got.setdefault("shim", want)
        if got["shim"] != want:
            raise Fail("the shim's traces give %s, want straggler_timeout from rank %d" % (got["shim"], LATE_RANK))
        if got["bpf"] != got["shim"]:
            raise Fail("attach's traces give %s, the shim's %s (class, rank, late, timed out, timeout ms, activity known)"
                       % (got["bpf"], got["shim"]))
    except Fail as f:
        print("FAIL straggler: %s" % f, file=sys.stderr)
        return 1
    print("ok straggler (%s): %s straggler_timeout from rank %d"
          % (opts.launcher, "attach gives" if opts.attach_only else "both give", LATE_RANK))
    return 0


if __name__ == "__main__":
    sys.exit(main())
