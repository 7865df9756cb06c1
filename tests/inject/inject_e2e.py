#!/usr/bin/env python3
"""Rehearsal by fault injection, end to end: a real 4-rank PyTorch gloo job, every rank under
`rdzvscope run --inject FAULT --`, the fault checked to have happened (exit codes, the lines
each rank printed, the injected records in the traces), then `rdzvscope analyze --format
json` asserted to give the verdict class and initiating rank of the injection's REAL twin
(tests/pylib/rdzvtest/e2e.py SCENARIOS, the same expectations, 2.x adjustments included) and
to say that the failure was injected (inputs.injected: the records and the ranks).

    inject_e2e.py --rdzvscope build/bin/rdzvscope --python PY [--work DIR] [--keep] NAME
    inject_e2e.py --list

The injections: tests/pylib/rdzvtest/inject.py (INJECTIONS). Standard library only.
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
from rdzvtest.checks import Fail, finish_scenario, log  # noqa: E402
from rdzvtest.e2e import Harness  # noqa: E402
from rdzvtest.inject import INJECTIONS, run_injection  # noqa: E402


def check(diag, spec, want_rank, want_injected, errors):
    verdict = diag.get("verdict") or {}
    cls = spec["cls"]
    if verdict.get("class") != cls and not (isinstance(cls, tuple) and verdict.get("class") in cls):
        errors.append(f"verdict.class {verdict.get('class')!r}, expected {cls!r} (as the real twin)")
    if want_rank != "any" and verdict.get("initiating_rank") != want_rank:
        errors.append(f"verdict.initiating_rank {verdict.get('initiating_rank')!r}, expected "
                      f"{want_rank!r} (as the real twin)")
    if spec.get("cause") is not None and verdict.get("cause") != spec["cause"]:
        errors.append(f"verdict.cause {verdict.get('cause')!r}, expected {spec['cause']!r} (as the real twin)")
    got = (diag.get("inputs") or {}).get("injected")
    if not got or not got.get("events"):
        errors.append(f"inputs.injected {got!r}: analyze does not say that the failure was injected")
    elif sorted(got.get("ranks") or []) != sorted(want_injected):
        errors.append(f"inputs.injected.ranks {got.get('ranks')}, expected {want_injected}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", nargs="?", help="one of: " + ", ".join(INJECTIONS))
    ap.add_argument("--rdzvscope")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter that has torch")
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for n, s in INJECTIONS.items():
            print(f"{n:18} twin {s['twin']:22} --inject {' --inject '.join(s['inject'])}")
        return 0
    if args.name not in INJECTIONS or not args.rdzvscope:
        ap.error("give --rdzvscope and one of: " + ", ".join(INJECTIONS))
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = tempfile.mkdtemp(prefix=f"{args.name}-", dir=args.work)
    else:
        work = tempfile.mkdtemp(prefix=f"rdzvscope-inject-{args.name}-")
    h = Harness(os.path.abspath(args.rdzvscope), args.python, work, args.keep)
    spec_in = INJECTIONS[args.name]
    name = f"inject.{args.name}"
    t_start = time.monotonic()
    log(f"[{name}] PyTorch {h.torch_version}: --inject {' --inject '.join(spec_in['inject'])}, "
        f"twin {spec_in['twin']}")
    try:
        run, errors = run_injection(h, args.name)
    except Fail as e:
        log(f"FAIL [{name}]: {e}")
        return 1
    for n in run.notes:
        log(f"[{name}] {n}")
    log(f"[{name}] job took {time.monotonic() - run.t0:.1f}s\n{run.summary()}")
    if errors:
        log(f"FAIL [{name}]: the injected fault did not happen as designed:")
        for e in errors:
            log(f"  - {e}")
        for p in run.procs:
            log(f"\n--- {p.label}: exit {p.rc}; {' '.join(p.cmd)}\n{p.text()[-6000:]}")
        log(f"\n(scratch kept in {work})")
        return 1
    verdict_errors = []
    try:
        diag = h.analyze([run.trace_dir, "--log"] + run.logs())
        log(f"[{name}] analyze: " + json.dumps(diag.get("verdict"))[:600])
        log(f"[{name}] inputs.injected: " + json.dumps((diag.get("inputs") or {}).get("injected")))
        check(diag, run.spec, run.expect_rank, spec_in["injected_ranks"], verdict_errors)
        text = subprocess.run([h.rdzvscope, "analyze", run.trace_dir, "--log"] + run.logs(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120).stdout
        line = next((ln for ln in text.splitlines() if ln.startswith("INJECTED")), None)
        log(f"[{name}] text report: {line}")
        if not line:
            verdict_errors.append("the text report has no INJECTED line")
    except (Fail, subprocess.TimeoutExpired) as e:
        verdict_errors.append(str(e))
    return finish_scenario(name, verdict_errors, work, t_start, args.keep)


if __name__ == "__main__":
    sys.exit(main())
