#!/usr/bin/env python3
"""The fault matrix (issue 32): real 4-rank gloo jobs, each with one real fault that this runner
causes, so that it knows the ground truth (the kind of fault, the faulty rank or node, the
phase), and `rdzvscope analyze TRACEDIR --log LOGS --format json` scored against that truth.

    matrix.py --list                         every runnable cell, and why the others are left out
    matrix.py --faults                       the faults, their accepted verdicts and why (Markdown)
    matrix.py --core                         the fixed core (ctest matrix.core)
    matrix.py --sample N [--seed S]          N cells drawn at random (the seed is printed)
    matrix.py --cells NAME_OR_GLOB...        named cells
    common options: --rdzvscope PATH --python PY [--python PY2] --json FILE --work DIR --keep

A cell is FAULT.TARGET.PHASE.LAUNCHER.torchVERSION, e.g. crash.worker.before_connect.hand.torch2.13:

  fault     what goes wrong (FAULTS below: each with the verdict classes it may honestly produce)
  target    store (rank 0, the store host; under torchrun the agent, which hosts the store),
            worker (rank 1), highest (rank 3), node (ranks 2 and 3: a network namespace of
            their own, joined to the store's by a veth pair)
  phase     before_connect (before the first store connect), store_traffic (after
            init_process_group, while every rank loops on store set/get), first_collective
            (after init_process_group, before the first all_reduce)
  launcher  hand (every rank under `rdzvscope run`, env://), torchrun-c10d (one agent under
            `rdzvscope run`, 4 workers), torchrun-static (not yet run by the matrix)
  torch     2.13 and 1.13 (the interpreters given with --python; 1.13's torchrun does not start
            under this Python 3.11: by hand only)

Each cell's score: right (the class is in the fault's accepted set, the initiating rank is the
faulty one, and the word checks hold), wrong, unknown (class `unknown`), or unscored (the fault
did not happen as designed twice, or analyze failed); "wrong-high" is a wrong verdict at high
confidence. KNOWN_WRONG names the cells known to be wrong today: the exit status is 1 when a
cell NOT on that list is wrong at high confidence, 2 when the runner itself failed (or no cell
could be scored), else 0.

Standard library only. The ranks run tests/e2e/rank.py (faults by E2E_FAULT), launched through
rdzvtest.e2e's Harness; cells with network or mount namespaces need root, `ip`, `iptables`
and util-linux `unshare`. Every process the runner started, and every namespace, is removed at
the end of a cell and when the runner is interrupted (SIGINT, SIGTERM).
"""
import argparse
import datetime
import fnmatch
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import Fail, log  # noqa: E402
from rdzvtest.retries import note_retry  # noqa: E402
from rdzvtest.cli import AnalyzerMissing  # noqa: E402
from rdzvtest.e2e import (REJECT_NET, WORLD, Harness, Run, launch_torchrun, node_view_prefix,  # noqa: E402
                          other_port, port_stolen, rejecting_netns_pair, sh, silent_resolver,
                          three_agents_one_odd, two_jobs_one_port, two_torchrun_jobs_one_port,
                          write_hosts_file)
from rdzvtest.launch import become_subreaper, kill_descendants, reap_orphans  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# ------------------------------------------------------------------------------------ the axes
TARGETS = {"store": (0,), "worker": (1,), "highest": (WORLD - 1,), "node": (2, 3)}
PHASES = ("before_connect", "store_traffic", "first_collective")
LAUNCHERS = ("hand", "torchrun-c10d", "torchrun-static")
TORCH = ("2.13", "1.13")

# Where rank.py acts (E2E_FAULT=ACTION@POINT) for each phase.
POINT = {"before_connect": "before_init", "first_collective": "after_init", "store_traffic": "store_loop"}

T_S = 5            # init_process_group timeout of every rank (the store's waits, gloo's)
LATE_S = 12        # how late a late rank is: beyond T and beyond 1.13's store host (2T + 1)
STALL_S = 60       # a stalled rank's sleep (it is killed long before; a bound if we are not)
BOUND_S = 60       # every process of a cell has exited by then (else SIGKILL)
GRACE_S = 2 * T_S + 4   # after a first failure, what is left gets this long, then SIGTERM
NAME = "rdzv-master"     # MASTER_ADDR of the hosts-file faults
# In the two-namespace faults: the store's address; one where no host is (no ARP answer:
# EHOSTUNREACH); one of the store's namespace whose SYNs are dropped (a host that never answers).
STORE_ADDR, NO_HOST, SILENT = f"{REJECT_NET}.1", f"{REJECT_NET}.3", f"{REJECT_NET}.4"
NODE_NAMES = ("node0", "node1")   # their host names: the store's namespace, the target's
# The faults that set up networks or lookups of their own; the others' node target is a plain
# two-node network (rejecting_netns_pair without a rule).
OWN_NETWORK = ("name_elsewhere", "name_elsewhere_nohost", "master_addr", "reject", "drop", "reset_mid_traffic",
               "resolver_silent", "name_unresolved")


# ------------------------------------------------------------------------------------ faults
@dataclass
class Fault:
    """One kind of fault. accept: phase -> the verdicts it may honestly produce, each "class"
    or "class/cause" (accept_store: those of the store host as the target, where they differ);
    why: the reason (--faults prints them all). targets/phases/launchers: where it runs; left_out: (target, phase,
    launcher) patterns ("*" any) that make no sense, with why. dead: the target ends (exit,
    signal): its summary must say so and must not call it late."""
    name: str
    what: str
    accept: dict
    why: str
    targets: tuple = ("worker", "highest")
    phases: tuple = ("before_connect",)
    launchers: tuple = ("hand", "torchrun-c10d", "torchrun-static")
    left_out: dict = field(default_factory=dict)
    dead: bool = False
    root: bool = False        # needs network or mount namespaces
    pending: str = None       # not yet runnable: why
    accept_store: dict = field(default_factory=dict)
    accept_launcher: dict = field(default_factory=dict)   # launcher -> {phase: verdicts}, where they differ
    no_rank: bool = False     # the fault is a job's or an agent's: the verdict must name no rank


NOT_A_WORKER_UNDER_TORCHRUN = ("under torchrun the store host is the agent, not a worker: the store's faults there "
                               "are store_killed and port_held")
# Under torchrun the matrix runs one agent with 4 workers: a node of 2 of them would be a second
# agent (a 2-node job), not written for these faults.
NODE_UNDER_TORCHRUN = ("under torchrun a whole node is an agent of a multi-node job: the matrix runs one agent "
                       "(its 4 workers) for this fault")
# The faults of an iptables rule on the store's node against the target's.
RULE_ON_THE_STORES_NODE = {("store", "*", "*"): "the store host's own client is local: no rule between them",
                           ("*", "*", "torchrun-*"): "per-node namespaces for torchrun agents: not yet"}
NODE_TIE = ("ranks 2 and 3 with the odd setting against ranks 0 and 1: two against two, no majority says which "
            "side is the odd one")

