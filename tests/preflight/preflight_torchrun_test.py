#!/usr/bin/env python3
"""`rdzvscope preflight` in a job script before a real torchrun (PyTorch 2.x, c10d backend), as a
user writes it: the job's settings in torchrun's own variables (PET_RDZV_ENDPOINT, PET_NNODES,
PET_NPROC_PER_NODE, PET_NODE_RANK; no RANK anywhere), then

    rdzvscope preflight --out TRACES                 # endpoint, nodes and node from PET_*
    rdzvscope run --out TRACES -- torchrun --rdzv-backend c10d --rdzv-id ID rank.py
    rdzvscope analyze TRACES

The preflight must take the endpoint from PET_RDZV_ENDPOINT and tell the node by PET_NODE_RANK;
torchrun (which reads the same variables) then runs the job it checked, which succeeds; and
analyze shows the preflight's report beside the job's traces (text and JSON).

    preflight_torchrun_test.py RDZVSCOPE --python PY [--work DIR]
"""
import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import log  # noqa: E402
from rdzvtest.launch import RANK_SCRIPT, job_env, torchrun_cmd  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

NPROC = 2


def fail(what, *context):
    log(f"FAIL: {what}")
    for c in context:
        log(f"--- {str(c)[-4000:]}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rdzvscope")
    ap.add_argument("--python", required=True, help="interpreter with PyTorch 2.x (its torchrun)")
    ap.add_argument("--work")
    args = ap.parse_args()
    if args.work:
        os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="preflight-torchrun-", dir=args.work)
    traces = os.path.join(work, "traces")
    port = free_port()
    env = job_env(PET_RDZV_ENDPOINT=f"127.0.0.1:{port}", PET_NNODES="1", PET_NODE_RANK="0",
                  PET_NPROC_PER_NODE=str(NPROC), E2E_TIMEOUT_S="10", GLOO_SOCKET_IFNAME="lo",
                  OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for v in ("RANK", "GROUP_RANK", "SLURM_JOB_NODELIST", "SLURM_NODEID"):
        env.pop(v, None)

    pf = subprocess.run([args.rdzvscope, "preflight", "--out", traces, "--timeout", "5"], env=env,
                        capture_output=True, text=True, timeout=60)
    log(pf.stdout)
    if pf.returncode != 0:
        fail(f"preflight exited {pf.returncode}, want 0", pf.stdout, pf.stderr)
    host = socket.gethostname()
    path = os.path.join(traces, f"preflight.{host}.json")
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"no report in {path}: {e}", os.listdir(traces) if os.path.isdir(traces) else "")
    if rep["endpoint"] != {"host": "127.0.0.1", "port": port, "source": "PET_RDZV_ENDPOINT"}:
        fail(f"endpoint {rep['endpoint']}", pf.stdout)
    if rep["node"] != {"rank": 0, "source": "PET_NODE_RANK"} or rep["role"] != "store_host":
        fail(f"node {rep['node']}, role {rep['role']}", pf.stdout)
    if rep["ranks"]["count"] != NPROC + 1:
        fail(f"ranks {rep['ranks']} (want workers + agent)", pf.stdout)

    job = subprocess.run([args.rdzvscope, "run", "--out", traces, "--"] + torchrun_cmd(args.python)
                         + ["--rdzv-backend", "c10d", "--rdzv-id", "preflight-torchrun",
                            "--max-restarts", "0", "--monitor-interval", "0.2", RANK_SCRIPT],
                         env=env, capture_output=True, text=True, timeout=120)
    text = job.stdout + job.stderr
    if job.returncode != 0 or text.count("e2e: done") != NPROC:
        fail(f"the torchrun job exited {job.returncode}", text)
    log(f"torchrun job: exit 0, {NPROC} workers done")

    an = subprocess.run([args.rdzvscope, "analyze", traces, "--format", "json"], capture_output=True,
                        text=True, timeout=120)
    try:
        d = json.loads(an.stdout)
    except json.JSONDecodeError:
        fail(f"analyze exited {an.returncode}, no JSON", an.stdout, an.stderr)
    if d["verdict"]["class"] != "healthy":
        fail(f"verdict {d['verdict']}", an.stdout)
    nodes = (d.get("preflight") or {}).get("nodes") or []
    if len(nodes) != 1 or nodes[0]["host"] != host or nodes[0]["node_rank"] != 0 \
            or not nodes[0]["can_rendezvous"] or nodes[0]["failed"]:
        fail(f"analyze's preflight section: {d.get('preflight')}", an.stdout)
    txt = subprocess.run([args.rdzvscope, "analyze", traces], capture_output=True, text=True,
                         timeout=120).stdout
    if "PREFLIGHT 1 node report(s)" not in txt or "every node could rendezvous" not in " ".join(txt.split()):
        fail("the text report has no PREFLIGHT section", txt)
    log(txt)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
