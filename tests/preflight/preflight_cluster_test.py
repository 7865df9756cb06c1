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
  two_jobs_one_endpoint
                     two jobs' preflights meet at one endpoint: node0 and node1 are job train-A
                     (--job-id, 2 nodes), node2 is job 4242 (SLURM_JOB_ID) with the same
                     endpoint: node0 turns node2's hello away and says two jobs share the
                     endpoint (exit 3), node2 says the same from its side (exit 3), node1 is
                     fine (exit 0)
  job_after_host_missing
                     host_missing, then the real PyTorch job (--python PY, 2.x: one gloo rank per
                     host, MASTER_ADDR=store.rdzv, timeout 4 s) fails as predicted: node2's rank
                     prints `gai error: -2` and times out connecting, every rank exits 1, and
                     node0's rank 0 did bind port 29500 (the preflight had let go of it)
  job_after_port_held
                     port_held, then the job, the holder still there: rank 0 cannot host the
                     store (EADDRINUSE, exit 1); ranks 1 and 2 connect to the holder, which never
                     answers (as their preflights said), and hang there past their timeout
  job_after_syn_dropped
                     syn_dropped, then the job: node1's rank times out connecting (its SYNs
                     dropped again), rank 0 times out with 2/3 clients joined, rank 2 waiting
                     on the store; every rank exits 1
  job_after_node_never_starts
                     node_never_starts, then the job without node2's rank: rank 0 times out with
                     2/3 clients joined, rank 1 waiting on the store; both exit 1
  (small_somaxconn has no job after it: see the comment after case_job_after_node_never_starts)
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
import contextlib
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
        # c10d (and preflight, like it) tries the resolver's addresses in turn: the v4-mapped
        # one first, the plain IPv4 one next. When node0 starts listening between the two
        # attempts, the second one connects, so either spelling of node0's address is right.
        store_addrs = {f"[::ffff:{c.cluster.addr['node0']}]:{PORT}",
                       f"{c.cluster.addr['node0']}:{PORT}"}
        expect_check(ps[h], "connect", "ok", ["connected to "], errors)
        got = [k["data"].get("connected_to") for k in ps[h].checks("connect")]
        expect(got and got[0] in store_addrs,
               f"{h} connected to {got}, expected one of {sorted(store_addrs)}", errors)
        expect(any(f"connected to {a}" in " ".join(ps[h].text().split()) for a in store_addrs),
               f"{h}: its text report names none of {sorted(store_addrs)}", errors)
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


@contextlib.contextmanager
def port_holder(c):
    """A python3 that listens on node0:PORT (and never accepts) while the block runs: an
    earlier job's store that did not go away. Yields its pid."""
    holder_log = os.path.join(c.work, "holder.log")
    code = ("import socket, time; s = socket.socket(socket.AF_INET6); "
            f"s.bind(('::', {PORT})); s.listen(); print('listening', flush=True); time.sleep(600)")
    with open(holder_log, "w") as out:
        holder = subprocess.Popen(c.cluster.exec_prefix("node0") + ["python3", "-c", code],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "listening" not in preflight.read(holder_log) and time.monotonic() < deadline:
            time.sleep(0.05)
        if "listening" not in preflight.read(holder_log):
            raise Fail(f"the holder did not start: {preflight.read(holder_log)}")
        yield holder.pid
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()


def expect_port_held(c, holder_pid):
    errors = []
    ps = c.run()
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "bind", "fail", ["EADDRINUSE", f"held by pid {holder_pid} (python3 -c"],
                 errors)
    for h in ("node1", "node2"):
        expect_rc(ps[h], 3, errors)
        expect_check(ps[h], "meeting", "fail", [f"connected to {STORE}:{PORT}, but no answer to the hello"],
                     errors)
    return errors


def case_port_held(c):
    with port_holder(c) as pid:
        return expect_port_held(c, pid)


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


