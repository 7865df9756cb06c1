#!/usr/bin/env python3
"""attach on a real PyTorch job that is already running, its store connections long open:
the store host is killed and the survivor's broken pipe must be in attach's trace.

    store_killed.py --rdzvscope CLI --rank-script tests/e2e/rank.py --work DIR

Two ranks of tests/e2e/rank.py (E2E_MODE=store_loop: set/get on the default TCPStore every
10 ms) under /usr/bin/python3, without the shim, launched as tests/e2e/harness.py launches
them. Once both are in their store loop, `rdzvscope attach --pid` on both: every store
socket was opened before attach started (bpf/seed.cpp finds them). Rank 0, the store host,
is SIGKILLed; rank 1 fails on its next store op. Checked: rank 1's trace has its store
connection found at attach time and a send or recv failing with EPIPE or ECONNRESET (what
the rank printed) on that descriptor; rank 0's has its store listener; `rdzvscope analyze --format json`
on attach's traces says broken_pipe, initiated by rank 0, which died.

With --torchrun (PyTorch 2.x): 4 workers under `torchrun --rdzv-backend c10d`, whose agent
hosts their store (on a port it picked at run time); attach --pid on the agent and every
worker once they are in their store loop; the agent is SIGKILLed: analyze says broken_pipe,
cause peer_died, from the agent (no initiating rank: the agent has none).
Exit status 0 = pass, 1 = fail (with the reason on stderr).
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

from straggler import job_env, stop_attach, torch_test_options, verdict  # noqa: E402

WORLD = 2
TIMEOUT_S = 5


def launch(opts, rank, port, logs):
    env = job_env(opts, port, logs)  # the straggler job's, without its late rank
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD), E2E_TIMEOUT_S=str(TIMEOUT_S),
               E2E_MODE="store_loop", E2E_LOOP_S="40")
    log = open(os.path.join(logs, "rank%d.log" % rank), "w")
    return subprocess.Popen([opts.python, opts.rank_script], stdout=log, stderr=subprocess.STDOUT, env=env)


def log_of(logs, rank):
    with open(os.path.join(logs, "rank%d.log" % rank), errors="replace") as f:
        return f.read()


def wait_for(logs, text, bound_s):
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        if all(text in log_of(logs, r) for r in range(WORLD)):
            return True
        time.sleep(0.1)
    return False


def dump_by_rank(opts, trace_dir):
    by_rank = {}
    for f in cli.dump(opts.rdzvscope, trace_dir, timeout=60):
        if f["header"]["source"] != "bpf":
            raise Fail("a trace file not written by attach")
        by_rank.setdefault(f["header"]["identity"]["rank"], []).extend(f["events"])
    return by_rank


def run(opts):
    port = free_port()
    trace_dir, logs = os.path.join(opts.work, "traces"), os.path.join(opts.work, "logs")
    os.makedirs(logs)
    ranks = [launch(opts, r, port, logs) for r in range(WORLD)]
    attach = None
    try:
        if not wait_for(logs, "e2e: store loop running", 60):
            if "No module named 'torch'" in log_of(logs, 0):
                raise Fail("%s has no torch: apt-get install python3-torch" % opts.python)
            raise Fail("the ranks did not reach their store loop:\n" + log_of(logs, 0)[-1500:] + log_of(logs, 1)[-1500:])
        attach = subprocess.Popen([opts.rdzvscope, "attach", "--pid", str(ranks[0].pid), "--pid", str(ranks[1].pid),
                                   "--out", trace_dir], stderr=subprocess.PIPE, text=True)
        line = attach.stderr.readline()
        if "recording" not in line:
            raise Fail("attach did not start: %s%s" % (line, attach.stderr.read()))
        time.sleep(0.5)
        ranks[0].send_signal(signal.SIGKILL)
        try:
            rc = ranks[1].wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise Fail("rank 1 did not fail within 20 s of rank 0's SIGKILL")
        ranks[0].wait()
        text = log_of(logs, 1)
        if rc != 1 or not any(t in text for t in ("Broken pipe", "Connection reset by peer")):
            raise Fail("rank 1 did not fail on the store (exit %s):\n%s" % (rc, text[-2000:]))
        stop_attach(attach)
    finally:
        for p in ranks + ([attach] if attach else []):
            if p.poll() is None:
                p.kill()
                p.wait()
    return trace_dir


def run_torchrun(opts):
    port = free_port()
    trace_dir, logs = os.path.join(opts.work, "traces"), os.path.join(opts.work, "logs")
    os.makedirs(logs)
    env = job_env(opts, port, logs)
    env.update(E2E_TIMEOUT_S=str(TIMEOUT_S), E2E_MODE="store_loop", E2E_LOOP_S="40", E2E_RANK_ENV="{}")
    for k in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    log = open(os.path.join(logs, "agent.log"), "w")
    agent = subprocess.Popen([os.path.join(os.path.dirname(opts.python), "torchrun"), "--nnodes", "1",
                              "--nproc-per-node", "4", "--max-restarts", "0", "--rdzv-backend", "c10d",
                              "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-id", "store_killed",
                              opts.rank_script], stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
    attach = None

    def text():
        with open(os.path.join(logs, "agent.log"), errors="replace") as f:
            return f.read()
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and text().count("e2e: store loop running") < 4:
            time.sleep(0.1)
        workers = [int(l.split("e2e: start pid ")[1].split()[0]) for l in text().splitlines()
                   if "e2e: start pid " in l]
        if text().count("e2e: store loop running") < 4 or len(workers) != 4:
            raise Fail("the workers did not reach their store loop:\n" + text()[-3000:])
        cmd = [opts.rdzvscope, "attach", "--out", trace_dir]
        for pid in [agent.pid] + workers:
            cmd += ["--pid", str(pid)]
        attach = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        line = attach.stderr.readline()
        if "recording" not in line:
            raise Fail("attach did not start: %s%s" % (line, attach.stderr.read()))
        time.sleep(0.5)
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        end = time.monotonic() + 20
        while time.monotonic() < end and any(os.path.exists("/proc/%d" % w) for w in workers):
            time.sleep(0.1)
        if any(os.path.exists("/proc/%d" % w) for w in workers):
            raise Fail("the workers did not fail within 20 s of the agent's SIGKILL")
        if text().count("Connection reset by peer") + text().count("Broken pipe") < 1:
            raise Fail("no worker failed on the store:\n" + text()[-3000:])
        stop_attach(attach)
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait()
        if attach and attach.poll() is None:
            attach.kill()
            attach.wait()
    v = verdict(opts, trace_dir)["verdict"]
    print("analyze: %s, initiating rank %s, cause %s: %s" % (v["class"], v["initiating_rank"], v.get("cause"),
                                                            v["summary"]))
    if (v["class"], v.get("cause"), v["initiating_rank"]) != ("broken_pipe", "peer_died", None) \
            or "pid %d" % agent.pid not in v["summary"]:
        raise Fail("attach's traces give %s/%s from rank %s, want broken_pipe/peer_died from the agent (pid %d)"
                   % (v["class"], v.get("cause"), v["initiating_rank"], agent.pid))


def check_traces(opts, trace_dir):
    by_rank = dump_by_rank(opts, trace_dir)
    if sorted(by_rank) != [0, 1]:
        raise Fail("traces of ranks %s, want 0 and 1" % sorted(by_rank))
    found = [e for e in by_rank[1] if "preexisting" in e["flags"] and e["kind"] == "connect"]
    if not found:
        raise Fail("rank 1: no store connection found at attach time:\n" + "\n".join(map(json.dumps, by_rank[1])))
    fds = {e["fd"] for e in found}
    # What the rank printed (Broken pipe / Connection reset by peer) is the errno of a store call.
    failures = [e for e in by_rank[1] if e["kind"] in ("send", "recv") and e["fd"] in fds and "store" in e["flags"]
                and e["errno_name"] in ("EPIPE", "ECONNRESET")]
    if not failures:
        raise Fail("rank 1: no broken pipe on its store socket:\n" + "\n".join(map(json.dumps, by_rank[1])))
    print("rank 1: %s %s on fd %d (found at attach: %s)" % (failures[0]["kind"], failures[0]["errno_name"],
                                                            failures[0]["fd"], sorted(fds)))
    if not [e for e in by_rank[0] if e["kind"] == "listen" and "preexisting" in e["flags"]]:
        raise Fail("rank 0: its store listener was not found at attach time")
    v = verdict(opts, trace_dir)["verdict"]
    print("analyze: %s, initiating rank %s, cause %s: %s" % (v["class"], v["initiating_rank"], v.get("cause"),
                                                            v["summary"]))
    if (v["class"], v["initiating_rank"]) != ("broken_pipe", 0):
        raise Fail("attach's traces give %s from rank %s, want broken_pipe from rank 0" % (v["class"], v["initiating_rank"]))


def main():
    opts = torch_test_options(("--rdzvscope", "--rank-script", "--work"))
    if not opts:
        return 1
    try:
        if opts.torchrun:
            run_torchrun(opts)
        else:
            check_traces(opts, run(opts))
    except Fail as f:
        print("FAIL store_killed: %s" % f, file=sys.stderr)
        return 1
    print("ok store_killed: broken_pipe from %s on attach's traces of a running job"
          % ("the torchrun agent" if opts.torchrun else "rank 0"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
