"""Rehearsals: `rdzvscope run --inject FAULT` in a real 4-rank gloo job (tests/e2e/rank.py,
ranks started by hand), each the injected twin of a real scenario of rdzvtest.e2e. Every
rank runs under the same `rdzvscope run --inject ...` (as an operator would start the whole
job with one command line; rank=R picks the rank). tests/inject/inject_e2e.py runs one and
asserts that `rdzvscope analyze` finds the twin's class and initiating rank AND says that
the failure was injected.

    INJECTIONS[name] = dict(twin=<scenario of rdzvtest.e2e.SCENARIOS>, inject=[FAULT, ...],
                            run=<function(h, run) -> errors>, injected_ranks=[...])
"""
import os
import time

from rdzvtest.checks import Fail, expect, nonzero
from rdzvtest.e2e import (HAND_2X, SCENARIOS, STRAGGLER_DELAY_S, WORLD, Run, expect_any_text,
                          expect_exit, expect_text, expect_traces, said)
from rdzvtest.ports import free_port
from rdzvtest.traces import events, port_of, rank_of, wall_ns


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
}


def run_injection(h, name):
    """Runs injection `name` (retried once when its port was stolen). Returns (run, errors)."""
    spec_in = INJECTIONS[name]
    if spec_in["twin"] not in SCENARIOS:
        raise Fail(f"the real twin {spec_in['twin']!r} is not among the e2e scenarios")
    spec = dict(SCENARIOS[spec_in["twin"]])
    if h.torch_major >= 2:
        spec.update(HAND_2X.get(spec_in["twin"], {}))
    for attempt in (1, 2):
        run = Run(f"inject_{name}", h.work, attempt, spec)
        run.launch = "hand"
        run.port = free_port()
        run.inject = spec_in["inject"]
        try:
            errors = spec_in["run"](h, run)
        finally:
            h.wait_all(run)
        stolen = name != "port_taken" and any(
            m in run.all_text() for m in ("Address already in use", "EADDRINUSE"))
        if errors and attempt == 1 and stolen:
            continue
        return run, errors