def case_two_jobs_one_endpoint(c):
    errors = []
    two = ["--endpoint", f"{STORE}:{PORT}", "--world-size", "2", "--timeout", str(TIMEOUT_S)]
    job_a = two + ["--job-id", "train-A"]
    start = lambda h, argv, env=None: preflight.start(c.cluster, h, c.rdzvscope, c.work, argv, env)
    ps = {"node0": start("node0", job_a),
          "node2": start("node2", two, {"SLURM_JOB_ID": "4242"})}   # job B, keyed by Slurm
    # node1 only once node2 was answered: node0's meeting ends at node1's hello, and node2
    # must have met it by then (else it meets a closed port, not another job).
    preflight.wait([ps["node2"]], BOUND_S)
    ps["node1"] = start("node1", job_a)
    preflight.wait([ps["node0"], ps["node1"]], BOUND_S)
    for h in NODES:
        log(f"--- {ps[h].label}: exit {ps[h].rc}\n{ps[h].text().rstrip()}")
    expect_rc(ps["node0"], 3, errors)
    expect_check(ps["node0"], "job", "fail",
                 ["two jobs share the rendezvous endpoint: this meeting is job 'train-A'",
                  f"node2 ({c.cluster.addr['node2']}, job '4242')"], errors)
    expect_check(ps["node0"], "nodes", "ok", ["all 2 node(s) reported (node0, node1)"], errors)
    expect("as job 'train-A' (from --job-id)" in " ".join(ps["node0"].text().split()),
           "node0's report does not say its job", errors)
    expect_rc(ps["node2"], 3, errors)
    expect_check(ps["node2"], "meeting", "fail",
                 [f"two jobs share the rendezvous endpoint {STORE}:{PORT}",
                  "the store host's preflight (node0) is job 'train-A', this node is job '4242'"],
                 errors)
    expect(((ps["node2"].report() or {}).get("job") or {}) == {"id": "4242", "source": "SLURM_JOB_ID"},
           f"node2's job in its report: {(ps['node2'].report() or {}).get('job')}", errors)
    expect_rc(ps["node1"], 0, errors)
    return errors


JOB_TIMEOUT_S = 4      # the job's init_process_group timeout
JOB_BOUND_S = 90       # torch imports on a loaded 2-core machine
HUNG_BOUND_S = 25      # a job that hangs (job_after_port_held): 6x its timeout, imports included


