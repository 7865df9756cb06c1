#!/usr/bin/env python3
"""The shim's fault injection on its own, without PyTorch: a small Python program that looks
up the store host, binds and connects to store ports, run under `rdzvscope run`

  * without --inject, and with a garbage RDZVSCOPE_INJECT inherited from the environment
    (which `run` clears) or handed to the shim directly (which says so once and injects
    nothing): the program prints exactly what it prints without the shim, and no record of
    the trace is marked injected;
  * with each --inject FAULT: the call fails as the fault says (errno, EAI_NONAME, the time
    a connect was held), only in the rank it names, and is marked `injected` in the dump;
  * `run --inject` with a bad spec is a usage error (exit 2) that starts nothing;
  * store-reset: a program that talks over a store connection (both ends in one process) sees
    its call at the point the spec names fail with ECONNRESET, marked `injected`, and the other
    end sees the reset too (a real ECONNRESET, not marked), once; before the point, in another
    rank, or with the point never reached, nothing changes;
  * a rank= fault applies to a process that gets RANK only after it started (as a worker that
    Python's multiprocessing starts under torchrun), not to the process before that.

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

# store-reset: one store connection, both of its ends in this process; every step's result.
RESET_PROGRAM = r"""
import errno, os, socket, time
port = int(os.environ["MASTER_PORT"])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(8)
c = socket.create_connection(("127.0.0.1", port))
a, _ = srv.accept()
def step(what, f):
    try:
        print(what, "ok", f(), flush=True)
    except OSError as e:
        print(what, "errno", errno.errorcode.get(e.errno, e.errno), flush=True)
step("send1", lambda: c.send(b"ping"))
step("srecv1", lambda: a.recv(4))
step("ssend1", lambda: a.send(b"pong"))
step("recv1", lambda: c.recv(4))
time.sleep(float(os.environ.get("PAUSE_S") or 0))
step("send2", lambda: c.send(b"ping"))
time.sleep(0.2)
step("srecv2", lambda: a.recv(4))
step("send3", lambda: c.send(b"ping"))
"""

# RANK set by the program itself after it started (Python's multiprocessing does that for a
# torchrun worker): the lookups before and after.
LATE_RANK_PROGRAM = r"""
import os, socket
def attempt(what):
    try:
        socket.getaddrinfo(os.environ["MASTER_ADDR"], 1, type=socket.SOCK_STREAM)
        print(what, "ok", flush=True)
    except socket.gaierror as e:
        print(what, "gai", e.errno, flush=True)
attempt("before")
os.environ["RANK"] = "3"
attempt("after")
"""

OPTS = None


def run(work, tag, rank, inject=(), env_extra=None, via_run=True, program=None):
    trace = os.path.join(work, tag)
    port = run.port
    env = job_env(RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                  LC_ALL="C")
    if rank is None:
        del env["RANK"]
    env.update(env_extra or {})
    cmd = [OPTS.python, "-c", program or PROGRAM]
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


def store_reset():
    work = run.work
    plain = subprocess.run([OPTS.python, "-c", RESET_PROGRAM], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60,
                           env=job_env(MASTER_PORT=str(run.port), LC_ALL="C"))
    check(plain.returncode == 0 and "send2 ok 4" in plain.stdout and "srecv2 ok b'ping'" in plain.stdout,
          "the store-reset program fails without the shim", plain.stdout + plain.stderr)
    # The point: 8 bytes (ping + pong) on the client's connection; the server's has carried as
    # many after its send, but the client's send2 is the first call made past the point.
    reset = {"send1": "ok 4", "recv1": "ok b'pong'", "send2": "errno ECONNRESET",
             "srecv2": "errno ECONNRESET", "send3": "errno EPIPE"}
    cases = [
        ("store-reset:rank=3:bytes=8", 3, {}, reset),
        ("store-reset:after=1s", 3, {"PAUSE_S": "1.3"}, reset),
        # past send2's start only: send3 is the first call beyond the point
        ("store-reset:bytes=9", 3, {}, dict(reset, send2="ok 4", srecv2="ok b'ping'",
                                            send3="errno ECONNRESET")),
        ("store-reset:rank=2:bytes=8", 3, {}, None),
        ("store-reset:bytes=100000", 3, {}, None),
        ("store-reset:after=30s", 3, {}, None),
    ]
    for spec, rank, env_extra, want in cases:
        p, files = run(work, "reset-" + spec.replace(":", "_").replace("=", ""), rank, inject=[spec],
                       env_extra=env_extra, program=RESET_PROGRAM)
        marked = injected(files)
        if want is None:
            check(p.stdout == plain.stdout and not marked, f"{spec} in rank {rank}: changed something",
                  p.stdout + p.stderr + json.dumps(marked)[:1000])
            log(f"{spec}, rank {rank}: unchanged")
            continue
        said = dict(line.split(" ", 1) for line in p.stdout.splitlines())
        for step, result in want.items():
            check(said.get(step) == result, f"{spec}: {step} {said.get(step)!r}, want {result!r}",
                  p.stdout + p.stderr)
        check(len(marked) == 1 and marked[0].get("errno_name") == "ECONNRESET"
              and marked[0]["kind"] in ("send", "recv"),
              f"{spec}: want one injected ECONNRESET send/recv record", json.dumps(marked)[:2000])
        real = [ev for _, ev in events(files) if ev.get("errno_name") == "ECONNRESET"
                and "injected" not in (ev.get("flags") or [])]
        if want["srecv2"] == "errno ECONNRESET":
            check(real, f"{spec}: the other end's ECONNRESET is not in the trace", json.dumps(marked)[:2000])
        log(f"{spec}, rank {rank}: reset at {marked[0]['kind']} (injected), the other end saw it")


def late_rank():
    """resolve-fail:rank=3 in a process started without RANK, which sets RANK=3 itself: the
    lookup before is left alone, the one after fails."""
    p, files = run(run.work, "late-rank", None, inject=["resolve-fail:rank=3"], program=LATE_RANK_PROGRAM)
    check("before ok" in p.stdout and "after gai -2" in p.stdout,
          "resolve-fail:rank=3 did not follow RANK set after the start", p.stdout + p.stderr)
    marked = injected(files)
    check(len(marked) == 1 and marked[0]["kind"] == "resolve", "late RANK: want one injected resolve",
          json.dumps(marked)[:1000])
    log("resolve-fail:rank=3 in a process that set RANK=3 after its start: only the lookup after")


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
    run.work = work
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
        for bad in ("explode", "late:rank=2:12h", "resolve-fail:5s", "", "late:bytes=10",
                    "store-reset:bytes=x", "store-reset:bytes=1:bytes=2", "store-reset:rank=1:rank=2"):
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
            if spec.startswith("late"):   # the hold's start is marked too (a snapshot record)
                check([ev["kind"] for ev in marked] == ["snapshot", "connect"]
                      and marked[0]["dur_ns"] == 2e9,
                      f"{spec}: injected records {[ev['kind'] for ev in marked]}, want the hold's "
                      f"snapshot (dur_ns 2 s), then the connect", json.dumps(marked)[:2000])
                marked = marked[1:]
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

        store_reset()
        late_rank()
    except Fail as e:
        log(f"FAIL: {e}")
        log(f"(scratch kept in {work})")
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