FAULTS = {f.name: f for f in (
    Fault("late", f"the target sleeps {LATE_S} s after `import torch`, before init_process_group (T={T_S} s)",
          accept={"before_connect": ("straggler_timeout",)},
          why="the others connected and gave up waiting for it; it arrived after them (or was stopped "
              "first): the late rank is the initiating one",
          targets=("worker", "highest", "node"),
          left_out={("store", "*", "*"): "a late store host is the fault store_late",
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN}),
    Fault("crash", "the target raises an exception (exit 1, traceback in its log)",
          targets=("store", "worker", "highest", "node"),
          phases=("before_connect", "store_traffic", "first_collective"), dead=True,
          accept={"before_connect": ("straggler_timeout", "rank_died"),
                  "store_traffic": ("broken_pipe/peer_died", "rank_died"),
                  "first_collective": ("broken_pipe/peer_died", "rank_died")},
          accept_store={"before_connect": ("store_not_ready", "rank_died")},
          why="before its first connect the others wait for a rank that never comes: straggler_timeout "
              "names it when they timed out waiting (the words must say it died, with its exit status), "
              "rank_died when their launcher stopped them first (torchrun SIGTERMs the other workers once "
              "one failed); the store host dead before it listened leaves nothing listening "
              "(store_not_ready, or rank_died when its death came before the others' first refused "
              "connect); after init_process_group its peers lose their connections to a process "
              "that died without a rendezvous error of its own (broken_pipe, cause peer_died), or their "
              "launcher stops them (rank_died)",
          left_out={("store", "*", "torchrun-*"): NOT_A_WORKER_UNDER_TORCHRUN,
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN}),
    Fault("exit0", "the target's process ends with status 0, its work not done",
          targets=("worker", "highest", "node"),
          phases=("before_connect", "store_traffic", "first_collective"), dead=True,
          accept={"before_connect": ("straggler_timeout",),
                  "store_traffic": ("broken_pipe/peer_died",),
                  "first_collective": ("broken_pipe/peer_died",)},
          why="as crash: the others wait for a rank that is gone (before its first connect), or lose "
              "their connections to it (after init_process_group)",
          left_out={("store", "*", "*"): "rank 0 gone before it listens is the store never starting "
                                         "(never_started.store); after init it is store_killed's case",
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN}),
    Fault("sigkill", "the target is SIGKILLed (the OOM killer, say)",
          targets=("worker", "highest", "node"), phases=("before_connect", "store_traffic", "first_collective"), dead=True,
          accept={"before_connect": ("straggler_timeout", "rank_died"),
                  "store_traffic": ("broken_pipe/peer_died", "rank_died"),
                  "first_collective": ("broken_pipe/peer_died", "rank_died")},
          why="before its first connect, as crash (the others wait for a rank that is gone, or their "
              "launcher stops them); after init_process_group its peers' connections to it break (EOF, "
              "ECONNRESET) and it left no error: the first to die initiated it",
          left_out={("store", "*", "*"): "the store host SIGKILLed is the fault store_killed",
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN}),
    Fault("store_killed", "the store host is SIGKILLed (under torchrun: the agent, which hosts it)",
          targets=("store",), phases=("store_traffic", "first_collective"), dead=True,
          accept={"store_traffic": ("broken_pipe/peer_died",), "first_collective": ("broken_pipe/peer_died",)},
          why="every client's store connection breaks under it: the dead store host initiated it",
          left_out={("*", "before_connect", "*"): "a store host dead before it listened is "
                                                  "crash.store.before_connect / never_started.store",
                    ("*", "first_collective", "torchrun-*"): "the workers' all_reduce does not touch "
                                                             "the agent's store: nothing fails"}),
    Fault("sigstop", "the target stops itself (SIGSTOP: frozen, killed by the runner at the end)",
          targets=("worker", "highest", "node"), phases=("first_collective",),
          accept={"first_collective": ("straggler_timeout",)},
          why="a frozen rank never answers its peers at the first collective, which time out waiting for "
              "it: the one they waited for is the initiating rank",
          left_out={("store", "*", "*"): "a frozen store host is the subject of the hangs issue "
                                         "(not yet in the matrix)",
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN,
                    ("*", "before_connect", "*"): "frozen before its first connect is a late rank (late)",
                    ("*", "store_traffic", "*"): "frozen in the store loop is seen by its peers at their "
                                                 "next barrier: first_collective's case"}),
    Fault("stall", f"the target sleeps after init_process_group, before its first all_reduce (T={T_S} s)",
          targets=("store", "worker", "highest", "node"), phases=("first_collective",),
          accept={"first_collective": ("straggler_timeout",)},
          why="the others enter the all_reduce and time out waiting for the stalled rank: it is the "
              "initiating rank",
          left_out={("store", "*", "torchrun-*"): NOT_A_WORKER_UNDER_TORCHRUN,
                    ("node", "*", "torchrun-*"): NODE_UNDER_TORCHRUN,
                    ("*", "before_connect", "*"): "a stall before the first connect is a late rank (late)",
                    ("*", "store_traffic", "*"): "a stall in the store loop is not yet written"}),
    Fault("never_started", "the target is never launched (WORLD_SIZE=4 on the others)",
          targets=("store", "worker", "highest", "node"), launchers=("hand",),
          accept={"before_connect": ("straggler_timeout",)},
          accept_store={"before_connect": ("store_not_ready",)},
          why="the others wait for a rank of which no trace exists: the lowest absent rank initiated it "
              "(straggler_timeout); the store host never started leaves nothing listening "
              "(store_not_ready; with no trace of it, the verdict may name no rank)",
          left_out={("*", "*", "torchrun-*"): "torchrun starts every worker of its node; a worker that "
                                              "never starts is a node that never joins (per-node agents, "
                                              "not yet)"}),
    Fault("name_unresolved", f"MASTER_ADDR={NAME} everywhere; the target's hosts file (a mount namespace "
                             f"of its own) lacks the name the others' maps to 127.0.0.1",
          targets=("store", "worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("name_resolution",)},
          why="the rank whose lookups of the store's name fail is the initiating rank (for a node: both "
              "ranks' hosts files lack it)",
          left_out={("*", "*", "torchrun-*"): "torchrun's workers share their agent's mount namespace: "
                                              "a per-worker hosts file cannot be given"}),
    Fault("name_elsewhere", f"MASTER_ADDR={NAME} everywhere; the target's node (a network namespace and "
                            f"host name of its own, joined to the store's by a veth pair) has a hosts file "
                            f"that maps it to {SILENT}, an address that never answers (its SYNs are "
                            f"dropped), the others' to the store {STORE_ADDR}",
          targets=("worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("name_resolution", "store_unreachable")},
          why="the name resolves, to another address on the target's node: a lookup problem of that node "
              "(name_resolution) or a store its ranks cannot reach while others do (store_unreachable), "
              "named with both addresses; never a firewall, and never connect_timeout with the store host "
              "initiating (the store was never at that address)",
          left_out={("store", "*", "*"): "the store host binds the wildcard address: its own lookup going "
                                         "elsewhere is only its client's (not yet written)",
                    ("*", "*", "torchrun-*"): "per-node namespaces for torchrun agents: not yet"}),
    Fault("name_elsewhere_nohost", f"as name_elsewhere, the stale address {NO_HOST} being one where no host "
                                   f"is (no ARP answer: EHOSTUNREACH)",
          targets=("worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("name_resolution", "store_unreachable")},
          why="as name_elsewhere",
          left_out={("store", "*", "*"): "as name_elsewhere",
                    ("*", "*", "torchrun-*"): "per-node namespaces for torchrun agents: not yet"}),
    Fault("master_addr", f"the target's MASTER_ADDR is {NO_HOST} (a literal where no host is), the "
                         f"others' {STORE_ADDR} (two nodes: network namespaces and host names)",
          targets=("worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("config_mismatch/MASTER_ADDR",)},
          why="the ranks disagree on MASTER_ADDR and the odd ones never reach the store: the settings "
              "mismatch names them",
          left_out={("store", "*", "*"): "the store host's own MASTER_ADDR only decides where its client "
                                         "connects (not yet written)",
                    ("*", "*", "torchrun-*"): "per-node namespaces for torchrun agents: not yet"}),
    Fault("reject", f"the store's node rejects the target's TCP to the store port with a reset "
                    f"(iptables REJECT; the target on a node of its own: network namespace and host "
                    f"name; MASTER_ADDR={STORE_ADDR})",
          targets=("worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("store_unreachable/refused",)},
          why="the store listens and others reach it while the target is refused for its whole wait",
          left_out=RULE_ON_THE_STORES_NODE),
    Fault("drop", "the store's node drops the target node's SYNs to the store port (iptables DROP)",
          targets=("worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("connect_timeout", "store_unreachable")},
          why="the target's connects time out while others reach the store: connect_timeout, or "
              "store_unreachable. The rank: the target's, or the store host's (rank 0): the rule sits on "
              "the store's node, and with two nodes a store host that drops the SYNs of one node looks "
              "like one that drops every outside SYN (only its own node got through)",
          left_out=RULE_ON_THE_STORES_NODE),
    Fault("store_late", f"the store host (rank 0) is launched once the others gave up connecting "
                        f"(T={T_S} s) and exited",
          targets=("store",), launchers=("hand",),
          accept={"before_connect": ("store_not_ready",)},
          why="the clients' connects were refused until their timeout, and the store host listened only "
              "after: it is the initiating rank",
          left_out={("*", "*", "torchrun-*"): "torchrun's store host is node 0's agent: two-agent jobs "
                                              "are not yet in the matrix (e2e torchrun store_late)"}),
    Fault("port_held", "another process listens on the store port before the job starts",
          targets=("store",),
          accept={"before_connect": ("port_conflict",)},
          why="the store host cannot bind its port: it is the initiating rank (under torchrun the agent, "
              "no rank)"),
    Fault("master_port", "the target's MASTER_PORT is another free port (nothing listens there); under "
                         "torchrun it is set inside the worker (E2E_RANK_ENV), as a script that sets its "
                         "own would: the trace header shows torchrun's",
          targets=("store", "worker", "highest"),
          accept={"before_connect": ("config_mismatch/MASTER_PORT",)},
          why="the ranks disagree on MASTER_PORT: the odd one (fewer) initiated it, even when it is the "
              "store host (its clients are refused where the majority's port is)",
          left_out={("store", "*", "torchrun-*"): NOT_A_WORKER_UNDER_TORCHRUN,
                    ("node", "*", "*"): NODE_TIE}),
    Fault("world_size", "the target's WORLD_SIZE is 5, the others' 4; under torchrun it is set inside "
                        "the worker (as a script that passes its own world_size), the header shows torchrun's",
          targets=("store", "worker", "highest"),
          accept={"before_connect": ("config_mismatch/WORLD_SIZE",)},
          why="the ranks disagree on WORLD_SIZE: the odd one initiated it",
          left_out={("store", "*", "torchrun-*"): NOT_A_WORKER_UNDER_TORCHRUN,
                    ("node", "*", "*"): NODE_TIE}),
    Fault("resolver_silent", f"MASTER_ADDR={NAME} everywhere, every rank in a network namespace of the run's; "
                             f"the target's resolv.conf (a mount namespace of its own) names only a DNS server "
                             f"on loopback there that reads each query and drops it (timeout:2 attempts:2), "
                             f"its hosts file lacks the name; the others' hosts file maps it to 127.0.0.1",
          targets=("store", "worker", "highest", "node"), launchers=("hand",), root=True,
          accept={"before_connect": ("name_resolution/resolver_not_answering",)},
          why="the target's lookups of the store's name end in EAI_AGAIN after the resolver's whole timeout: "
              "its resolver never answered, a different repair from a name that does not exist "
              "(name_resolution, cause resolver_not_answering); the rank whose lookups failed initiated it",
          left_out={("*", "*", "torchrun-*"): "torchrun's workers share their agent's mount namespace: "
                                              "a per-worker resolv.conf cannot be given"}),
    Fault("reset_mid_traffic", "the store's node (a network namespace of its own, the target on another) starts "
                               "to reset the target's TCP to the store port (iptables REJECT with tcp-reset) "
                               "once the target's store loop runs: its established store connection gets a "
                               "RST at its next send, while the store stays up for the others",
          targets=("worker", "highest", "node"), phases=("store_traffic",), launchers=("hand",), root=True,
          accept={"store_traffic": ("broken_pipe/tcpstore_bug_suspected",)},
          why="a reset on an established store connection while the store host lives: broken_pipe with the "
              "store up (its cause tcpstore_bug_suspected is the class's name for a reset that no death "
              "explains), first seen by the target, which initiated it; never peer_died (nobody died before it), "
              "and on 2.8 or later the words must not blame the 2.7 bug",
          left_out=RULE_ON_THE_STORES_NODE),
    Fault("rdzv_id", "three c10d agents (--nnodes 3, one worker each) on one endpoint, the target node's agent "
                     "with another --rdzv-id: no rendezvous completes, every agent ends at its join timeout",
          targets=("node",), launchers=("torchrun-c10d",), no_rank=True,
          accept={"before_connect": ("config_mismatch/rdzv-id",)},
          why="the agents disagree on the rendezvous id and wait in rendezvous apart from each other: the "
              "settings mismatch names the odd agent (no worker started: no rank)",
          left_out={("*", "*", "hand"): "ranks started by hand have no rendezvous id (the run id is only a label)",
                    ("*", "*", "torchrun-static"): "the static backend has no rendezvous id to disagree on"}),
    Fault("two_jobs", "two jobs on one store port at once: by hand two 2-rank jobs (run ids e2e-job-a, "
                      "e2e-job-b), under torchrun two agents of 2 workers (--rdzv-id apart)",
          targets=("store",), launchers=("hand", "torchrun-static"), no_rank=True,
          accept={"before_connect": ("rdzv_collision",)},
          accept_launcher={"torchrun-static": {"before_connect": ("port_conflict",)}},
          why="by hand one job's rank 0 hosts the store, the other's cannot bind, and the other job's ranks "
              "join the first job's store: two jobs' processes in one rendezvous (rdzv_collision, no rank: the "
              "fault is the job's); under torchrun static the second agent cannot host the store (port_conflict, "
              "the agent: no rank)",
          left_out={("*", "*", "torchrun-c10d"): "under c10d the second agent joins the first one's store as a "
                                                 "client and the run ids keep the keys apart: both jobs complete "
                                                 "(e2e torchrun_c10d.rdzv_collision), nothing to diagnose"}),
)}

# Cells known to be wrong with today's analyzer (glob patterns over cell names), with why; a
# cell on this list that is wrong at high confidence is reported but does not fail the run.
STALL_SURVIVOR_BLAMED = ("under torchrun a worker stalls or freezes after init_process_group; the others time out "
                         "in gloo and exit 1, their lines in the agent's merged log carry no rank, so the first "
                         "of them to exit is taken for a rank that died on its own: rank_died names a survivor "
                         "(seen: stall.highest.first_collective.torchrun-c10d.torch2.13, seed 85130; issue 28's "
                         "first-collective work)")
KNOWN_WRONG = {
    # crash and sigkill after init_process_group: right since the rank that died first is found
    # from how each process ended (analyzer/model/endings.cpp); exit 0 after it since a rank
    # that left early is found the same way (Context::left_early), and a rank that stalls at the
    # first collective is named since issue 28 (the pairs' I/O: it never entered it). A rank that
    # froze (SIGSTOP) there is named as well, by its pairs that stayed open while it recorded
    # nothing (rule_straggler_collective.cpp): off this list.
    # Under torchrun, whose merged output puts no rank on the survivors' gloo timeouts, one of
    # them, exiting 1 with no line of its own, may be taken for a rank that died first.
    **{f"stall.{target}.first_collective.torchrun-c10d.*": STALL_SURVIVOR_BLAMED for target in ("worker", "highest")},
    "name_elsewhere_nohost.*": "store_unreachable with the right rank and both addresses, but the summary offers "
                               "'a firewall REJECT rule, a route' first, though the traces hold the two lookups "
                               "of the name with different results",
}

# The fixed core (ctest matrix.core): the cells of the six jobs that run here, and one of
# each other family, 2.13 by hand mostly.
CORE = (
    "crash.worker.before_connect.hand.torch2.13",          # issue 32 job 3
    "sigkill.worker.first_collective.hand.torch2.13",      # job 2
    "name_elsewhere.highest.before_connect.hand.torch2.13",  # job 1 (root)
    "crash.worker.before_connect.torchrun-c10d.torch2.13",  # job 4
    "stall.worker.first_collective.hand.torch2.13",
    "late.highest.before_connect.hand.torch1.13",
    "never_started.highest.before_connect.hand.torch2.13",
    "store_killed.store.store_traffic.hand.torch2.13",
    "port_held.store.before_connect.hand.torch2.13",
    "master_port.worker.before_connect.hand.torch2.13",
    "exit0.highest.before_connect.hand.torch1.13",
    "reject.node.before_connect.hand.torch2.13",
)


# ------------------------------------------------------------------------------------ cells
@dataclass
class Cell:
    fault: Fault
    target: str
    phase: str
    launcher: str
    torch: str

    @property
    def name(self):
        return f"{self.fault.name}.{self.target}.{self.phase}.{self.launcher}.torch{self.torch}"

    @property
    def torchrun(self):
        return self.launcher.startswith("torchrun")

    @property
    def ranks(self):
        """The faulty ranks; None for the torchrun agent."""
        if self.fault.no_rank or (self.target == "store" and self.torchrun):
            return None
        return TARGETS[self.target]

    def accepted(self):
        if self.phase in self.fault.accept_launcher.get(self.launcher, {}):
            return self.fault.accept_launcher[self.launcher][self.phase]
        if self.target == "store" and self.phase in self.fault.accept_store:
            return self.fault.accept_store[self.phase]
        return self.fault.accept.get(self.phase, ())

    def accepted_ranks(self):
        if self.ranks is None:
            return [None]
        if self.fault.name == "never_started" and self.target == "store":
            return [0, None]   # no trace of the store host: "the store never listened" names no process
        if self.fault.name == "drop":
            return list(self.ranks) + [0]   # see the fault's why
        return list(self.ranks)


def matches(pattern, value):
    return pattern == "*" or fnmatch.fnmatch(value, pattern)


def left_out_reason(fault, target, phase, launcher, torch, pythons, is_root):
    """Why the combination is not a runnable cell; None when it is one."""
    if fault.pending:
        return "not yet runnable: " + fault.pending
    if launcher.startswith("torchrun") and torch == "1.13":
        return "PyTorch 1.13's torchrun does not start under this Python 3.11: by hand only"
    for (t, p, la), why in fault.left_out.items():
        if matches(t, target) and matches(p, phase) and matches(la, launcher):
            return why
    if target not in fault.targets:
        return f"{fault.name} is a fault of target {'/'.join(fault.targets)} only"
    if phase not in fault.phases:
        return f"{fault.name} happens {' or '.join(fault.phases)} only"
    if launcher not in fault.launchers:
        return f"launcher {launcher} not written for this fault"
    if torch not in pythons:
        return f"no --python with PyTorch {torch} given"
    if (fault.root or target == "node") and not is_root:
        return "needs root (network or mount namespaces)"
    return None


def all_combinations():
    for fault in FAULTS.values():
        for target in TARGETS:
            for phase in PHASES:
                for launcher in LAUNCHERS:
                    for torch in TORCH:
                        yield fault, target, phase, launcher, torch


def enumerate_cells(pythons, is_root):
    """(runnable cells, {reason: [(fault, target, phase, launcher, torch)...]})."""
    cells, left = [], {}
    for fault, target, phase, launcher, torch in all_combinations():
        why = left_out_reason(fault, target, phase, launcher, torch, pythons, is_root)
        if why is None:
            cells.append(Cell(fault, target, phase, launcher, torch))
        else:
            left.setdefault(why, []).append((fault.name, target, phase, launcher, torch))
    return cells, left


def print_faults():
    """The faults as a Markdown table (tests/matrix/README.md holds a copy)."""
    log("| fault | targets; phases; launchers | accepted verdicts | why |")
    log("|---|---|---|---|")
    for f in FAULTS.values():
        if f.pending:
            log(f"| `{f.name}`: {f.what} | not yet runnable | | {f.pending} |")
            continue
        acc = "; ".join(f"{p}: " + ", ".join(f"`{a}`" for a in v) for p, v in f.accept.items())
        acc += "".join(f"; store host, {p}: " + ", ".join(f"`{a}`" for a in v) for p, v in f.accept_store.items())
        acc += "".join(f"; {la}, {p}: " + ", ".join(f"`{a}`" for a in v)
                       for la, by_phase in f.accept_launcher.items() for p, v in by_phase.items())
        where = f"{'/'.join(f.targets)}; {', '.join(f.phases)}; {', '.join(f.launchers)}" + (" (root)" if f.root else "")
        log(f"| `{f.name}`: {f.what} | {where} | {acc} | {f.why} |")


def print_list(cells, left):
    log(f"{len(cells)} runnable cells:")
    for c in cells:
        acc = ", ".join(c.accepted())
        ranks = ", ".join("none" if r is None else str(r) for r in c.accepted_ranks())
        log(f"  {c.name:58} accepts {acc}; rank {ranks}")
    total = sum(len(v) for v in left.values())
    log(f"\n{total} combinations left out (of {len(FAULTS)} faults x {len(TARGETS)} targets x {len(PHASES)} "
        f"phases x {len(LAUNCHERS)} launchers x {len(TORCH)} versions), by reason:")
    axes = (tuple(FAULTS), tuple(TARGETS), PHASES, LAUNCHERS, TORCH)
    for why, combos in sorted(left.items(), key=lambda kv: -len(kv[1])):
        parts = []
        for i, name in enumerate(("fault", "target", "phase", "launcher", "torch")):
            vals = sorted({c[i] for c in combos}, key=axes[i].index)
            if len(vals) < len(axes[i]):
                parts.append(f"{name} {'/'.join(vals)}")
        log(f"  {len(combos):4}  {why}\n        [{'; '.join(parts) or 'all'}]")


# ------------------------------------------------------------------------------------ running
class Matrix:
    """Runs cells: one Harness (launcher of rdzvtest.e2e) per PyTorch version."""

    def __init__(self, rdzvscope, pythons, work, keep):
        self.harness = {v: Harness(rdzvscope, py, work, keep) for v, py in pythons.items()}
        self.work, self.keep = work, keep
        self.current = None   # the run in progress, for the interrupt handler

    # -- launching ------------------------------------------------------------------------
    def rank_env(self, cell):
        """E2E_* for the target rank(s) (rank.py's knobs), and the job-wide mode."""
        f, point = cell.fault.name, POINT[cell.phase]
        per = {}
        if f == "late":
            per = {"E2E_DELAY_S": str(LATE_S)}
        elif f == "crash":
            per = {"E2E_FAULT": f"raise@{point}"}
        elif f == "exit0":
            per = {"E2E_FAULT": f"exit0@{point}"}
        elif f in ("sigkill", "store_killed"):
            per = {"E2E_FAULT": f"sigkill@{point}"}
        elif f == "sigstop":
            per = {"E2E_FAULT": f"sigstop@{point}"}
        elif f == "stall":
            per = {"E2E_FAULT": f"stall@{point}", "E2E_STALL_S": str(STALL_S)}
        job = {}
        if cell.phase == "store_traffic":
            job = {"E2E_MODE": "store_loop", "E2E_LOOP_S": "8"}
            if cell.target != "store":   # a dead worker is noticed at the next gloo barrier
                job["E2E_LOOP_BARRIER"] = "1"
        return per, job

    def run_cell(self, cell):
        """Runs the cell's job (retried once when the fault did not happen as designed or the
        port was taken), then analyzes it. Returns the cell's record."""
        h = self.harness[cell.torch]
        rec = {"cell": cell.name, "fault": cell.fault.name, "target": cell.target, "phase": cell.phase,
               "launcher": cell.launcher, "torch": cell.torch, "fault_description": cell.fault.what}
        t0 = time.monotonic()
        for attempt in (1, 2):
            spec = {"timeout": T_S, "rank": cell.ranks, "cls": None, "fault": cell.fault.what}
            run = Run(cell.name, self.work, attempt, spec)
            run.launch, run.port = cell.launcher, free_port()
            self.current = run
            log(f"[{cell.name}] attempt {attempt}: MASTER_PORT={run.port}, dir {run.dir}")
            try:
                errors = self.job(h, run, cell)
            finally:
                self.cleanup(h, run)
            errors += self.check_fault(run, cell)
            log(f"[{cell.name}] job took {time.monotonic() - run.t0:.1f}s\n{run.summary()}")
            for n in run.notes:
                log(f"[{cell.name}] {n}")
            if errors and attempt == 1:
                why = "port taken" if port_stolen("port_conflict" if cell.fault.name == "port_held"
                                                  else cell.name, run) else errors[0]
                log(f"[{cell.name}] the fault did not happen as designed ({why}); retrying once")
                note_retry(f"matrix.{cell.name}", why)
                continue
            break
        self.current = None
        rec["truth"] = self.truth(h, run, cell)
        rec["run"] = {"dir": run.dir, "seconds": round(time.monotonic() - t0, 1), "attempts": attempt,
                      "exits": {p.label: p.rc for p in run.procs}, "notes": run.notes}
        if errors:
            rec["score"] = {"result": "unscored", "why": "the fault did not happen as designed: " + "; ".join(errors)}
            return rec
        contradiction = None
        try:
            diag = h.analyze([run.trace_dir, "--log"] + run.logs())
        except (Fail, AnalyzerMissing, subprocess.TimeoutExpired) as e:
            if "contradicts its own facts" not in str(e):
                rec["score"] = {"result": "unscored", "why": f"analyze failed: {str(e)[:1000]}"}
                return rec
            # RDZVSCOPE_STRICT=1 (ctest) failed the analysis: read the verdict once more without it.
            contradiction = " ".join(str(e).split())[-600:]
            diag = analyze_lenient(h, [run.trace_dir, "--log"] + run.logs())
        rec["verdict"] = verdict_of(diag)
        rec["accepted"] = {"classes": list(cell.accepted()), "ranks": cell.accepted_ranks()}
        rec["score"] = score(cell, rec["truth"], diag)
        if contradiction:
            mark_contradiction(rec["score"], contradiction)
        return rec

    def job(self, h, run, cell):
        """Launches the cell's job with its fault, waits for it (bounded); returns errors of the
        setup."""
        if cell.torchrun:
            return self.torchrun_job(h, run, cell)
        f = cell.fault.name
        per, job = self.rank_env(cell)
        targets = cell.ranks or ()
        launch = {r: dict(env=dict(job, **(per if r in targets else {}))) for r in range(WORLD)}
        errors = []
        if f == "never_started":
            for r in targets:
                launch.pop(r)
        elif f == "master_port":
            other = other_port(run)
            run.notes.append(f"target's MASTER_PORT={other}, the others' {run.port}")
            for r in targets:
                launch[r]["port"] = other
        elif f == "world_size":
            for r in targets:
                launch[r]["world"] = WORLD + 1
        if f == "two_jobs":
            two_jobs_one_port(h, run)
            return []
        if f == "resolver_silent":
            with silent_resolver(h, run, targets) as (prefix, setup_errors, dns):
                for r in launch:
                    launch[r].update(master_addr=NAME, prefix=prefix(r))
                errors = self.start_and_settle(h, run, launch)
            return setup_errors + errors
        if f == "reset_mid_traffic" or (cell.target == "node" and f not in OWN_NETWORK):
            # Two nodes, no rule: the store's network namespace (node0, ranks 0 and 1 unless a
            # target) and the target's (node1).
            with rejecting_netns_pair(run, action=None) as (ins, inn):
                for r in launch:
                    odd = r in targets
                    # gloo takes the address of its host name, which neither node resolves (it
                    # fell back to loopback, and the pairs across the nodes were refused): the
                    # interface of each node's end of the veth pair instead.
                    launch[r]["env"]["GLOO_SOCKET_IFNAME"] = "rzn0" if odd else "rzs0"
                    launch[r].update(master_addr=STORE_ADDR,
                                     prefix=(inn if odd else ins) + node_view_prefix(None, NODE_NAMES[odd]))
                if f != "reset_mid_traffic":
                    return self.start_and_settle(h, run, launch)
                for r, kw in sorted(launch.items()):
                    h.launch(run, r, **kw)
                # Once every target's store loop runs, the store's node starts to reset their TCP
                # to the store port: their established connections get a RST at the next send.
                if h.wait_for_line([run.by_label(f"rank{r}") for r in targets], "e2e: store loop running", 40):
                    time.sleep(0.3)
                    sh(*ins, "iptables", "-I", "INPUT", "-p", "tcp", "-s", f"{REJECT_NET}.2", "--dport",
                       str(run.port), "-j", "REJECT", "--reject-with", "tcp-reset")
                    run.notes.append(f"{time.monotonic() - run.t0:.1f}s: the store's node resets TCP from "
                                     f"{REJECT_NET}.2 to port {run.port}")
                else:
                    errors.append("the targets' store loops did not start within 40 s")
                return errors + self.settle(h, run)
        if f == "name_unresolved":
            good = write_hosts_file(os.path.join(run.dir, "hosts.good"), [("127.0.0.1", NAME)])
            bad = write_hosts_file(os.path.join(run.dir, "hosts.bad"), [])
            for r in launch:
                launch[r].update(master_addr=NAME, prefix=node_view_prefix(bad if r in targets else good))
            return self.start_and_settle(h, run, launch)
        if f in ("name_elsewhere", "name_elsewhere_nohost", "master_addr", "reject", "drop"):
            # Two nodes: the store's network namespace (host name node0) and the target's
            # (node1), joined by a veth pair.
            action = {"reject": "REJECT", "drop": "DROP"}.get(f)
            with rejecting_netns_pair(run, action=action) as (ins, inn):
                if f == "name_elsewhere":   # SILENT: an address of the store's node that never answers
                    sh(*ins, "ip", "addr", "add", f"{SILENT}/24", "dev", "rzs0")
                    sh(*ins, "iptables", "-A", "INPUT", "-d", SILENT, "-p", "tcp", "--syn", "-j", "DROP")
                    sh(*inn, "sysctl", "-q", "-w", "net.ipv4.tcp_syn_retries=1")
                for r in launch:
                    odd = r in targets
                    ns, host = (inn, NODE_NAMES[1]) if odd else (ins, NODE_NAMES[0])
                    if f.startswith("name_elsewhere"):
                        stale = SILENT if f == "name_elsewhere" else NO_HOST
                        hosts = write_hosts_file(os.path.join(run.dir, f"hosts.rank{r}"),
                                                 [(stale if odd else STORE_ADDR, NAME)])
                        launch[r].update(master_addr=NAME, prefix=ns + node_view_prefix(hosts, host))
                    else:
                        addr = NO_HOST if (odd and f == "master_addr") else STORE_ADDR
                        launch[r].update(master_addr=addr, prefix=ns + node_view_prefix(None, host))
                errors = self.start_and_settle(h, run, launch)
            return errors
        if f == "store_late":
            late = launch.pop(0)
            clients = [h.launch(run, r, **kw) for r, kw in launch.items()]
            if not h.wait_for_line(clients, "e2e: torch imported", 30):
                errors.append("ranks 1-3 did not import torch within 30 s")
            # Launched once every client has given up (exited), not after a guess of T: 2.13's
            # clients go on retrying a refused connect past their timeout (joined at 9.5 s with
            # T=5 s), so a store host launched T+2 s late could still be in time.
            h.wait_for_exit(clients, BOUND_S / 2)
            if any(p.poll() is None for p in clients):
                errors.append(f"ranks 1-3 still ran {BOUND_S / 2:.0f} s after launch (no store)")
            h.launch(run, 0, **late)
            return errors + self.settle(h, run)
        if f == "port_held":
            holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            holder.bind(("0.0.0.0", run.port))
            holder.listen(64)
            try:
                return self.start_and_settle(h, run, launch)
            finally:
                holder.close()
        return self.start_and_settle(h, run, launch)

    def start_and_settle(self, h, run, launch):
        for r, kw in sorted(launch.items()):
            h.launch(run, r, **kw)
        return self.settle(h, run)

    def settle(self, h, run):
        """Waits for every process; once one has failed, what is left gets GRACE_S, then SIGTERM
        (then SIGKILL), as a scheduler ends a hung job; everything is gone by BOUND_S."""
        first_failure = None
        deadline = run.t0 + BOUND_S
        while time.monotonic() < deadline:
            live = [p for p in run.procs if p.poll() is None]
            if not live:
                return []
            if first_failure is None and any(p.rc not in (0, None) for p in run.procs):
                first_failure = time.monotonic()
            if first_failure is not None and time.monotonic() - first_failure > GRACE_S:
                run.notes.append("still running " + f"{GRACE_S} s after the first failure, SIGTERMed: "
                                 + ", ".join(p.label for p in live))
                h.terminate(live)
                return []
            reap_orphans(self.known_pids(run))
            time.sleep(0.1)
        live = [p for p in run.procs if p.poll() is None]
        run.notes.append(f"still running at the bound ({BOUND_S} s), SIGTERMed: " + ", ".join(p.label for p in live))
        h.terminate(live)
        return []

    def torchrun_job(self, h, run, cell):
        per, job = self.rank_env(cell)
        f = cell.fault.name
        rank_env = {r: dict(per) for r in (cell.ranks or ())}
        if f == "master_port":
            other = other_port(run)
            run.notes.append(f"target worker's MASTER_PORT={other}")
            for r in rank_env:
                rank_env[r]["MASTER_PORT"] = str(other)
        elif f == "world_size":
            for r in rank_env:
                rank_env[r]["WORLD_SIZE"] = str(WORLD + 1)
        errors = []
        if f == "rdzv_id":
            return three_agents_one_odd(h, run, rdzv_id=f"e2e-{run.name}-other")
        if f == "two_jobs":
            agents, errors = two_torchrun_jobs_one_port(h, run)
            rcs = sorted(p.rc for p in agents)
            run.notes.append(f"agents exited {[p.rc for p in agents]}")
            if not (rcs[0] == 0 and rcs[1] not in (0, None)):
                errors.append(f"the agents exited {rcs}, expected 0 and a failure (the second cannot bind)")
            return errors
        holder = None
        if f == "port_held":
            holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            holder.bind(("0.0.0.0", run.port))
            holder.listen(64)
        try:
            agent = launch_torchrun(h, run, rank_env=rank_env, env=job)
            if f == "store_killed":
                if not h.wait_for_line(run.views, "e2e: store loop running", 40):
                    errors.append("not every worker reached the store loop")
                time.sleep(0.5)
                try:
                    os.kill(agent.pid, signal.SIGKILL)
                    run.notes.append("SIGKILLed the agent (the store host)")
                except ProcessLookupError:
                    errors.append("the agent had exited before the SIGKILL")
                # the orphaned workers are ours (subreaper): give them GRACE_S to fail on the store
                deadline = time.monotonic() + GRACE_S
                while time.monotonic() < deadline and any("e2e: FAILED" not in v.text() and "e2e: done" not in v.text()
                                                          for v in run.views):
                    reap_orphans(self.known_pids(run))
                    time.sleep(0.1)
            else:
                # c10d's agent that cannot bind the port joins the holder as a client and hangs:
                # 3T, then the scheduler's SIGTERM
                bound = 3 * T_S if f == "port_held" else BOUND_S - (time.monotonic() - run.t0)
                h.wait_for_exit([agent], bound)
                if agent.poll() is None:
                    run.notes.append(f"the agent still ran after {bound:.0f} s: SIGTERMed")
            h.terminate([agent])
        finally:
            if holder:
                holder.close()
        return errors

    @staticmethod
    def known_pids(run):
        return {p.pid for p in run.procs}

    def cleanup(self, h, run):
        """Nothing of the run may outlive it: its processes (bounded wait, then SIGKILL), and
        every descendant (torchrun's workers, each in a session of its own, orphaned ranks)."""
        live = [p for p in run.procs if p.poll() is None]
        if live:
            h.terminate(live, grace_s=1)
        killed = kill_descendants(self.known_pids(run))
        if killed:
            run.notes.append(f"killed left-over processes {killed}")

    def interrupt_cleanup(self):
        run = self.current
        if run is not None:
            for p in run.procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        kill_descendants(self.known_pids(run) if run else ())

    # -- checking the fault and writing down the truth -----------------------------------------
    def check_fault(self, run, cell):
        """The fault happened as designed (empty list) or what did not."""
        errors = []
        f = cell.fault.name
        procs = run.procs
        failed = any(p.rc not in (0, None) or p.killed_by_bound for p in procs)
        if not failed:
            errors.append("every process exited 0: the job did not fail")
        label = lambda r: f"rank{r}"   # noqa: E731
        targets = cell.ranks or ()
        action = {"crash": "raise", "exit0": "exit0", "sigkill": "sigkill", "store_killed": "sigkill",
                  "sigstop": "sigstop", "stall": "stall"}.get(f)
        for r in targets:
            text = run.by_label(label(r)).text() if f != "never_started" else ""
            if action:
                want = f"e2e: fault {action} at {POINT[cell.phase]}"
                if want not in text:
                    errors.append(f"rank {r} never printed `{want}`")
            if f == "late" and f"sleeping {LATE_S}s" not in text:
                errors.append(f"rank {r} did not sleep {LATE_S} s")
            if f == "reset_mid_traffic" and "e2e: FAILED" not in text:
                errors.append(f"rank {r} did not fail after the reset")
            if f in ("name_unresolved", "resolver_silent") and "gai error" not in text:
                errors.append(f"rank {r}'s log has no `gai error`")
        if f == "store_killed" and cell.torchrun and run.procs[0].rc != -signal.SIGKILL:
            errors.append(f"the agent exited {run.procs[0].rc}, not by SIGKILL")
        if f == "port_held" and not cell.torchrun and not any(
                m in run.by_label("rank0").text() for m in ("EADDRINUSE", "Address already in use")):
            errors.append("rank 0 did not report the port in use")
        if f == "never_started":
            errors += [f"rank {r} was started" for r in targets if any(p.rank == r for p in procs)]
        return errors

    def truth(self, h, run, cell):
        joined = [v.rank for v in (run.views or run.procs) if "e2e: joined" in v.text()]
        return {"fault": cell.fault.name, "target": cell.target,
                "ranks": None if cell.ranks is None else list(cell.ranks),
                "agent": cell.ranks is None, "node": "its own network namespace" if cell.target == "node" else None,
                "phase": cell.phase, "launcher": cell.launcher, "torch": h.torch_version,
                "dead": cell.fault.dead,
                "rendezvous_completed": bool(joined), "joined_ranks": sorted(set(joined))}


# ------------------------------------------------------------------------------------ scoring
def verdict_of(diag):
    v = diag.get("verdict") or {}
    keep = ("class", "cause", "initiating_rank", "initiating_host", "confidence", "summary", "next_step")
    out = {k: v.get(k) for k in keep}
    out["discriminators"] = {k: (diag.get("discriminators") or {}).get(k)
                             for k in ("rendezvous_completed", "pytorch", "which_ranks_failed")}
    return out


LATE_WORDS = re.compile(r"\blate\b|still missing|data loading|checkpoint", re.I)
DEATH_WORDS = re.compile(r"exit(?:ed)?\s+(?:with\s+)?(?:status\s+|code\s+)?-?\d|SIGKILL|SIGTERM|signal\s*\d|"
                         r"\bkilled\b|\bdied\b|\bdead\b|crash|exception|traceback", re.I)
RACE_WORDS = re.compile(r"listened [\d.]+ s after the first client", re.I)


def evidence_text(diag):
    return "\n".join(e for f in diag.get("findings") or [] for e in (f.get("evidence") or []))


def word_checks(cell, truth, diag):
    """The words the issue names, checked against the truth: a list of failures."""
    v = diag.get("verdict") or {}
    summary, next_step = v.get("summary") or "", v.get("next_step") or ""
    fails = []
    if truth["dead"]:
        # A dead rank is not a late rank: the user must read the crash, not profile a loader.
        m = LATE_WORDS.search(summary + "\n" + next_step)
        if m:
            fails.append(f"calls the dead rank late ({m.group(0)!r})")
        if not DEATH_WORDS.search(summary):
            fails.append("the summary does not say that the rank died (exit status, signal)")
    if cell.fault.name.startswith("name_elsewhere"):
        if "firewall" in summary.lower():
            fails.append("calls a name resolving elsewhere a firewall")
        text = summary + "\n" + next_step + "\n" + evidence_text(diag)
        stale = SILENT if cell.fault.name == "name_elsewhere" else NO_HOST
        missing = [a for a in (STORE_ADDR, stale) if a not in text]
        if missing:
            fails.append(f"does not name both addresses (missing {', '.join(missing)})")
    # No start-up race on a job whose rendezvous completed (the truth, or the verdict's own facts).
    completed = truth["rendezvous_completed"] or bool((diag.get("discriminators") or {}).get("rendezvous_completed"))
    if completed and (v.get("class") == "store_not_ready" or RACE_WORDS.search(summary)):
        fails.append("claims a start-up race (store_not_ready) on a job whose rendezvous completed")
    # No bug of a PyTorch release the job did not run.
    major, minor = (int(x) for x in truth["torch"].split(".")[:2])
    if (major, minor) > (2, 7) and re.search(r"2\.7 (and|or) older", summary + next_step + evidence_text(diag)):
        fails.append(f"blames a bug of PyTorch 2.7 and older on a job that ran {truth['torch']}")
    return fails


def known_wrong_reason(cell):
    return next((why for pat, why in KNOWN_WRONG.items() if fnmatch.fnmatch(cell.name, pat)), None)


def analyze_lenient(h, args):
    """h.analyze(args) without RDZVSCOPE_STRICT: the verdict even when it contradicts itself."""
    saved = os.environ.pop("RDZVSCOPE_STRICT", None)
    try:
        return h.analyze(args)
    finally:
        if saved is not None:
            os.environ["RDZVSCOPE_STRICT"] = saved


def mark_contradiction(s, message):
    """A verdict that contradicts its own facts (analyzer/rules/consistency.h; analyze exits 70
    under RDZVSCOPE_STRICT=1, which ctest sets): wrong, and counted as wrong at high confidence,
    whatever confidence it claimed."""
    s["words"] = list(s.get("words") or []) + ["the verdict contradicts its own facts: " + message]
    s["result"] = "wrong"
    s["wrong_high"] = True


def score(cell, truth, diag):
    v = diag.get("verdict") or {}
    cls, cause, rank, conf = v.get("class"), v.get("cause"), v.get("initiating_rank"), v.get("confidence")
    class_ok = any(a == cls or a == f"{cls}/{cause}" for a in cell.accepted())
    rank_ok = rank in cell.accepted_ranks()
    words = word_checks(cell, truth, diag)
    if cls == "unknown":
        result = "unknown"
    elif class_ok and rank_ok and not words:
        result = "right"
    else:
        result = "wrong"
    known = known_wrong_reason(cell)
    return {"result": result, "class_ok": class_ok, "rank_ok": rank_ok, "words": words,
            "wrong_high": result == "wrong" and conf == "high", "known_wrong": known}


# ------------------------------------------------------------------------------------ output
COLUMNS = ("cells", "right", "wrong", "words", "unknown", "wrong-high", "unscored")


def table(records):
    """Rows by fault x phase: cells, right, wrong (words: of them, class and rank right but words
    not), unknown, wrong-high, unscored; and a total row."""
    rows = {}
    for r in records:
        key = (r["fault"], r["phase"])
        row = rows.setdefault(key, dict.fromkeys(COLUMNS, 0))
        s = r["score"]
        row["cells"] += 1
        res = s["result"]
        row[res] += 1
        if res == "wrong" and s.get("class_ok") and s.get("rank_ok"):
            row["words"] += 1
        if s.get("wrong_high"):
            row["wrong-high"] += 1
    order = list(FAULTS)
    keys = sorted(rows, key=lambda k: (order.index(k[0]), PHASES.index(k[1])))
    total = {c: sum(rows[k][c] for k in keys) for c in COLUMNS}
    return [(f"{k[0]} / {k[1]}", rows[k]) for k in keys], total


def format_table(records):
    rows, total = table(records)
    width = max([len(n) for n, _ in rows] + [len("fault / phase"), len("total")])
    lines = ["| " + "fault / phase".ljust(width) + " | " + " | ".join(COLUMNS) + " |",
             "|" + "-" * (width + 2) + "|" + "|".join("-" * (len(c) + 2) for c in COLUMNS) + "|"]
    for name, row in rows + [("total", total)]:
        lines.append("| " + name.ljust(width) + " | " + " | ".join(str(row[c]).rjust(len(c)) for c in COLUMNS) + " |")
    return "\n".join(lines)


def first_sentence(text):
    return re.split(r"(?<=[^.\d][.!?])\s", text or "", maxsplit=1)[0]


def describe(rec):
    s = rec["score"]
    if s["result"] == "unscored":
        return f"{rec['cell']}: UNSCORED ({s['why'][:300]})"
    v = rec["verdict"]
    first = first_sentence(v.get("summary"))
    tag = s["result"].upper() + (" (high)" if s["wrong_high"] else "")
    extra = []
    if not s["class_ok"]:
        extra.append(f"class not in {rec['accepted']['classes']}")
    if not s["rank_ok"]:
        extra.append(f"rank not in {rec['accepted']['ranks']}")
    extra += s["words"]
    known = f" [known wrong: {s['known_wrong']}]" if s["known_wrong"] and s["result"] == "wrong" else ""
    return (f"{rec['cell']}: {tag}: {v.get('class')}{'/' + v['cause'] if v.get('cause') else ''} "
            f"rank {v.get('initiating_rank')} {v.get('confidence')}: {first[:400]}"
            + (f" -- {'; '.join(extra)}" if extra else "") + known)


# ------------------------------------------------------------------------------------ main
def default_pythons():
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install-deps.sh"), "--pythons"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return [x for x in p.stdout.strip().split(";") if x]


def pythons_by_version(paths):
    from rdzvtest.launch import torch_version
    out = {}
    for py in paths:
        if not os.access(py, os.X_OK):
            log(f"note: {py} is not an executable interpreter: its PyTorch version's cells are left out")
            continue
        v = ".".join(torch_version(py).split("+")[0].split(".")[:2])
        if v in TORCH:
            out.setdefault(v, py)
        else:
            log(f"note: {py} has PyTorch {v}, which the matrix does not cover ({', '.join(TORCH)})")
    return out


KEEP_RUNS = 3   # of the earlier runs' directories under --work, the newest are kept (ctest reruns)


def prune_old_runs(parent, keep):
    """Removes all but the `keep` newest matrix-* directories under parent (a cell not scored
    right keeps its traces and logs, some MB each)."""
    runs = sorted((d for d in os.listdir(parent) if d.startswith("matrix-")
                   and os.path.isdir(os.path.join(parent, d))),
                  key=lambda d: os.path.getmtime(os.path.join(parent, d)))
    for d in runs[:max(0, len(runs) - keep)]:
        shutil.rmtree(os.path.join(parent, d), ignore_errors=True)


def select(args, cells):
    by_name = {c.name: c for c in cells}
    if args.core:
        chosen = [by_name[n] for n in CORE if n in by_name]
        for n in CORE:
            if n not in by_name:
                log(f"note: core cell {n} is not runnable here (see --list)")
        return chosen
    if args.cells:
        chosen = []
        for pat in args.cells:
            got = [c for c in cells if fnmatch.fnmatch(c.name, pat)]
            if not got:
                raise SystemExit(f"no runnable cell matches {pat!r} (see --list)")
            chosen += [c for c in got if c not in chosen]
        return chosen
    rng = random.Random(args.seed)
    return rng.sample(cells, min(args.sample, len(cells)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="print the runnable cells and the left-out combinations")
    what.add_argument("--faults", action="store_true", help="print the faults and their accepted verdicts (Markdown)")
    what.add_argument("--core", action="store_true", help="run the fixed core of cells")
    what.add_argument("--sample", type=int, metavar="N", help="run N cells drawn at random")
    what.add_argument("--cells", nargs="+", metavar="NAME", help="run these cells (names or globs)")
    ap.add_argument("--seed", type=int, help="the seed of --sample (default: drawn, and printed)")
    ap.add_argument("--rdzvscope", default=os.path.join(ROOT, "build", "bin", "rdzvscope"))
    ap.add_argument("--python", action="append", metavar="PY",
                    help="an interpreter with PyTorch 2.13 or 1.13 (repeat; default: what "
                         "scripts/install-deps.sh --pythons prints)")
    ap.add_argument("--json", metavar="FILE", help="write every cell's truth, verdict and score here")
    ap.add_argument("--work", help="scratch directory (a new one under it per run; of the earlier runs' "
                                   f"there, the {KEEP_RUNS} newest are kept)")
    ap.add_argument("--keep", action="store_true", help="keep every cell's traces and logs (default: "
                                                         "only those not scored right)")
    args = ap.parse_args()

    is_root = os.geteuid() == 0 and all(shutil.which(t) for t in ("ip", "iptables", "unshare"))
    pythons = pythons_by_version(args.python or default_pythons())
    cells, left = enumerate_cells(pythons, is_root)
    if args.list:
        print_list(cells, left)
        return 0
    if args.faults:
        print_faults()
        return 0
    if args.sample is not None and args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    if not os.access(args.rdzvscope, os.X_OK):
        log(f"FAIL: rdzvscope CLI not found: {args.rdzvscope}")
        return 2
    chosen = select(args, cells)
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        prune_old_runs(args.work, KEEP_RUNS)
    work = tempfile.mkdtemp(prefix="matrix-", dir=args.work)
    header = (f"matrix: {len(chosen)} of {len(cells)} runnable cells"
              + (f", --sample {args.sample} --seed {args.seed}" if args.sample is not None else "")
              + f"; PyTorch {', '.join(f'{v} ({p})' for v, p in pythons.items())}; work {work}")
    log(header)

    become_subreaper()
    m = Matrix(os.path.abspath(args.rdzvscope), pythons, work, args.keep)

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)

    records, started = [], time.monotonic()
    interrupted = False
    try:
        for i, cell in enumerate(chosen, 1):
            log(f"\n=== [{i}/{len(chosen)}] {cell.name}")
            rec = m.run_cell(cell)
            records.append(rec)
            log("=== " + describe(rec))
            if rec["score"]["result"] == "right" and not args.keep:
                shutil.rmtree(rec["run"]["dir"], ignore_errors=True)
    except KeyboardInterrupt as e:
        interrupted = True
        log(f"\ninterrupted ({e}): cleaning up")
    finally:
        m.interrupt_cleanup()

    log(f"\n{len(records)} cells in {time.monotonic() - started:.0f} s"
        + (f" (--seed {args.seed})" if args.seed is not None else ""))
    log(format_table(records))
    for rec in records:
        if rec["score"]["result"] != "right":
            log("  " + describe(rec))
    unexpected = [r["cell"] for r in records if r["score"].get("wrong_high") and not r["score"].get("known_wrong")]
    scored = [r for r in records if r["score"]["result"] != "unscored"]
    if args.json:
        rows, total = table(records)
        with open(args.json, "w") as f:
            json.dump({"schema": "rdzvscope.matrix/1", "date": datetime.date.today().isoformat(),
                       "seed": args.seed, "sample": args.sample, "core": args.core,
                       "rdzvscope": os.path.abspath(args.rdzvscope), "pythons": pythons,
                       "runnable_cells": len(cells), "interrupted": interrupted,
                       "table": dict({name: row for name, row in rows}, total=total),
                       "unexpected_wrong_high": unexpected, "cells": records}, f, indent=1)
        log(f"JSON: {args.json}")
    if interrupted:
        return 2
    if unexpected:
        log(f"FAIL: wrong at high confidence and not on KNOWN_WRONG: {', '.join(unexpected)}")
        return 1
    if chosen and not scored:
        log("FAIL: no cell could be scored")
        return 2
    log("matrix: no unexpected wrong-at-high-confidence cell")
    return 0


if __name__ == "__main__":
    sys.exit(main())
