"""Rehearsals: `rdzvscope run --inject FAULT` in a real 4-rank gloo job (tests/e2e/rank.py,
ranks started by hand), each the injected twin of a real scenario of rdzvtest.e2e. Every
rank runs under the same `rdzvscope run --inject ...` (as an operator would start the whole
job with one command line; rank=R picks the rank). tests/inject/inject_e2e.py runs one and
asserts that `rdzvscope analyze` finds the twin's class and initiating rank AND says that
the failure was injected.

    INJECTIONS[name] = dict(twin=<scenario of rdzvtest.e2e.SCENARIOS>, inject=[FAULT, ...],
                            run=<function(h, run) -> errors>, injected_ranks=[...],
                            [twin_suite="cluster" | "torchrun"], [launch="torchrun-c10d"],
                            [torch_major=2])

twin_suite: where the twin's expectations are, when not in rdzvtest.e2e.SCENARIOS: "cluster"
(tests/cluster/cluster_e2e.py SCENARIOS; the initiating rank is the victim's, as there) or
"torchrun" (rdzvtest.e2e.TORCHRUN_SCENARIOS, the job under torchrun: launch "torchrun-c10d").
"""
import importlib.util
import os
import time

from rdzvtest.checks import Fail, expect, nonzero
from rdzvtest.e2e import (HAND_2X, SCENARIOS, STRAGGLER_DELAY_S, TORCHRUN_C10D, TORCHRUN_SCENARIOS,
                          WORLD, Run, expect_any_text, expect_exit, expect_text,
                          expect_traces, launch_torchrun, said)
from rdzvtest.ports import free_port
from rdzvtest.traces import events, port_of, rank_of, wall_ns
from rdzvtest.retries import note_retry


def injected(files, rank=None):
    """(file, event) of every record marked injected."""
    return [(f, ev) for f, ev in events(files, rank=rank) if "injected" in (ev.get("flags") or [])]


def launch_all(h, run, ranks=range(WORLD)):
    args = []
    for fault in run.inject:
        args += ["--inject", fault]
    return [h.launch(run, r, run_args=args) for r in ranks]


def expect_injected_only_in(files, ranks, errors):
    have = sorted({rank_of(f) for f, _ in injected(files)})
    expect(have == sorted(ranks), f"injected records in ranks {have}, expected {sorted(ranks)}", errors)


