#!/usr/bin/env python3
"""The shim's fault injection on its own, without PyTorch: a small Python program that looks
up the store host, binds and connects to store ports, run under `rdzvscope run`

  * without --inject, and with a garbage RDZVSCOPE_INJECT inherited from the environment
    (which `run` clears) or handed to the shim directly (which says so once and injects
    nothing): the program prints exactly what it prints without the shim, and no record of
    the trace is marked injected;
  * with each --inject FAULT: the call fails as the fault says (errno, EAI_NONAME, the time
    a connect was held), only in the rank it names, and is marked `injected` in the dump;
  * `run --inject` with a bad spec is a usage error (exit 2) that starts nothing.

    inject_shim.py --rdzvscope CLI --shim LIB --python PY [--work DIR]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import Fail, check, log  # noqa: E402
from rdzvtest.launch import job_env  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402
from rdzvtest.traces import events  # noqa: E402

PROGRAM = r"""
import os, socket, time
port = int(os.environ["MASTER_PORT"])
def attempt(what, f):
    t = time.monotonic()
    try:
        f()
        print(what, "ok", flush=True)
    except socket.gaierror as e:
        print(what, "gai", e.errno, flush=True)
    except OSError as e:
        print(what, "errno", e.errno, flush=True)
    return time.monotonic() - t
attempt("lookup", lambda: socket.getaddrinfo(os.environ["MASTER_ADDR"], port, type=socket.SOCK_STREAM))
attempt("lookup-other", lambda: socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM))
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
attempt("bind", lambda: server.bind(("127.0.0.1", port)))
attempt("listen", lambda: server.listen(8))
for i in range(2):
    c = socket.socket()
    took = attempt(f"connect{i}", lambda: c.connect(("127.0.0.1", port)))
    c.close()
    print(f"took{i} {took:.1f}", file=__import__("sys").stderr, flush=True)
"""

OPTS = None


def run(work, tag, rank, inject=(), env_extra=None, via_run=True):
    trace = os.path.join(work, tag)
    port = run.port
    env = job_env(RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                  LC_ALL="C")
    env.update(env_extra or {})
    cmd = [OPTS.python, "-c", PROGRAM]
    if via_run:
        args = []
        for f in inject:
            args += ["--inject", f]
        cmd = [OPTS.rdzvscope, "run", "--out", trace, "--shim", OPTS.shim] + args + ["--"] + cmd
    else:
        env.update(LD_PRELOAD=OPTS.shim, RDZVSCOPE_DIR=trace)
        os.makedirs(trace, exist_ok=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    files = cli.dump(OPTS.rdzvscope, trace) if os.path.isdir(trace) and os.listdir(trace) else []
    return p, files


def injected(files):
    return [ev for _, ev in events(files) if "injected" in (ev.get("flags") or [])]


def took(p, i):
    for line in p.stderr.splitlines():
        if line.startswith(f"took{i} "):
            return float(line.split()[1])
    return None


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--work")
    OPTS = ap.parse_args()
    if OPTS.work:
        os.makedirs(OPTS.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="inject-shim-", dir=OPTS.work)
    run.port = free_port()
    try:
        plain = subprocess.run([OPTS.python, "-c", PROGRAM], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60,
                               env=job_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(run.port), LC_ALL="C"))
        check(plain.returncode == 0 and "connect0 ok" in plain.stdout, "the program fails without the shim",
              plain.stdout + plain.stderr)

        # Off: nothing changes, nothing is marked.
        for tag, kw in (("off", {}),
                        ("inherited", dict(env_extra={"RDZVSCOPE_INJECT": "connect-refused"})),
                        ("garbage", dict(env_extra={"RDZVSCOPE_INJECT": "connect-refused:rank=x"},
                                         via_run=False))):
            p, files = run(work, tag, 3, **kw)
            check(p.returncode == 0 and p.stdout == plain.stdout,
                  f"{tag}: the program behaved differently under the shim",
                  f"plain:\n{plain.stdout}\ntraced ({p.returncode}):\n{p.stdout}\n{p.stderr}")
            check(files and not injected(files), f"{tag}: no trace, or records marked injected",
                  json.dumps(injected(files))[:2000])
            said = [ln for ln in p.stderr.splitlines() if "RDZVSCOPE_INJECT" in ln]
            if tag == "garbage":
                check(len(said) == 1 and "injecting nothing" in said[0],
                      "garbage: the shim did not say once that it injects nothing", p.stderr)
            else:
                check(not said, f"{tag}: the shim spoke of RDZVSCOPE_INJECT", p.stderr)
            log(f"{tag}: unchanged, nothing marked")

        # A bad spec on the command line: usage error, nothing started.
        for bad in ("explode", "late:rank=2:12h", "resolve-fail:5s", ""):
            p = subprocess.run([OPTS.rdzvscope, "run", "--out", os.path.join(work, "bad"), "--shim",
                                OPTS.shim, "--inject", bad, "--", "sh", "-c", "echo started"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
            check(p.returncode == 2 and "started" not in p.stdout and "--inject" in p.stderr,
                  f"run --inject {bad!r}: exit {p.returncode}, want 2", p.stdout + p.stderr)
        log("bad specs on the command line: exit 2, nothing started")

        # Each fault, in the rank it names only.
        cases = [
            ("resolve-fail:rank=3", 3, "lookup gai -2", "resolve", None),
            ("resolve-fail:rank=2", 3, None, None, None),
            ("connect-refused", 3, "connect0 errno 111", "connect", "ECONNREFUSED"),
            ("connect-timeout:1500ms", 3, "connect0 errno 110", "connect", "ETIMEDOUT"),
            ("port-taken:rank=3", 3, "bind errno 98", "bind", "EADDRINUSE"),
            ("late:rank=3:2s", 3, None, "connect", None),
        ]
        for spec, rank, line, kind, errno_name in cases:
            p, files = run(work, spec.replace(":", "_").replace("=", ""), rank, inject=[spec])
            marked = injected(files)
            if line is None and kind is None:   # not this rank
                check(p.stdout == plain.stdout and not marked, f"{spec} in rank {rank}: changed something",
                      p.stdout + p.stderr)
                log(f"{spec}, rank {rank}: unchanged")
                continue
            if line:
                check(line in p.stdout, f"{spec}: the program did not see {line!r}", p.stdout + p.stderr)
            check(marked and all(ev["kind"] == kind for ev in marked),
                  f"{spec}: injected records {[ev['kind'] for ev in marked]}, want {kind}", json.dumps(marked)[:2000])
            if errno_name:
                check(all(ev.get("errno_name") == errno_name for ev in marked),
                      f"{spec}: injected records without {errno_name}", json.dumps(marked)[:2000])
            if spec.startswith("connect-timeout"):
                check(took(p, 0) is not None and 1.3 <= took(p, 0) < 5,
                      f"{spec}: the connect took {took(p, 0)}s, want 1.5s", p.stderr)
                check(all(ev["dur_ns"] >= 1.4e9 for ev in marked), f"{spec}: dur_ns", json.dumps(marked)[:1000])
            if spec.startswith("late"):
                check(p.stdout == plain.stdout, f"{spec}: the held-back connect failed", p.stdout)
                check(len(marked) == 1 and took(p, 0) >= 1.9 and took(p, 1) < 1.0,
                      f"{spec}: want only the first connect held 2s (took {took(p, 0)}, {took(p, 1)})",
                      p.stderr + json.dumps(marked)[:1000])
            log(f"{spec}, rank {rank}: {len(marked)} injected {kind} record(s)")
    except Fail as e:
        log(f"FAIL: {e}")
        log(f"(scratch kept in {work})")
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
