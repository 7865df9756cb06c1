#!/usr/bin/env python3
"""rdzvscope preflight on the test cluster (tests/cluster/cluster.sh): one broken configuration
per check, on 3 hosts, every host running

    rdzvscope preflight --endpoint store.rdzv:29500 --world-size 3 --nodes node0,node1,node2
                        --timeout T --out WORK/out

at the same time, as a job script would before the job. node0 is the store host (store.rdzv
is node0's address in every host's /etc/hosts unless a case leaves it out). Each case checks
every host's exit status and that the reports name the node and the cause.

    preflight_cluster_test.py RDZVSCOPE CASE [--python PY] [--keep]

Cases:
  healthy            nothing broken: all exit 0; node0 lists node1 and node2 with their clocks,
                     and port 29500 can be bound on node0 right after (the preflight let go)
  host_missing       store.rdzv is not in node2's /etc/hosts: node2 says EAI_NONAME (exit 3);
                     node0 says node2 never showed up (exit 3); node1 is fine (exit 0)
  port_held          a process listens on node0:29500: node0 names its pid and command
                     (EADDRINUSE, exit 3); node1 and node2 connect but get no preflight answer
                     (exit 3)
  syn_dropped        node1 drops its SYNs to port 29500 (iptables in its namespace): node1 says
                     no answer to the SYN (exit 3); node0 says node1 never showed up (exit 3)
  small_somaxconn    net.core.somaxconn 16 in node0's namespace, WORLD_SIZE=512: node0 warns
                     (exit 0: the ranks get in, late); then, alone (no --world-size) with
                     `ulimit -n 256`, node0 fails the open-file check (exit 3)
  node_never_starts  node2's preflight is never started: node0 names node2 (exit 3); node1 is
                     fine (exit 0)
  job_after_host_missing
                     host_missing, then the real PyTorch job (--python PY, 2.x: one gloo rank per
                     host, MASTER_ADDR=store.rdzv, timeout 4 s) fails as predicted: node2's rank
                     prints `gai error: -2` and times out connecting, every rank exits 1, and
                     node0's rank 0 did bind port 29500 (the preflight had let go of it)
  torchrun_job       as a Slurm job script runs it before torchrun (--python PY, 2.x): no
                     RANK, no --endpoint / --world-size / --nodes, only torchrun's variables
                     (PET_RDZV_ENDPOINT=store.rdzv:29400, PET_NNODES=3, PET_NODE_RANK=i) and
                     SLURM_JOB_NODELIST=node[0-2]: all exit 0, node0 lists node1 and node2 with
                     their node ranks; then one torchrun agent per host (c10d, the same
                     variables, under `rdzvscope run --out` into the preflight's directory)
                     runs the job, and `rdzvscope analyze` on that directory is healthy and
                     shows the three preflights with their node ranks
Exit 77 (skipped) without root, ip, iptables or unshare.
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import preflight  # noqa: E402
from rdzvtest.checks import Fail, expect, finish_scenario, log  # noqa: E402
from rdzvtest.cluster import Cluster, missing_requirements  # noqa: E402
from rdzvtest.launch import (RANK_SCRIPT, Launcher, job_env, start, torch_version,  # noqa: E402
                             torchrun_cmd)
from rdzvtest.preflight import expect_check, expect_rc  # noqa: E402

STORE = "store.rdzv"
PORT = 29500
TIMEOUT_S = 8          # each preflight's --timeout
BOUND_S = 40           # every preflight of a case has exited by then
NODES = ["node0", "node1", "node2"]


def args(**extra):
    a = ["--endpoint", f"{STORE}:{PORT}", "--world-size", "3", "--nodes", ",".join(NODES),
         "--timeout", str(TIMEOUT_S)]
    for k, v in extra.items():
        a += [f"--{k.replace('_', '-')}", str(v)]
    return a


class Case:
    def __init__(self, rdzvscope, cluster, work):
        self.rdzvscope, self.cluster, self.work = rdzvscope, cluster, work

    def run(self, hosts=NODES, env_of=lambda h: None, wrap_of=lambda h: (), argv=None):
        """Every host's preflight at the same time (argv: instead of args())."""
        ps = {h: preflight.start(self.cluster, h, self.rdzvscope, self.work, argv or args(),
                                 env_of(h), wrap_of(h)) for h in hosts}
        preflight.wait(list(ps.values()), BOUND_S)
        for p in ps.values():
            log(f"--- {p.label}: exit {p.rc}\n{p.text().rstrip()}")
        return ps

    def bind_on(self, host, port):
        """Whether a plain socket can bind host:port now (python3 on the host)."""
        code = ("import socket; s = socket.socket(socket.AF_INET6); "
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                f"s.bind(('::', {port})); s.listen(); print('bound')")
        out = self.cluster.run_on(host, "python3", "-c", code, check=False)
        return "bound" in out


