"""Assertions shared by the test scripts.

Two styles, as the scripts use them:
  - check(cond, msg, context) raises Fail at once (integration, bpf);
  - expect(cond, msg, errors) appends to a list of errors, so that one run reports every way
    in which a fault did not happen as designed (e2e, cluster). The expect_* helpers take a
    launched process (launch.Proc, or anything with label, rc, killed_by_bound and text());
    a process placed on a cluster host (attribute `host`) is named label@host.
"""
import json
import os
import shutil
import time


class Fail(Exception):
    """A test found what it checks to be wrong (or could not check it)."""


def check(cond, msg, context=None):
    """Raises Fail(msg) unless cond; context (a string, or records printed one JSON per line)
    is appended to the message."""
    if not cond:
        if context is not None:
            msg += "\n--- context ---\n" + (context if isinstance(context, str)
                                            else "\n".join(json.dumps(c) for c in context))
        raise Fail(msg)


def expect(cond, msg, errors):
    if not cond:
        errors.append(msg)


def nonzero(rc):
    """non-zero"""
    return rc not in (0, None)


def where(p):
    host = getattr(p, "host", None)
    return f"{p.label}@{host}" if host else p.label


def expect_exit(p, want, errors):
    """p exited with status `want`, or one for which want(rc) holds (its docstring says which)."""
    ok = want(p.rc) if callable(want) else p.rc == want
    expect(ok, f"{where(p)}: exit status {p.rc}{' (killed at the bound)' if p.killed_by_bound else ''}, "
               f"expected {want.__doc__ if callable(want) else want}", errors)


def expect_text(p, needles, errors):
    """p's log holds every one of needles (a string or a list)."""
    text = p.text()
    for n in ([needles] if isinstance(needles, str) else needles):
        expect(n in text, f"{where(p)}: log lacks {n!r}", errors)


def expect_any_text(p, needles, errors):
    """p's log holds at least one of needles."""
    text = p.text()
    expect(any(n in text for n in needles), f"{where(p)}: log has none of {needles!r}", errors)


def log(msg):
    print(msg, flush=True)


def missing_executable(named):
    """The first of named ((what, path), ...) that is not an executable file, said as a FAIL
    line; None when all are."""
    for what, path in named:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"FAIL: {what} not found or not executable: {path}"
    return None


def finish_scenario(name, verdict_errors, work, t_start, keep):
    """The end of a scenario: FAIL with its errors (the scratch kept), or PASS (the scratch
    removed unless keep). Returns the exit status."""
    if verdict_errors:
        log(f"FAIL [{name}]:")
        for e in verdict_errors:
            log(f"  - {e}")
        log(f"(scratch kept in {work})")
        return 1
    log(f"PASS [{name}] in {time.monotonic() - t_start:.1f}s")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def run_script(main):
    """A test script's entry: exits with main()'s status; a Fail raised on the way is a FAIL
    line and status 1."""
    import sys
    try:
        rc = main()
    except Fail as e:
        log(f"FAIL: {e}")
        rc = 1
    sys.exit(rc)
