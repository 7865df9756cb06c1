#!/usr/bin/env python3
"""A real PyTorch job under the shim: 2 ranks (gloo, static rendezvous over TCPStore), each
launched with `rdzvscope run`, then `rdzvscope dump` of the trace directory is checked:

  * both ranks exited 0;
  * one trace file per rank process, identified by the header's identity (rank, world_size,
    master_port, master_addr);
  * each rank's file shows a successful `connect` (or `connect_done`) to MASTER_PORT flagged
    "store";
  * rank 0's file shows `bind` and `listen` on MASTER_PORT and an `accept` of each rank's
    store connection (local port MASTER_PORT);
  * no torn or invalid records in the ranks' files (they exited cleanly).

torch 1.13 listens on [::] (dual stack), so addresses are compared by port only.
Standard library only; run with Debian's /usr/bin/python3 (the one that has torch).
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest import checks  # noqa: E402
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest.launch import job_env  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402
from rdzvtest.retries import note_retry  # noqa: E402
from rdzvtest.traces import port_of  # noqa: E402

WORLD_SIZE = 2
RANK_TIMEOUT_S = 90     # whole job, per attempt
RDZV_TIMEOUT_S = 20     # init_process_group / store timeout inside the ranks


def launch(args, out_dir, log_dir, port):
    procs = []
    for rank in range(WORLD_SIZE):
        env = job_env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD_SIZE),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      RDZV_TIMEOUT_S=str(RDZV_TIMEOUT_S), GLOO_SOCKET_IFNAME="lo",
                      OMP_NUM_THREADS="1")
        cmd = [args.rdzvscope, "run", "--out", out_dir, "--", args.python, args.train]
        log = open(os.path.join(log_dir, f"rank{rank}.log"), "w+")
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        procs.append((rank, proc, log, cmd))
    return procs


def wait_all(procs):
    deadline = time.monotonic() + RANK_TIMEOUT_S
    results = {}
    for rank, proc, log, cmd in procs:
        try:
            rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = f"killed after {RANK_TIMEOUT_S}s"
        log.seek(0)
        results[rank] = (rc, log.read(), proc.pid, cmd)
        log.close()
    return results


def dump(args, out_dir):
    """(parsed files, the text) of `rdzvscope dump OUT_DIR`."""
    text = cli.dump_text(args.rdzvscope, out_dir)
    return cli.parse_dump(text), text


def describe(f):
    h = f["header"]
    return (f"pid {h.get('pid')} rank {(h.get('identity') or {}).get('rank')} "
            f"cmdline {h.get('cmdline')!r}")


def ok_connect(ev, port):
    """A store connect to `port` that succeeded (immediately, or non-blocking then done)."""
    if ev.get("kind") not in ("connect", "connect_done"):
        return False
    if port_of(ev.get("peer")) != port or "store" not in (ev.get("flags") or []):
        return False
    return not ev.get("errno") and (ev.get("ret") in (0, None) or ev.get("kind") == "connect_done")


def check(files, results, port):
    errors = []
    for rank, (rc, _, _, _) in sorted(results.items()):
        if rc != 0:
            errors.append(f"rank {rank} exited with {rc}")

    if not files:
        return errors + ["the trace directory holds no trace files"]

    for rank in range(WORLD_SIZE):
        launched_pid = results[rank][2]
        mine = [f for f in files if (f["header"].get("identity") or {}).get("rank") == rank]
        # `rdzvscope run` execs the command, so the rank's python has the launched pid; should
        # it fork instead, fall back to the file whose command line is the training script.
        by_pid = [f for f in mine if f["header"].get("pid") == launched_pid]
        by_cmd = [f for f in mine if "train_min.py" in (f["header"].get("cmdline") or "")]
        chosen = by_pid or by_cmd
        if len(chosen) != 1:
            errors.append(f"rank {rank}: expected one trace file of the rank process (pid "
                          f"{launched_pid}), found {len(chosen)} among {len(mine)} with rank "
                          f"{rank}: " + "; ".join(describe(f) for f in mine))
            continue
        f = chosen[0]
        h, events = f["header"], f["events"]
        ident = h.get("identity") or {}
        want = {"rank": rank, "local_rank": rank, "world_size": WORLD_SIZE,
                "master_port": port, "master_addr": "127.0.0.1"}
        for key, value in want.items():
            if ident.get(key) != value:
                errors.append(f"rank {rank}: identity.{key} is {ident.get(key)!r}, expected {value!r}")
        if port not in (h.get("store_ports") or []):
            errors.append(f"rank {rank}: MASTER_PORT {port} not among store_ports {h.get('store_ports')}")
        if not events:
            errors.append(f"rank {rank}: no events")
        elif events[0].get("kind") != "proc_start":
            errors.append(f"rank {rank}: first event is {events[0].get('kind')!r}, not proc_start")
        if not any(ok_connect(ev, port) for ev in events):
            tried = [ev for ev in events if ev.get("kind") in ("connect", "connect_done")]
            errors.append(f"rank {rank}: no successful store connect to port {port}; connects seen: "
                          + json.dumps(tried)[:1500])
        summary = f["summary"]
        if summary is None:
            errors.append(f"rank {rank}: no summary line")
        elif summary.get("torn") or summary.get("invalid"):
            errors.append(f"rank {rank}: damaged records after a clean exit: {summary}")

        if rank == 0:
            for kind in ("bind", "listen"):
                hits = [ev for ev in events if ev.get("kind") == kind
                        and port_of(ev.get("local")) == port and not ev.get("errno")]
                if not hits:
                    errors.append(f"rank 0: no successful {kind} on port {port}")
            accepts = [ev for ev in events if ev.get("kind") == "accept"
                       and port_of(ev.get("local")) == port and not ev.get("errno")]
            # Every rank (rank 0 included) opens a store connection that the server accepts.
            if len(accepts) < WORLD_SIZE:
                errors.append(f"rank 0: {len(accepts)} accept(s) with local port {port}, "
                              f"expected at least {WORLD_SIZE}: " + json.dumps(accepts)[:1500])
            elif any(port_of(ev.get("peer")) is None for ev in accepts):
                errors.append("rank 0: an accept without a peer address: " + json.dumps(accepts)[:1500])
    return errors


def run_once(args, work, attempt):
    out_dir = os.path.join(work, f"traces{attempt}")
    log_dir = os.path.join(work, f"logs{attempt}")
    os.makedirs(log_dir)
    port = free_port()
    print(f"attempt {attempt}: MASTER_PORT={port}, traces in {out_dir}", flush=True)
    results = wait_all(launch(args, out_dir, log_dir, port))
    return port, out_dir, results


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rdzvscope", required=True, help="path of the rdzvscope CLI")
    ap.add_argument("--shim", help="path of librdzvscope.so (checked for diagnostics only)")
    ap.add_argument("--train", required=True, help="path of examples/train_min.py")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter that has torch")
    ap.add_argument("--work", required=True, help="scratch directory (recreated)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory on success")
    args = ap.parse_args()

    missing = checks.missing_executable((("rdzvscope CLI", args.rdzvscope), ("python", args.python)))
    if missing:
        print(missing)
        return 1
    if args.shim and not os.path.isfile(args.shim):
        print(f"FAIL: the shim was not built: {args.shim}")
        return 1
    probe = subprocess.run([args.python, "-c", "import torch.distributed as d; print(d.is_available())"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if probe.returncode != 0 or probe.stdout.strip() != "True":
        print(f"FAIL: {args.python} cannot import torch.distributed (apt-get install python3-torch):\n"
              f"{probe.stdout}")
        return 1

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    work = tempfile.mkdtemp(prefix="run-", dir=args.work)

    for attempt in (1, 2, 3):
        port, out_dir, results = run_once(args, work, attempt)
        logs = "".join(r[1] for r in results.values())
        # The free port can be taken between our probe and the rank's bind: try another one.
        if any(r[0] != 0 for r in results.values()) and "Address already in use" in logs and attempt < 3:
            print(f"attempt {attempt}: port {port} was taken meanwhile; retrying", flush=True)
            note_retry("torch.rendezvous", f"port {port} taken meanwhile")
            continue
        break

    dump_text = ""
    try:
        files, dump_text = dump(args, out_dir)
        errors = check(files, results, port)
    except (Fail, subprocess.TimeoutExpired) as e:
        errors = [str(e)]

    if errors:
        print("FAIL:")
        for e in errors:
            print(f"  - {e}")
        for rank, (rc, out, pid, cmd) in sorted(results.items()):
            print(f"\n--- rank {rank}: pid {pid}, exit {rc}, command: {' '.join(cmd)}\n{out}")
        try:
            print(f"\n--- trace files: {sorted(os.listdir(out_dir))}")
        except OSError as e:
            print(f"\n--- trace directory: {e}")
        if dump_text:
            summary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                   "scripts", "trace_summary.py")
            if os.path.isfile(summary):
                print("\n--- rdzvscope dump, summarized:", flush=True)
                subprocess.run([sys.executable, summary], input=dump_text, text=True, timeout=30)
            print("\n--- rdzvscope dump (first 200 lines):")
            print("\n".join(dump_text.splitlines()[:200]))
        print(f"\n(scratch kept in {work})")
        return 1

    print(f"PASS: {len(files)} trace file(s); both ranks traced with identity, store connect to "
          f"port {port}, rank 0 bind/listen/accept")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