def case_healthy(c):
    errors = []
    ps = c.run()
    for h in NODES:
        expect_rc(ps[h], 0, errors)
    expect_check(ps["node0"], "bind", "ok", [f"port {PORT} can be bound"], errors)
    expect_check(ps["node0"], "nodes", "ok", ["all 3 node(s) reported"], errors)
    peers = {p["host"]: p for n in ps["node0"].checks("nodes") for p in n["data"].get("peers", [])}
    expect(set(peers) == {"node1", "node2"}, f"node0's peers: {sorted(peers)}", errors)
    for h in ("node1", "node2"):
        got = peers.get(h, {}).get("address")
        expect(got == c.cluster.addr[h], f"{h} connected from {got}, expected {c.cluster.addr[h]}",
               errors)
        expect(isinstance(peers.get(h, {}).get("node_ahead_ms"), (int, float)),
               f"node0 has no clock sample of {h}", errors)
        store_addr = f"[::ffff:{c.cluster.addr['node0']}]:{PORT}"
        expect_check(ps[h], "connect", "ok", [f"connected to {store_addr}"], errors)
        expect_check(ps[h], "clock", "ok", ["node0 (the store host) by"], errors)
    expect(c.bind_on("node0", PORT), f"port {PORT} cannot be bound on node0 after the preflight",
           errors)
    return errors


def case_host_missing(c):
    errors = []
    ps = c.run()
    expect_rc(ps["node2"], 3, errors)
    expect_check(ps["node2"], "resolve", "fail", [f"{STORE} does not resolve on this node",
                                                  "EAI_NONAME"], errors)
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "nodes", "fail", ["never showed up: node2"], errors)
    expect_rc(ps["node1"], 0, errors)
    return errors


def case_port_held(c):
    errors = []
    holder_log = os.path.join(c.work, "holder.log")
    code = ("import socket, time; s = socket.socket(socket.AF_INET6); "
            f"s.bind(('::', {PORT})); s.listen(); print('listening', flush=True); time.sleep(120)")
    with open(holder_log, "w") as out:
        holder = subprocess.Popen(c.cluster.exec_prefix("node0") + ["python3", "-c", code],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "listening" not in preflight.read(holder_log) and time.monotonic() < deadline:
            time.sleep(0.05)
        if "listening" not in preflight.read(holder_log):
            raise Fail(f"the holder did not start: {preflight.read(holder_log)}")
        ps = c.run()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "bind", "fail", ["EADDRINUSE", f"held by pid {holder.pid} (python3 -c"],
                 errors)
    for h in ("node1", "node2"):
        expect_rc(ps[h], 3, errors)
        expect_check(ps[h], "meeting", "fail", [f"connected to {STORE}:{PORT}, but no answer to the hello"],
                     errors)
    return errors


def dropped_syns(c, host):
    out = c.cluster.run_on(host, "iptables", "-L", "OUTPUT", "-v", "-n", "-x")
    return sum(int(l.split()[0]) for l in out.splitlines() if "DROP" in l and f"dpt:{PORT}" in l)


def case_syn_dropped(c):
    errors = []
    c.cluster.run_on("node1", "iptables", "-A", "OUTPUT", "-p", "tcp", "--dport", str(PORT),
                     "--syn", "-j", "DROP")
    ps = c.run()
    dropped = dropped_syns(c, "node1")
    log(f"node1's iptables dropped {dropped} SYN(s)")
    expect(dropped >= 1, "node1 dropped no SYN: the fault did not happen", errors)
    expect_rc(ps["node1"], 3, errors)
    expect_check(ps["node1"], "connect", "fail", [f"{STORE}:{PORT}: no answer to the SYN within"], errors)
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "nodes", "fail", ["never showed up: node1"], errors)
    expect_rc(ps["node2"], 0, errors)
    return errors


