#!/usr/bin/env python3
"""End-to-end scenarios: real PyTorch rendezvous failures, traced and diagnosed.

Each scenario launches a real 4-rank gloo job under the interpreter given by --python (any
PyTorch from 1.13 to 2.x; the messages each version prints are in MESSAGES), either with
every rank started by hand (--launch hand: RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
MASTER_PORT, static rendezvous over TCPStore, each rank through `rdzvscope run --out TRACEDIR
--`, its stdout+stderr in LOGDIR/rank{N}.log), or under torchrun (--launch torchrun-c10d or
torchrun-static, PyTorch 2.x: one agent per node under `rdzvscope run`, LOGDIR/agent.log holds
every worker's output). The rank script is tests/e2e/rank.py. It injects one real fault,
waits for every process (bounded), then

  1. checks that the fault REALLY happened: exit codes, the error lines each rank must have
     printed, the trace files that must exist (and, where the scenario needs it, what they
     show, through `rdzvscope dump`);
  2. runs `rdzvscope analyze TRACEDIR --log LOGDIR/*.log --format json` and asserts
     verdict.class, verdict.initiating_rank (and verdict.cause where the table names one),
     the discriminators the table names, and the words it names (its `words`: what the
     summary, the evidence and the next step must say, and what none of them may say);
  3. runs `rdzvscope analyze --log LOGDIR/*.log --format json` (log only, no traces) and
     asserts the class, for the scenarios whose logs are distinctive.

Until `rdzvscope analyze` exists, step 1 still runs and the test then FAILS with "analyzer
not available" (exit 1): a scenario is never reported as passed without a diagnosis.

    harness.py --rdzvscope build/bin/rdzvscope SCENARIO [--launch MODE] [--python PY]
               [--work DIR] [--keep] [--untraced] [--attach]
    harness.py --list [--launch MODE]

--untraced is the traces-absent variant: the ranks run without `rdzvscope run`, the fault is
checked from exit codes and logs only, and only step 3 (log-only analysis) is asserted.
--attach traces the ranks with `rdzvscope attach --pid` instead of the shim (root; the
scenarios that say when to start it: store_unresponsive, cancelled_waiting).

Standard library only; runs under any python3 >= 3.8 (the ranks run under --python, default
/usr/bin/python3, the interpreter that has torch). The connect_timeout scenario needs root,
`ip` and `iptables` (it makes and always deletes a network namespace).

The scenarios (their table of expectations, MESSAGES, how each one is launched and checked)
are in tests/pylib/rdzvtest/e2e.py, which tests/golden/capture.py runs too; the scenario
names, and the ctest tests made of them, are in tests/pylib/scenarios.txt.
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
from rdzvtest import checks  # noqa: E402
from rdzvtest.checks import Fail, finish_scenario, log  # noqa: E402
from rdzvtest.cli import AnalyzerMissing  # noqa: E402
from rdzvtest.e2e import MODES, SCENARIOS, WORLD, Harness, run_scenario, without_ranks  # noqa: E402


def check_verdict(diag, want_cls, want_rank, want_cause, errors, what):
    verdict = (diag or {}).get("verdict") or {}
    if diag.get("schema") != "rdzvscope.diagnosis/1":
        errors.append(f"{what}: schema {diag.get('schema')!r}")
    if verdict.get("class") != want_cls and not (isinstance(want_cls, tuple)
                                                  and verdict.get("class") in want_cls):
        errors.append(f"{what}: verdict.class {verdict.get('class')!r}, expected {want_cls!r}")
    if want_rank != "any" and verdict.get("initiating_rank") != want_rank \
            and not (isinstance(want_rank, tuple) and verdict.get("initiating_rank") in want_rank):
        errors.append(f"{what}: verdict.initiating_rank {verdict.get('initiating_rank')!r}, "
                      f"expected {want_rank!r}")
    if want_cause is not None and verdict.get("cause") != want_cause:
        errors.append(f"{what}: verdict.cause {verdict.get('cause')!r}, expected {want_cause!r}")


def check_discriminators(diag, want, errors):
    """The discriminators a scenario's table names (say, the failed attempt of a restarted
    job that succeeded) hold those values."""
    got = diag.get("discriminators") or {}
    for name, value in want.items():
        if got.get(name) != value:
            errors.append(f"traces+logs: discriminators.{name} {got.get(name)!r}, expected {value!r}")


def check_words(diag, want, errors):
    """The verdict's words say what the scenario's table says they must (its `words`): texts
    that the summary, some evidence line, the next step must hold, and texts none may hold."""
    verdict = diag.get("verdict") or {}
    evidence = [line for f in diag.get("findings") or [] for line in f.get("evidence") or []]
    fields = {"summary": [verdict.get("summary") or ""], "next_step": [verdict.get("next_step") or ""],
              "evidence": evidence}
    for field, texts in want.items():
        if field == "nowhere":
            continue
        for text in texts:
            if not any(text in line for line in fields[field]):
                errors.append(f"traces+logs: the {field} lacks {text!r}")
    everything = fields["summary"] + fields["next_step"] + evidence
    for text in want.get("nowhere", ()):
        for line in everything:
            if text in line:
                errors.append(f"traces+logs: the verdict says {text!r}: {line[:300]!r}")


def check_log_words(diag, want, errors):
    """The logs-only verdict's summary holds each of `want` (the scenario's `log_words`)."""
    summary = ((diag or {}).get("verdict") or {}).get("summary") or ""
    for text in want:
        if text not in summary:
            errors.append(f"logs only: the summary lacks {text!r}")


def check_dead_rows(diag, ranks, errors):
    """The rank table's rows of `ranks` say how they ended ("dead", "ended"), and none is late
    (issue 32: a dead rank is dead, not late)."""
    rows = {r.get("rank"): r for r in (diag or {}).get("ranks") or []}
    for rank in ranks:
        row = rows.get(rank) or {}
        if not row.get("dead") or not row.get("ended") or row.get("late"):
            errors.append(f"traces+logs: rank {rank}'s row is not marked dead with how it ended: {row}")
        # Dead after init_process_group: its span in the first collective says so too.
        span = row.get("collective")
        if span and (span.get("part") != "dead" or not span.get("how")):
            errors.append(f"traces+logs: rank {rank}'s collective span is not dead with how it ended: {span}")


def check_stalled_rows(diag, ranks, errors):
    """The rank table's rows of `ranks` say they never entered the first collective
    ("stalled", and their JSON span's part), and none is late or dead (issue 28: they reached
    the store in time)."""
    rows = {r.get("rank"): r for r in (diag or {}).get("ranks") or []}
    for rank in ranks:
        row = rows.get(rank) or {}
        if not row.get("stalled") or row.get("late") or row.get("dead"):
            errors.append(f"traces+logs: rank {rank}'s row is not marked stalled: {row}")
        if (row.get("collective") or {}).get("part") not in ("never_entered", "entered_late"):
            errors.append(f"traces+logs: rank {rank}'s collective span does not say it stayed away: "
                          f"{row.get('collective')}")


def check_withheld(h, run, ranks, errors):
    """The same run analyzed without the trace files and logs of `ranks`: a rank WORLD_SIZE
    expects and no trace shows is absent, and the one the others timed out waiting for."""
    what = f"without the traces of rank(s) {list(ranks)}"
    diag = h.analyze(without_ranks(run, ranks))
    log(f"[{run.name}] analyze ({what}): " + json.dumps(diag.get("verdict"))[:600])
    check_verdict(diag, "straggler_timeout", min(ranks), None, errors, what)
    disc = diag.get("discriminators") or {}
    if disc.get("absent_ranks") != sorted(ranks):
        errors.append(f"{what}: discriminators.absent_ranks {disc.get('absent_ranks')!r}")
    if disc.get("expected_world_size") != WORLD:
        errors.append(f"{what}: discriminators.expected_world_size "
                      f"{disc.get('expected_world_size')!r}, expected {WORLD}")
    if "no trace of it exists" not in ((diag.get("verdict") or {}).get("summary") or ""):
        errors.append(f"{what}: the summary does not say that no trace of the rank exists")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", help="one of: " + ", ".join(SCENARIOS))
    ap.add_argument("--rdzvscope", help="path of the rdzvscope CLI")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter that has torch")
    ap.add_argument("--work", help="scratch directory (default: a new temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--list", action="store_true", help="print the scenario table and exit")
    ap.add_argument("--launch", choices=sorted(MODES), default="hand",
                    help="how the ranks are started: by hand (env://), or by torchrun with the "
                         "c10d or the static rendezvous backend (PyTorch 2.x)")
    ap.add_argument("--legacy-store", action="store_true",
                    help="USE_LIBUV=0: the TCPStore server of PyTorch < 2.4 (2.4 and later use "
                         "the libuv one by default)")
    ap.add_argument("--pid-namespaces", action="store_true",
                    help="every rank in a PID namespace of its own with its own /proc (pid 1 "
                         "there), on the host's network and host name: processes in containers")
    ap.add_argument("--untraced", action="store_true",
                    help="the traces-absent variant: ranks run without `rdzvscope run`, and only "
                         "the log-only analysis is asserted")
    ap.add_argument("--attach", action="store_true",
                    help="ranks run without `rdzvscope run` and are traced by `rdzvscope attach "
                         "--pid` (root), from where the scenario starts it; analyzed as traced")
    args = ap.parse_args()

    specs = MODES[args.launch][0]
    if args.list:
        for name, s in specs.items():
            print(f"{name:22} {s['cls']:18} initiating={s['rank']!s:9} {s['fault']}")
        return 0
    if args.scenario not in specs or not args.rdzvscope:
        ap.error(f"give --rdzvscope and one scenario of launch mode {args.launch}: " + ", ".join(specs))
    missing = checks.missing_executable((("rdzvscope CLI", args.rdzvscope), ("python", args.python)))
    if missing:
        log(missing)
        return 1

    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = tempfile.mkdtemp(prefix=f"{args.scenario}-", dir=args.work)
    else:
        work = tempfile.mkdtemp(prefix=f"rdzvscope-e2e-{args.scenario}-")
    h = Harness(os.path.abspath(args.rdzvscope), args.python, work, args.keep,
                traced=not args.untraced, legacy_store=args.legacy_store,
                pid_namespaces=args.pid_namespaces, attach=args.attach)
    name = args.scenario
    t_start = time.monotonic()
    if args.launch != "hand" and h.torch_major < 2:
        log(f"FAIL [{name}]: --launch {args.launch} needs PyTorch 2.x ({args.python} has "
            f"{h.torch_version}, whose torchrun does not start under Python 3.11)")
        return 1
    log(f"[{name}] PyTorch {h.torch_version}, launch {args.launch}")

    run, errors = run_scenario(h, name, args.launch)
    spec = run.spec
    for n in run.notes:
        log(f"[{name}] {n}")
    if errors:
        log(f"FAIL [{name}]: the fault did not happen as designed:")
        for e in errors:
            log(f"  - {e}")
        for p in run.procs:
            log(f"\n--- {p.label}: exit {p.rc}; {' '.join(p.cmd)}\n{p.text()[-12000:]}")
        log(f"\n(scratch kept in {work})")
        return 1
    log(f"[{name}] fault reproduced: {spec['fault']}")

    verdict_errors = []
    try:
        logs = run.logs()
        if h.traced:
            diag = h.analyze([run.trace_dir, "--log"] + logs)
            log(f"[{name}] analyze (traces + logs): " + json.dumps(diag.get("verdict"))[:600])
            check_verdict(diag, spec["cls"], run.expect_rank, spec["cause"], verdict_errors,
                          "traces+logs")
            check_discriminators(diag, spec.get("discriminators") or {}, verdict_errors)
            words = spec.get("attach_words") if h.attach and "attach_words" in spec else spec.get("words")
            check_words(diag, words or {}, verdict_errors)
            check_dead_rows(diag, spec.get("dead") or (), verdict_errors)
            check_stalled_rows(diag, spec.get("stalled") or (), verdict_errors)
            if spec.get("withheld"):
                check_withheld(h, run, spec["withheld"], verdict_errors)
        if spec["log_cls"] is not None:   # always set today; None would skip the check
            diag = h.analyze(["--log"] + logs)
            log(f"[{name}] analyze (logs only): " + json.dumps(diag.get("verdict"))[:600])
            log_ranks = run.log_ranks if run.log_ranks == "any" else tuple(run.log_ranks)
            check_verdict(diag, spec["log_cls"], log_ranks, None, verdict_errors,
                          "logs only")
            check_log_words(diag, run.log_words, verdict_errors)
    except AnalyzerMissing as e:
        log(f"FAIL [{name}]: {e}")
        log(f"[{name}] (the fault itself was reproduced and checked; {time.monotonic() - t_start:.1f}s)")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return 1
    except (Fail, subprocess.TimeoutExpired) as e:
        verdict_errors.append(str(e))

    return finish_scenario(name, verdict_errors, work, t_start, args.keep)


if __name__ == "__main__":
    sys.exit(main())
