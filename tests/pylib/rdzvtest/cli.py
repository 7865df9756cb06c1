"""Running the built rdzvscope binary: with an environment that does not decide for it, its
`dump` output parsed, and the case driver of the CLI test scripts (tests/unit/*_test.py:
SCRIPT RDZVSCOPE ARG CASE, one ctest test per case)."""
import json
import os
import subprocess
import tempfile

from rdzvtest.checks import Fail

# Where the shim is found and what the run is called must not come from the test's own
# environment.
CLI_SCRUB = ("LD_PRELOAD", "SLURM_JOB_ID", "RDZVSCOPE_SHIM")
DUMP_TIMEOUT_S = 30
# `rdzvscope analyze` under RDZVSCOPE_STRICT=1 (set for every test: tests/CMakeLists.txt): its
# verdict contradicted its own facts (analyzer/rules/consistency.h). Always a failure.
CONTRADICTION_EXIT = 70
ANALYZE_TIMEOUT_S = 60


class AnalyzerMissing(Exception):
    """`rdzvscope analyze` (or the option asked for) does not exist in this build."""


def run_cli(rdzvscope, args, env=None, cwd=None, unset=(), timeout=60):
    """`rdzvscope ARGS` without CLI_SCRUB and `unset` in its environment, plus env.
    Returns (exit status, stdout, stderr)."""
    e = {k: v for k, v in os.environ.items() if k not in CLI_SCRUB and k not in unset}
    e.update(env or {})
    p = subprocess.run([rdzvscope] + list(args), capture_output=True, text=True, env=e, cwd=cwd,
                       timeout=timeout)
    if p.returncode == CONTRADICTION_EXIT and "contradicts its own facts" in p.stderr:
        raise Fail(f"`rdzvscope {' '.join(args)}`: {p.stderr.strip()[-2000:]}")
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, *context):
    """The CLI tests' assertion: raises AssertionError(what), each context item appended."""
    if not cond:
        raise AssertionError(what + "".join("\n--- " + str(c) for c in context))


def run_case(cases, case):
    """Runs case_<case> of a CLI test script (`cases`: its globals()) in a fresh temporary
    directory; any exception fails it."""
    fn = cases.get("case_" + case)
    if fn is None:
        raise SystemExit(f"unknown case {case}")
    with tempfile.TemporaryDirectory(prefix="rdzvscope-cli-") as tmp:
        fn(os.path.realpath(tmp))
    print(f"{case}: ok")


# ------------------------------------------------------------------------------ rdzvscope dump

def dump_text(rdzvscope, path, timeout=DUMP_TIMEOUT_S, expect_rc=0):
    """The output of `rdzvscope dump PATH`; Fail unless it exits expect_rc."""
    p = subprocess.run([rdzvscope, "dump", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if p.returncode != expect_rc:
        raise Fail(f"`rdzvscope dump {path}` exited {p.returncode}, want {expect_rc}\nstderr:\n"
                   f"{p.stderr[-4000:]}\nstdout (first 2000 chars):\n{p.stdout[:2000]}")
    return p.stdout


def parse_dump(text):
    """`rdzvscope dump` output -> one {"header", "events", "summary"} per trace file, in order.
    Fail on a line that is not a JSON record or comes before any header."""
    files, current = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise Fail(f"dump line {n} is not JSON ({e}): {line[:300]}")
        if not isinstance(rec, dict) or "type" not in rec:
            raise Fail(f"dump line {n} has no type: {line[:300]}")
        if rec["type"] == "header":
            current = {"header": rec, "events": [], "inflight": [], "summary": None}
            files.append(current)
        elif current is None:
            raise Fail(f"dump line {n}: {rec['type']} before any header")
        elif rec["type"] == "event":
            current["events"].append(rec)
        elif rec["type"] == "inflight":
            current["inflight"].append(rec)
        elif rec["type"] == "summary":
            current["summary"] = rec
    return files


def dump(rdzvscope, path, timeout=DUMP_TIMEOUT_S, expect_rc=0):
    """`rdzvscope dump PATH`, parsed (parse_dump)."""
    return parse_dump(dump_text(rdzvscope, path, timeout, expect_rc))


def start_attach(rdzvscope, args):
    """`rdzvscope attach ARGS` in the background, returned once it says it is recording (its
    first stderr line); a Fail with what it said when it did not start."""
    a = subprocess.Popen([rdzvscope, "attach"] + list(args), stderr=subprocess.PIPE, text=True)
    line = a.stderr.readline()
    if "recording" not in line:
        a.wait(timeout=10)
        raise Fail("attach did not start (exit %s): %s%s" % (a.returncode, line, a.stderr.read()))
    return a


def stop_attach(a, sig=None, timeout=20):
    """Stops attach (SIGINT, or `sig`), which writes what is left and its summary; returns the
    rest of its stderr. A Fail when it exits other than 0."""
    import signal
    a.send_signal(sig or signal.SIGINT)
    rest = a.stderr.read()
    rc = a.wait(timeout=timeout)
    if rc != 0:
        raise Fail("attach exited %d: %s" % (rc, rest))
    return rest