def case_small_somaxconn(c):
    errors = []
    c.cluster.run_on("node0", "sysctl", "-q", "-w", "net.core.somaxconn=16")
    ps = c.run(env_of=lambda h: {"WORLD_SIZE": "512"})
    for h in NODES:
        expect_rc(ps[h], 0, errors)
    expect_check(ps["node0"], "somaxconn", "warn", ["net.core.somaxconn 16 < 512 rank(s)"], errors)
    # The same node with an open-file limit below what 512 clients need: that one fails.
    ps = c.run(hosts=["node0"], env_of=lambda h: {"WORLD_SIZE": "512"},
               wrap_of=lambda h: ("sh", "-c", 'ulimit -n 256 && exec "$@"', "sh"),
               argv=["--endpoint", f"{STORE}:{PORT}", "--timeout", str(TIMEOUT_S)])
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "nofile", "fail", ["open-file limit 256", "576 descriptors"], errors)
    return errors


def case_node_never_starts(c):
    errors = []
    ps = c.run(hosts=["node0", "node1"])
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "nodes", "fail", ["2 of 3 node(s) reported", "never showed up: node2"],
                 errors)
    expect_rc(ps["node1"], 0, errors)
    return errors


JOB_TIMEOUT_S = 4      # the job's init_process_group timeout
JOB_BOUND_S = 90       # torch imports on a loaded 2-core machine