def in_resolve_fail(h, run):
    """Twin name_resolution_one: rank 3's lookups of the store host fail (EAI_NONAME)."""
    launch_all(h, run)
    h.wait_all(run)
    errors = []
    expect_exit(run, "rank3", 1, errors)
    expect_text(run, "rank3", ["gai error: -2", "The client socket has timed out"], errors)
    for r in (0, 1, 2):
        expect_exit(run, f"rank{r}", 1, errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    bad = [(f, ev) for f, ev in injected(files) if ev.get("kind") == "resolve"]
    expect(bad and all(ev.get("ret_name", ev.get("ret")) in ("EAI_NONAME", -2) for _, ev in bad),
           f"rank 3's injected lookups: {[ev.get('ret') for _, ev in bad]}", errors)
    expect_injected_only_in(files, [3], errors)
    return errors


def in_late(h, run):
    """Twin straggler: rank 2's first store connect is held back 9 s (T=3)."""
    launch_all(h, run)
    h.wait_all(run)
    errors = []
    for r in (0, 1, 3):
        expect_exit(run, f"rank{r}", 1, errors)
        expect_any_text(run, f"rank{r}", said(h, "store_wait_timeout"), errors)
    expect_exit(run, "rank2", nonzero, errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    first = {}
    for f, ev in events(files, "connect"):
        if "store" in (ev.get("flags") or []):
            first.setdefault(rank_of(f), (wall_ns(f, ev), "injected" in (ev.get("flags") or [])))
    expect(first.get(2, (0, False))[1], "rank 2's first store connect is not marked injected", errors)
    if len(first) == WORLD:
        others = max(v[0] for k, v in first.items() if k != 2)
        expect(first[2][0] - others > 3e9, f"rank 2's first store connect is only "
               f"{(first[2][0] - others) / 1e9:.1f}s after the others'", errors)
    expect_injected_only_in(files, [2], errors)
    return errors


def in_connect_timeout(h, run):
    """Twin connect_timeout: every store connect blocks, then fails ETIMEDOUT (T=4)."""
    launch_all(h, run)
    h.wait_all(run)
    errors = []
    for r in range(WORLD):
        expect_exit(run, f"rank{r}", 1, errors)
        expect_any_text(run, f"rank{r}", said(h, "connect_timed_out", run)
                        + said(h, "client_connect_timeout", run), errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    expect(any(port_of(ev.get("local")) == run.port and not ev.get("errno")
               for _, ev in events(files, "listen", rank=0)),
           "rank 0's trace shows no listen on the store port", errors)
    for r in range(WORLD):
        n = sum(1 for _, ev in injected(files, rank=r)
                if ev.get("errno_name") == "ETIMEDOUT" and port_of(ev.get("peer")) == run.port)
        expect(n >= 1, f"rank {r}: no injected ETIMEDOUT store connect in its trace", errors)
    expect_injected_only_in(files, range(WORLD), errors)
    return errors


def in_port_taken(h, run):
    """Twin port_conflict: rank 0's bind of the store port fails EADDRINUSE."""
    launch_all(h, run)
    h.wait_all(run)
    errors = []
    expect_exit(run, "rank0", 1, errors)
    expect_any_text(run, "rank0", said(h, "bind_in_use", run) + said(h, "port_in_use", run), errors)
    for r in (1, 2, 3):
        expect_exit(run, f"rank{r}", nonzero, errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    binds = [ev for _, ev in injected(files, rank=0)
             if ev.get("kind") == "bind" and ev.get("errno_name") == "EADDRINUSE"
             and port_of(ev.get("local")) == run.port]
    expect(bool(binds), "rank 0's trace shows no injected EADDRINUSE bind on the store port", errors)
    expect_injected_only_in(files, [0], errors)
    return errors


def in_connect_refused(h, run):
    """Twin store_unreachable: rank 2's store connects are refused (ECONNREFUSED) while the
    store listens and the others join it."""
    launch_all(h, run)
    h.wait_all(run)
    errors = []
    expect_exit(run, "rank2", 1, errors)
    expect_any_text(run, "rank2", said(h, "client_connect_timeout", run), errors)
    for r in (0, 1, 3):
        expect_exit(run, f"rank{r}", 1, errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    n = sum(1 for _, ev in injected(files, rank=2)
            if ev.get("errno_name") == "ECONNREFUSED" and port_of(ev.get("peer")) == run.port)
    expect(n >= 2, f"rank 2: {n} injected refused store connects in its trace", errors)
    expect_injected_only_in(files, [2], errors)
    return errors


# store-reset: the victim and the point of its reset. After init every rank loops on the store
# (set/get, as in the twin); the point lies past the rendezvous' own traffic (measured: at most
# a few KiB on 1.13 and 2.13) and well inside the victim's loop.
RESET_VICTIM = 2
RESET_BYTES = 20000


def in_store_reset(h, run):
    """Twin broken_pipe_moving (tests/cluster, one run of it): after init every rank loops on
    store set/get; rank 2's store connection is reset (RST both ways) once it carried
    RESET_BYTES: rank 2 fails with `Connection reset by peer` (or `Broken pipe`) while the
    store (rank 0, whose loop is longer) stays up, and the other ranks finish."""
    args = []
    for fault in run.inject:
        args += ["--inject", fault]
    for r in range(WORLD):
        env = {"E2E_MODE": "store_loop", "E2E_LOOP_S": "9" if r == 0 else "6"}
        h.launch(run, r, env=env, run_args=args)
    h.wait_all(run)
    errors = []
    v = RESET_VICTIM
    expect_exit(run, f"rank{v}", 1, errors)
    expect_any_text(run, f"rank{v}", ["Connection reset by peer", "Broken pipe", "ECONNRESET"], errors)
    expect_text(run, f"rank{v}", "e2e: store loop running", errors)
    for r in range(WORLD):
        if r != v:
            expect_exit(run, f"rank{r}", 0, errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    resets = [ev for _, ev in injected(files, rank=v)]
    expect(len(resets) == 1 and resets[0].get("errno_name") == "ECONNRESET"
           and port_of(resets[0].get("peer")) == run.port,
           f"rank {v}: want one injected ECONNRESET on its store connection, got "
           f"{[(ev.get('kind'), ev.get('errno_name')) for ev in resets]}", errors)
    # The store's end saw the reset as a real one (not made up there): an ECONNRESET read.
    seen = [ev for _, ev in events(files, rank=0) if ev.get("errno_name") == "ECONNRESET"
            and "injected" not in (ev.get("flags") or [])]
    expect(bool(seen), "rank 0 (the store) saw no reset on its end of the connection", errors)
    expect_injected_only_in(files, [v], errors)
    return errors


def launch_torchrun_injected(h, run):
    """torchrun (c10d, one agent) under `rdzvscope run --inject FAULT...` (run.inject): the
    faults are given to the agent's `rdzvscope run`, which has no RANK; the workers it starts
    inherit them. Returns the agent."""
    args = []
    for fault in run.inject:
        args += ["--inject", fault]
    launch = h.launch
    h.launch = lambda *a, **kw: launch(*a, **dict(kw, run_args=args))
    try:
        return launch_torchrun(h, run)
    finally:
        h.launch = launch


def in_torchrun_resolve_fail(h, run):
    """Under torchrun (c10d, one agent, 4 workers), twin name_resolution_one of the torchrun
    scenarios: worker 3's lookups of its MASTER_ADDR fail (EAI_NONAME). The fault is started
    with the agent (`rdzvscope run --inject resolve-fail:rank=3 -- torchrun ...`), which has no
    RANK; worker 3 alone, which torchrun gives RANK=3, must get it."""
    agent = launch_torchrun_injected(h, run)
    h.wait_all(run)
    errors = []
    expect_exit(run, agent.label, 1, errors)
    expect("gai error: -2" in run.by_label("rank3").text() or "gai error: -2" in agent.text(),
           "no `gai error: -2` from worker 3", errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    bad = {rank_of(f) for f, ev in injected(files) if ev.get("kind") == "resolve"}
    expect(bad == {3}, f"injected failed lookups in ranks {sorted(bad)}, expected [3]", errors)
    agents = [f for f in files if rank_of(f) is None]
    expect(bool(agents), "no trace of the agent", errors)
    expect(not injected(agents), "the agent's trace has injected records", errors)
    expect_injected_only_in(files, [3], errors)
    return errors


def in_torchrun_late(h, run):
    """Under torchrun (c10d, one agent, 4 workers), twin straggler of the torchrun scenarios:
    worker 2's first store connect is held back 9 s (T=3): the others time out at the init
    barrier and the agent stops worker 2 while it is still held back."""
    agent = launch_torchrun_injected(h, run)
    h.wait_all(run)
    errors = []
    expect_exit(run, agent.label, 1, errors)
    expect(any(m in agent.text() for m in said(h, "store_wait_timeout")),
           "no worker timed out at the init barrier", errors)
    files = h.dump(run)
    expect_traces(files, range(WORLD), errors)
    expect_injected_only_in(files, [2], errors)
    return errors


def cluster_spec(name):
    """The expectations of tests/cluster/cluster_e2e.py's scenario `name`."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cluster",
                        "cluster_e2e.py")
    spec = importlib.util.spec_from_file_location("cluster_e2e_for_inject", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return dict(mod.SCENARIOS[name])


INJECTIONS = {
    "resolve_fail": dict(twin="name_resolution_one", inject=["resolve-fail:rank=3"],
                         run=in_resolve_fail, injected_ranks=[3]),
    "late": dict(twin="straggler", inject=[f"late:rank=2:{STRAGGLER_DELAY_S}s"],
                 run=in_late, injected_ranks=[2]),
    "connect_timeout": dict(twin="connect_timeout", inject=["connect-timeout"],
                            run=in_connect_timeout, injected_ranks=[0, 1, 2, 3]),
    "port_taken": dict(twin="port_conflict", inject=["port-taken"], run=in_port_taken,
                       injected_ranks=[0]),
    "connect_refused": dict(twin="store_unreachable", inject=["connect-refused:rank=2"],
                            run=in_connect_refused, injected_ranks=[2]),
    # A reset of one rank's store connection while the store stays up is broken_pipe with the
    # cause tcpstore_bug_suspected, started by that rank: the cluster's broken_pipe_moving,
    # whose proxy resets the victim's connection the same way. (e2e's transient_recv is a FIN
    # during bootstrap, a 0-byte read; store_killed's broken_pipe is peer_died: the store
    # process died. Neither is a reset with the store alive.)
    "store_reset": dict(twin="broken_pipe_moving", twin_suite="cluster",
                        inject=[f"store-reset:rank={RESET_VICTIM}:bytes={RESET_BYTES}"],
                        run=in_store_reset, injected_ranks=[RESET_VICTIM]),
    "torchrun_late": dict(twin="straggler", twin_suite="torchrun",
                          inject=[f"late:rank=2:{STRAGGLER_DELAY_S}s"], run=in_torchrun_late,
                          injected_ranks=[2], torch_major=2),
    "torchrun_resolve_fail": dict(twin="name_resolution_one", twin_suite="torchrun",
                                  inject=["resolve-fail:rank=3"], run=in_torchrun_resolve_fail,
                                  injected_ranks=[3], torch_major=2),
}


def run_injection(h, name):
    """Runs injection `name` (retried once when its port was stolen). Returns (run, errors)."""
    spec_in = INJECTIONS[name]
    suite = spec_in.get("twin_suite", "e2e")
    if spec_in.get("torch_major", h.torch_major) != h.torch_major:
        raise Fail(f"injection {name} runs on PyTorch {spec_in['torch_major']}.x only")
    if suite == "cluster":
        spec = cluster_spec(spec_in["twin"])
        spec.setdefault("rank", spec_in["injected_ranks"][0])   # the victim, as there
        spec.setdefault("timeout", 5)
    elif suite == "torchrun":
        spec = dict(TORCHRUN_SCENARIOS[spec_in["twin"]])
        spec.update(TORCHRUN_C10D.get(spec_in["twin"], {}))
    elif spec_in["twin"] in SCENARIOS:
        spec = dict(SCENARIOS[spec_in["twin"]])
        if h.torch_major >= 2:
            spec.update(HAND_2X.get(spec_in["twin"], {}))
    else:
        raise Fail(f"the real twin {spec_in['twin']!r} is not among the e2e scenarios")
    for attempt in (1, 2):
        run = Run(f"inject_{name}", h.work, attempt, spec)
        run.launch = "torchrun-c10d" if suite == "torchrun" else "hand"
        run.port = free_port()
        run.inject = spec_in["inject"]
        try:
            errors = spec_in["run"](h, run)
        finally:
            h.wait_all(run)
        stolen = name != "port_taken" and any(
            m in run.all_text() for m in ("Address already in use", "EADDRINUSE"))
        if errors and attempt == 1 and stolen:
            note_retry(f"inject.{name}", f"port {run.port} taken meanwhile")
            continue
        return run, errors