def run_job(c, hosts=NODES, before_kill=lambda procs: None, bound_s=JOB_BOUND_S):
    """The real PyTorch job, started after the preflight as a job script would: one gloo rank
    per host of `hosts`, rank i on NODES[i] (a host left out is a rank that never starts),
    MASTER_ADDR=store.rdzv, init timeout JOB_TIMEOUT_S. Returns {host: Proc}, each exited or
    killed at bound_s (before_kill(procs) runs first, to look at the survivors); every
    rank's log is logged."""
    if c.python is None:
        raise Fail("a job_after_* case needs --python (an interpreter with PyTorch)")
    log(f"the job: PyTorch {torch_version(c.python)}, one rank per host on {', '.join(hosts)}")
    procs = {}
    for host in hosts:
        rank = NODES.index(host)
        e = job_env(RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE=str(len(NODES)), MASTER_ADDR=STORE,
                    MASTER_PORT=str(PORT), E2E_TIMEOUT_S=str(JOB_TIMEOUT_S), GLOO_SOCKET_IFNAME="eth0",
                    OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        cmd = c.cluster.exec_prefix(host) + [c.python, RANK_SCRIPT]
        procs[host] = start(f"rank{rank}", rank, cmd, e, os.path.join(c.work, f"rank{rank}.log"),
                            host=host)
    launcher = Launcher(c.rdzvscope, traced=False)
    launcher.wait_for_exit(list(procs.values()), bound_s)
    before_kill(procs)
    launcher.terminate([p for p in procs.values() if p.poll() is None])
    for p in procs.values():
        log(f"--- {p.label}@{p.host}: exit {p.rc}\n{p.text().rstrip()[-1500:]}")
    return procs


def torch1(c):
    """The job runs PyTorch 1.x (Debian's 1.13), whose messages differ from 2.x's."""
    return torch_version(c.python).startswith("1.")


def expect_job_failed(procs, errors):
    """Every rank of the job exited 1 by itself (rank.py's failure), none killed at the bound."""
    for p in procs.values():
        expect(p.rc == 1 and not p.killed_by_bound,
               f"{p.label}@{p.host}: exit {p.rc}{' (killed at the bound)' if p.killed_by_bound else ''}, "
               "expected 1", errors)


def expect_in_log(p, needles, errors, why):
    """p's log holds every needle (case-insensitive: PyTorch's wording of one errno varies)."""
    text = p.text().lower()
    for n in needles:
        expect(n.lower() in text, f"{p.label}@{p.host} ({why}) lacks {n!r}", errors)


def case_job_after_host_missing(c):
    errors = case_host_missing(c)
    procs = run_job(c)
    expect_job_failed(procs, errors)
    expect_in_log(procs["node2"], [f"network addresses of ({STORE}, {PORT}) cannot be retrieved",
                                   "gai error: -2", "The client socket has timed out"], errors,
                  "the node preflight named")
    for h in ("node0", "node1"):
        expect("gai error" not in procs[h].text(), f"{h}: a gai error on a host that resolves", errors)
    # Rank 0 hosted the store on the port the preflight had held: it got it, and waited.
    expect("address already in use" not in procs["node0"].text().lower(),
           "rank0 could not bind the store port", errors)
    return errors


def store_port_peers(c):
    """The addresses with a connection established to PORT on node0 (accepted or not)."""
    out = c.cluster.run_on("node0", "ss", "-Htn", "state", "established", f"( sport = :{PORT} )")
    return {l.split()[-1].rsplit(":", 1)[0].replace("[::ffff:", "").rstrip("]")
            for l in out.splitlines() if l.strip()}


def case_job_after_port_held(c):
    # Ranks 1 and 2 connect to the holder, which never answers: as their preflight did. The
    # TCPStore client (2.13, and 1.13 too) then waits for the store's answer without its timeout
    # (the job hangs), so they are still there at HUNG_BOUND_S (far past the 4 s timeout, even after a
    # slow torch import), connected to node0:PORT.
    seen = {}
    with port_holder(c) as pid:
        errors = expect_port_held(c, pid)
        procs = run_job(c, before_kill=lambda procs: seen.update(peers=store_port_peers(c)), bound_s=HUNG_BOUND_S)
    log(f"connected to node0:{PORT} at {HUNG_BOUND_S} s: {sorted(seen['peers'])}")
    p0 = procs["node0"]
    expect(p0.rc == 1 and not p0.killed_by_bound, f"rank0@node0: exit {p0.rc}, expected 1", errors)
    # 1.13 names the errno by its text and number only ("errno: 98 - Address already in use").
    expect_in_log(p0, ["address already in use"] + ([] if torch1(c) else ["EADDRINUSE"]), errors,
                  "the store host, whose port preflight found held")
    for h in ("node1", "node2"):
        p = procs[h]
        expect(p.killed_by_bound and "e2e: torch imported" in p.text() and "e2e: joined" not in p.text(),
               f"{p.label}@{h}: exit {p.rc}, expected still waiting at {HUNG_BOUND_S} s", errors)
        expect(c.cluster.addr[h] in seen["peers"],
               f"{h} was not connected to node0:{PORT} (the holder) while it waited", errors)
        expect("address already in use" not in p.text().lower(),
               f"{h}: EADDRINUSE on a node that hosts no store", errors)
    return errors


def case_job_after_syn_dropped(c):
    errors = case_syn_dropped(c)
    before = dropped_syns(c, "node1")
    procs = run_job(c)
    log(f"node1's iptables dropped {dropped_syns(c, 'node1') - before} SYN(s) of the job")
    expect(dropped_syns(c, "node1") > before, "node1 dropped none of the job's SYNs", errors)
    expect_job_failed(procs, errors)
    expect_in_log(procs["node1"], ["The client socket has timed out",
                                   f"while trying to connect to ({STORE}, {PORT})"],
                  errors, "the node preflight named")
    expect_waited_for_one(c, procs, ("node0", "node2"), errors, "node1's rank")
    return errors


def expect_waited_for_one(c, procs, hosts, errors, whom):
    """The store host's rank 0 timed out with 2 of 3 clients in, the other host's rank timed
    out waiting on the store (1.13: each says only "Socket Timeout", its SO_RCVTIMEO); none of
    them timed out connecting (the store was reachable)."""
    if torch1(c):
        for h in hosts:
            expect_in_log(procs[h], ["Socket Timeout"], errors, f"waited for {whom}")
    else:
        expect_in_log(procs["node0"], ["waiting for clients. 2/3 clients joined"], errors, f"waited for {whom}")
    for h in hosts:
        if h != "node0" and not torch1(c):
            expect_in_log(procs[h], ["wait timeout after"], errors, f"waited for {whom}")
        expect("while trying to connect" not in procs[h].text(),
               f"{h}: a connect timeout although the store was reachable", errors)


def case_job_after_node_never_starts(c):
    errors = case_node_never_starts(c)
    procs = run_job(c, hosts=["node0", "node1"])   # node2's rank never starts, as its preflight
    expect_job_failed(procs, errors)
    expect_waited_for_one(c, procs, ("node0", "node1"), errors, "node2's rank")
    return errors


# small_somaxconn has no job after it: the preflight only warns there (16 < 512 ranks get in,
# late), and what it warns about needs 512 ranks connecting at once, a job this 2-core machine
# cannot run (512 PyTorch processes); a job of 3 ranks would pass and prove nothing.


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
