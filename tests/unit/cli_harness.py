"""Shared pieces of the Python CLI tests that take the stored golden scenarios: running the
built rdzvscope with a clean environment, assertions with context, one case per invocation.

usage of a test script: SCRIPT RDZVSCOPE GOLDEN_DIR CASE
"""
import os
import subprocess
import sys
import tempfile

RDZVSCOPE, GOLDEN, CASE = sys.argv[1], sys.argv[2], sys.argv[3]


def run(args):
    e = dict(os.environ)
    for k in ("LD_PRELOAD", "SLURM_JOB_ID", "RDZVSCOPE_SHIM"):
        e.pop(k, None)
    p = subprocess.run([RDZVSCOPE] + args, capture_output=True, text=True, env=e, timeout=60)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n--- " + str(c) for c in context))


def main(cases):
    """Runs case_<CASE> of the calling module (`cases`: its globals()) in a fresh temp dir."""
    fn = cases.get("case_" + CASE)
    if fn is None:
        raise SystemExit(f"unknown case {CASE}")
    with tempfile.TemporaryDirectory(prefix="rdzvscope-cli-") as tmp:
        fn(os.path.realpath(tmp))
    print(f"{CASE}: ok")