def case_job_after_host_missing(c):
    errors = case_host_missing(c)
    if c.python is None:
        raise Fail("job_after_host_missing needs --python (an interpreter with PyTorch 2.x)")
    log(f"the job: PyTorch {torch_version(c.python)}, one rank per host")
    procs = []
    for rank, host in enumerate(NODES):
        e = job_env(RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE=str(len(NODES)), MASTER_ADDR=STORE,
                    MASTER_PORT=str(PORT), E2E_TIMEOUT_S=str(JOB_TIMEOUT_S), GLOO_SOCKET_IFNAME="eth0",
                    OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        cmd = c.cluster.exec_prefix(host) + [c.python, RANK_SCRIPT]
        log_path = os.path.join(c.work, f"rank{rank}.log")
        p = start(f"rank{rank}", rank, cmd, e, log_path, host=host)
        procs.append(p)
    launcher = Launcher(c.rdzvscope, traced=False)
    launcher.wait_for_exit(procs, JOB_BOUND_S)
    launcher.terminate([p for p in procs if p.poll() is None])
    for p in procs:
        log(f"--- {p.label}@{p.host}: exit {p.rc}\n{p.text().rstrip()[-1500:]}")
        expect(p.rc == 1, f"{p.label}@{p.host}: exit {p.rc}, expected 1", errors)
    bad = procs[2].text()
    for needle in (f"network addresses of ({STORE}, {PORT}) cannot be retrieved", "gai error: -2",
                   "The client socket has timed out"):
        expect(needle in bad, f"rank2@node2 (the node preflight named) lacks {needle!r}", errors)
    for p in procs[:2]:
        expect("gai error" not in p.text(), f"{p.label}@{p.host}: a gai error on a host that resolves",
               errors)
    # Rank 0 hosted the store on the port the preflight had held: it got it, and waited.
    expect("Address already in use" not in procs[0].text(), "rank0 could not bind the store port",
           errors)
    return errors


RDZV_PORT = 29400


def case_torchrun_job(c):
    if c.python is None:
        raise Fail("torchrun_job needs --python (an interpreter with PyTorch 2.x)")
    errors = []
    pet = lambda i: {"PET_RDZV_ENDPOINT": f"{STORE}:{RDZV_PORT}", "PET_NNODES": str(len(NODES)),
                     "PET_NODE_RANK": str(i), "PET_NPROC_PER_NODE": "1",
                     "SLURM_JOB_NODELIST": "node[0-2]"}
    ps = c.run(env_of=lambda h: pet(NODES.index(h)), argv=["--timeout", str(TIMEOUT_S)])
    for i, h in enumerate(NODES):
        expect_rc(ps[h], 0, errors)
        rep = ps[h].report() or {}
        expect(rep.get("node") == {"rank": i, "source": "PET_NODE_RANK"}, f"{h}: node {rep.get('node')}",
               errors)
        expect((rep.get("endpoint") or {}).get("source") == "PET_RDZV_ENDPOINT" and rep.get("world_size") == 3,
               f"{h}: endpoint {rep.get('endpoint')}, world size {rep.get('world_size')}", errors)
    expect_check(ps["node0"], "nodes", "ok", ["all 3 node(s) reported"], errors)
    peers = {p["host"]: p.get("node_rank") for n in ps["node0"].checks("nodes")
             for p in n["data"].get("peers", [])}
    expect(peers == {"node1": 1, "node2": 2}, f"node0's peers and their node ranks: {peers}", errors)
    expect("node1 (node 1)" in ps["node0"].text(), "node0's NODES table lacks node ranks", errors)

    out_dir = os.path.join(c.work, "out")   # the preflights' --out: the job's trace directory
    log(f"the job: PyTorch {torch_version(c.python)}, one torchrun agent per host")
    procs = []
    for i, h in enumerate(NODES):
        e = job_env(E2E_TIMEOUT_S="10", GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1",
                    PYTHONUNBUFFERED="1", **pet(i))
        cmd = c.cluster.exec_prefix(h) + [c.rdzvscope, "run", "--out", out_dir, "--"] + \
            torchrun_cmd(c.python) + ["--max-restarts", "0", "--monitor-interval", "0.2",
                                      "--rdzv-backend", "c10d", "--rdzv-id", "preflight-torchrun",
                                      "--rdzv-conf", "join_timeout=20", RANK_SCRIPT]
        log_path = os.path.join(c.work, f"agent-{h}.log")
        p = start(f"agent-{h}", None, cmd, e, log_path, host=h)
        procs.append(p)
    launcher = Launcher(c.rdzvscope, traced=False)
    launcher.wait_for_exit(procs, JOB_BOUND_S)
    launcher.terminate([p for p in procs if p.poll() is None])
    for p in procs:
        log(f"--- {p.label}: exit {p.rc}\n{p.text().rstrip()[-1500:]}")
        expect(p.rc == 0 and "e2e: done" in p.text(), f"{p.label}: exit {p.rc}, want 0", errors)
    an = subprocess.run([c.rdzvscope, "analyze", out_dir, "--format", "json"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, timeout=120)
    try:
        d = json.loads(an.stdout)
    except json.JSONDecodeError:
        raise Fail(f"analyze exited {an.returncode}: {an.stderr[-2000:]}")
    log("analyze: " + json.dumps(d.get("verdict"))[:400] + "\npreflight: " + json.dumps(d.get("preflight"))[:1500])
    expect(d["verdict"]["class"] == "healthy", f"verdict {d['verdict']['class']}", errors)
    nodes = (d.get("preflight") or {}).get("nodes") or []
    expect([(n["host"], n["node_rank"], n["can_rendezvous"]) for n in nodes]
           == [("node0", 0, True), ("node1", 1, True), ("node2", 2, True)],
           f"analyze's preflight nodes: {nodes}", errors)
    return errors


def setup(c, case):
    bad = "node2" if case in ("host_missing", "job_after_host_missing") else None
    c.cluster.sh("addname", STORE, "node0", *[h for h in NODES if h != bad])


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    rdzvscope, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    keep = "--keep" in sys.argv[3:]
    python = sys.argv[sys.argv.index("--python") + 1] if "--python" in sys.argv[3:] else None
    fn = globals().get("case_" + case)
    if fn is None:
        raise SystemExit(f"unknown case {case}")
    why = missing_requirements()
    if why:
        log(f"SKIP preflight.cluster.{case}: {why}")
        return 77
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix=f"rdzvscope-preflight-{case}-")
    cluster = Cluster(len(NODES), prefix=f"rzcpf{os.getpid() % 100000}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    errors = []
    try:
        log(f"[{case}] cluster {cluster.prefix}: " + cluster.up().strip().replace("\n", "; "))
        c = Case(rdzvscope, cluster, work)
        c.python = python
        setup(c, case)
        errors = fn(c)
    except (Fail, subprocess.TimeoutExpired) as e:
        errors.append(str(e))
    finally:
        left = cluster.down()
        if left:
            errors.append(f"left behind after down: {left}")
    return finish_scenario(f"preflight.cluster.{case}", errors, work, t0, keep)


if __name__ == "__main__":
    sys.exit(main())
