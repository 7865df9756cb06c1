#!/usr/bin/env python3
"""End-to-end tests of the rdzvscope executable, one case per ctest test.

usage: cli_test.py RDZVSCOPE MAKE_TEST_TRACE CASE

Each case runs the built binary as a user would and checks exit status, stdout and stderr.
A case fails by raising (any exception exits non-zero, which ctest reports).
"""
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.cli import expect, run_case, run_cli  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

RDZVSCOPE, MAKE_TRACE, CASE = sys.argv[1], sys.argv[2], sys.argv[3]


def run(args, **kw):
    """rdzvscope ARGS, the parent environment scrubbed (RDZVSCOPE read at each call)."""
    return run_cli(RDZVSCOPE, args, **kw)


def make_trace(kind, path):
    subprocess.run([MAKE_TRACE, kind, path], check=True)


def parse_lines(out):
    return [json.loads(line) for line in out.splitlines()]


def env_of(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def case_help(tmp):
    for args in (["--help"], ["dump", "--help"], ["run", "--help"], ["analyze", "--help"]):
        rc, out, err = run(args)
        expect(rc == 0, f"{args}: exit {rc}", err)
        expect("Usage:" in out, f"{args}: no usage text", out)
    rc, out, _ = run(["run", "--help"])
    for opt in ("--out", "--ports", "--shim", "--max-mb"):
        expect(opt in out, f"run --help does not mention {opt}", out)


def case_version(tmp):
    rc, out, err = run(["--version"])
    expect(rc == 0 and out.startswith("rdzvscope "), "bad --version", rc, out, err)


def case_no_subcommand(tmp):
    rc, out, err = run([])
    expect(rc == 2, f"no subcommand: exit {rc}", err)
    rc, out, err = run(["frobnicate"])
    expect(rc == 2, f"unknown subcommand: exit {rc}", err)


def case_dump_good(tmp):
    path = os.path.join(tmp, "host.1.rzt")
    make_trace("good", path)
    rc, out, err = run(["dump", path])
    expect(rc == 0, f"exit {rc}", err)
    expect(err == "", "stderr not empty", err)
    lines = parse_lines(out)
    expect([l["type"] for l in lines] == ["header"] + ["event"] * 4 + ["summary"],
           "line types", out)
    h, events, s = lines[0], lines[1:-1], lines[-1]
    expect(h["file"] == path and h["pid"] == 4242 and h["host"] == "node1", "header", h)
    expect([e["kind"] for e in events] == ["proc_start", "resolve", "connect", "proc_exit"],
           "event kinds", events)
    c = events[2]
    expect(c["errno_name"] == "ECONNREFUSED" and c["peer"] == "10.0.0.1:29500"
           and c["flags"] == ["store"], "connect event", c)
    expect(events[1]["first"] == "10.0.0.1:29500" and events[1]["gai_error"] is None,
           "resolve event", events[1])
    expect(s == {"type": "summary", "file": path, "records": 4, "torn": 0, "invalid": 0,
                 "dropped": 0, "lost": 0, "inflight": 0}, "summary", s)


def case_dump_dir(tmp):
    # Created out of order (tmpfs lists newest first, ext4 by hash): the dump sorts.
    names = [f"node{i}.{100 + i}.rzt" for i in (3, 7, 1, 5, 0, 6, 2, 4)]
    for name in names:
        make_trace("good", os.path.join(tmp, name))
    os.mkdir(os.path.join(tmp, "sub"))
    make_trace("good", os.path.join(tmp, "sub", "nested.rzt"))
    with open(os.path.join(tmp, "notes.txt"), "w") as f:
        f.write("not a trace")
    rc, out, err = run(["dump", tmp])
    expect(rc == 0, f"exit {rc}", err)
    headers = [l["file"] for l in parse_lines(out) if l["type"] == "header"]
    # A per-job or per-host layout puts files in subdirectories: read after the directory's own.
    expect(headers == [os.path.join(tmp, n) for n in sorted(names)] + [os.path.join(tmp, "sub", "nested.rzt")],
           "files in name order, .rzt only, subdirectories after", headers)


def case_dump_truncated(tmp):
    path = os.path.join(tmp, "cut.rzt")
    make_trace("truncated", path)
    rc, out, err = run(["dump", path])
    expect(rc == 2, f"exit {rc}", err)
    err_lines = err.splitlines()
    expect(len(err_lines) == 1, "one stderr line", err)
    expect(err_lines[0] == f"rdzvscope dump: {path}: truncated at offset 4672 (record slot 3)",
           "stderr names file, offset and slot", err)
    lines = parse_lines(out)
    expect([l["type"] for l in lines] == ["header", "event", "event", "event", "summary"],
           "records before the cut still dumped", out)


def case_analyze_missing_path(tmp):
    missing = os.path.join(tmp, "no-such-dir")
    rc, out, err = run(["analyze", missing])
    expect(rc == 2 and out == "", f"exit {rc}", out, err)
    expect(err.splitlines() == [f"rdzvscope analyze: {missing}: No such file or directory"],
           "one line naming the path", err)


def case_analyze_damaged_among_good(tmp):
    d = os.path.join(tmp, "traces")
    os.makedirs(d)
    make_trace("good", os.path.join(d, "a.rzt"))
    make_trace("truncated", os.path.join(d, "b.rzt"))
    with open(os.path.join(d, "c.rzt"), "wb") as f:
        f.write(b"not a trace at all" * 300)
    rc, out, err = run(["analyze", d, "--format", "json"])
    expect(rc == 0, f"exit {rc}: the analysis goes on", err)
    report = json.loads(out)
    expect(report["schema"] == "rdzvscope.diagnosis/1", "schema", out)
    expect(report["inputs"]["trace_files"] == 3 and report["inputs"]["damaged_files"] == 2,
           "damage counted", report["inputs"])
    expect(len(err.splitlines()) == 2 and "b.rzt: truncated at offset" in err and "c.rzt" in err,
           "one stderr line per damaged file", err)


def case_analyze_many_damaged(tmp):
    """Thousands of bad files must not bury the report: 20 lines, then how many more."""
    d = os.path.join(tmp, "traces")
    os.makedirs(d)
    make_trace("good", os.path.join(d, "a.rzt"))
    for i in range(30):
        with open(os.path.join(d, f"bad{i:02}.rzt"), "wb") as f:
            f.write(b"not a trace at all" * 300)
    rc, out, err = run(["analyze", d, "--format", "json"])
    expect(rc == 0, f"exit {rc}: the analysis goes on", err)
    expect(json.loads(out)["inputs"]["damaged_files"] == 30, "every damaged file counted", out[-500:])
    lines = err.splitlines()
    expect(len(lines) == 21 and "bad00.rzt" in lines[0] and "10 more" in lines[-1],
           "20 lines, then the count of the others", err)


def case_analyze_log_alternatives(tmp):
    """Issue 29: an ambiguous log verdict keeps its class and lists the runners-up, in every view."""
    log = os.path.join(tmp, "rank1.log")
    with open(log, "w") as f:
        f.write("[E socket.cpp:860] [c10d] The client socket has timed out after 15s while trying to connect "
                "to (node0, 29400).\n")
    rc, out, err = run(["analyze", "--log", log, "--format", "json"])
    expect(rc == 0, f"exit {rc}", err)
    report = json.loads(out)
    expect(report["verdict"]["class"] == "store_not_ready", "the leading class stays", out)
    alts = report.get("alternatives")
    expect(isinstance(alts, list) and [a["class"] for a in alts] == ["straggler_timeout", "connect_timeout"],
           "the runners-up, strongest first", out)
    for a in alts:
        expect(set(a) == {"class", "cause", "why", "settle"}, "each alternative's keys", a)
        expect(isinstance(a["why"], str) and a["why"] and isinstance(a["settle"], str) and a["settle"],
               "why and what would settle it, in words", a)
    expect("preflight" in alts[1]["settle"], "preflight settles a blocked path", alts[1])
    rc, out, err = run(["analyze", "--log", log])
    expect(rc == 0 and "\nOR       straggler_timeout: " in out, "the text report's OR lines", out)
    rc, out, err = run(["analyze", "--log", log, "--format", "markdown"])
    expect(rc == 0 and "\n- connect_timeout: " in out, "the Markdown report's list", out)
    with open(log, "w") as f:
        f.write("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - "
                "Address already in use).\n")
    rc, out, err = run(["analyze", "--log", log, "--format", "json"])
    expect(rc == 0 and "alternatives" not in json.loads(out), "no key when there is no runner-up", out)


def case_analyze_garbage_log(tmp):
    log = os.path.join(tmp, "rank0.log")
    with open(log, "wb") as f:
        f.write(os.urandom(200000) + b"\n[W socket.cpp:558] [c10d] The client socket has failed to "
                b"connect to [localhost]:29500 (errno: 110 - Connection timed out).\n" + os.urandom(1000))
    rc, out, err = run(["analyze", "--log", log, "--format", "json"])
    expect(rc == 0, f"exit {rc}", err)
    report = json.loads(out)
    expect(report["verdict"]["class"] == "connect_timeout", "the real line among garbage is found", out)


def case_analyze_nothing_given(tmp):
    rc, out, err = run(["analyze"])
    expect(rc == 2 and len(err.splitlines()) == 1, f"exit {rc}", err)


def case_analyze_fail_on_problem(tmp):
    log = os.path.join(tmp, "rank1.log")
    with open(log, "w") as f:
        f.write("RuntimeError: Address already in use\n")
    rc, out, err = run(["analyze", "--log", log, "--fail-on-problem"])
    expect(rc == 3, f"exit {rc}, want 3 for a verdict that is not healthy", out, err)
    expect(out.startswith("VERDICT  port_conflict"), "text report starts with the verdict", out)
    # A log that says the workers finished is healthy; one with no error and no such line is
    # unknown (a hang prints nothing), which is a problem to report.
    with open(log, "w") as f:
        f.write("epoch 1 loss 0.5\n[default] worker group successfully finished. Waiting 300 seconds for "
                "other agents to finish.\n")
    rc, out, err = run(["analyze", "--log", log, "--fail-on-problem"])
    expect(rc == 0, f"exit {rc} for a healthy verdict", out, err)
    with open(log, "w") as f:
        f.write("epoch 1 loss 0.5\n")
    rc, out, err = run(["analyze", "--log", log, "--fail-on-problem"])
    expect(rc == 3 and out.startswith("VERDICT  unknown"), f"exit {rc} for quiet logs", out, err)


def case_dump_torn(tmp):
    path = os.path.join(tmp, "torn.rzt")
    make_trace("torn", path)
    rc, out, err = run(["dump", path])
    expect(rc == 0, f"a torn record is not an error: exit {rc}", err)
    s = parse_lines(out)[-1]
    expect(s["torn"] == 1 and s["records"] == 3, "torn counted", s)


def case_dump_missing(tmp):
    path = os.path.join(tmp, "nope.rzt")
    rc, out, err = run(["dump", path])
    expect(rc == 2, f"exit {rc}", err)
    expect(err == f"rdzvscope dump: {path}: No such file or directory\n", "message", err)
    expect(out == "", "no output", out)


def case_dump_empty_dir(tmp):
    rc, out, err = run(["dump", tmp])
    expect(rc == 2, f"exit {rc}", err)
    expect(err.startswith(f"rdzvscope dump: {tmp}: ") and len(err.splitlines()) == 1,
           "one line naming the directory", err)


def case_dump_mixed(tmp):
    """A bad file among good ones: the good ones are dumped, exit 2 at the end."""
    good = os.path.join(tmp, "good.rzt")
    bad = os.path.join(tmp, "bad.rzt")
    make_trace("good", good)
    with open(bad, "wb") as f:
        f.write(b"\0" * 5000)
    rc, out, err = run(["dump", bad, good, os.path.join(tmp, "missing.rzt")])
    expect(rc == 2, f"exit {rc}", err)
    expect(len(err.splitlines()) == 2, "one line per bad file", err)
    expect(f"{bad}: header never completed" in err, "all-zero header explained", err)
    expect([l["file"] for l in parse_lines(out) if l["type"] == "summary"] == [good],
           "good file dumped", out)


def case_dump_output_full(tmp):
    path = os.path.join(tmp, "t.rzt")
    make_trace("good", path)
    with open("/dev/full", "w") as full:
        p = subprocess.run([RDZVSCOPE, "dump", path], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    expect(p.returncode == 2, f"exit {p.returncode}", p.stderr)
    expect("rdzvscope dump: writing the output: No space left on device" in p.stderr,
           "says why", p.stderr)


def fake_shim(tmp, sub="shim"):
    d = os.path.join(tmp, sub)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "librdzvscope.so")
    with open(path, "w") as f:
        f.write("not an ELF: ld.so complains on stderr and goes on")
    return path


def case_run_missing_shim(tmp):
    missing = os.path.join(tmp, "nowhere", "librdzvscope.so")
    rc, out, err = run(["run", "--shim", missing, "--out", os.path.join(tmp, "t"), "--",
                        "/bin/true"])
    expect(rc == 2, f"exit {rc}", err)
    expect(len(err.splitlines()) == 1 and missing in err, "one line naming the path", err)
    expect(not os.path.exists(os.path.join(tmp, "t")), "no trace dir made for nothing")


def case_run_env(tmp):
    shim = fake_shim(tmp)
    out_dir = os.path.join(tmp, "deep", "traces")
    rc, out, err = run(["run", "--shim", shim, "--out", out_dir, "--ports", "29600,29601",
                        "--max-mb", "8", "--", "/usr/bin/env"])
    expect(rc == 0, f"exit {rc}", err)
    env = env_of(out)
    expect(env["LD_PRELOAD"].split(":")[0] == shim, "shim first in LD_PRELOAD", env)
    expect(env["RDZVSCOPE_DIR"] == out_dir, "RDZVSCOPE_DIR absolute", env)
    expect(env["RDZVSCOPE_SHIM"] == shim, "RDZVSCOPE_SHIM", env)
    expect(env["RDZVSCOPE_PORTS"] == "29600,29601", "RDZVSCOPE_PORTS", env)
    expect(env["RDZVSCOPE_MAX_MB"] == "8", "RDZVSCOPE_MAX_MB", env)
    expect(os.path.isdir(out_dir) and mode(out_dir) == 0o700, "dir 0700", oct(mode(out_dir)))
    expect(mode(os.path.join(tmp, "deep")) == 0o700, "parents 0700 too")
    expect(f"rdzvscope: tracing into {out_dir}\n" in err, "announces the dir", err)


def case_verbosity(tmp):
    """-v says what analyze read and what it found; -q silences run's notice but not errors."""
    d = os.path.join(tmp, "traces")
    os.makedirs(d)
    make_trace("good", os.path.join(d, "a.rzt"))
    rc, out, err = run(["analyze", "-v", d])
    expect(rc == 0, f"exit {rc}", err)
    lines = err.splitlines()
    expect(any(line.startswith("rdzvscope analyze: read 1 trace file(s): 1 processes") for line in lines),
           "-v counts what was read", err)
    expect(any(line.startswith("rdzvscope analyze: diagnosed ") for line in lines), "-v names the class", err)
    rc, out, err = run(["analyze", d])
    expect(rc == 0 and err == "", "without -v, nothing on stderr for a clean input", err)

    shim = fake_shim(tmp)
    out_dir = os.path.join(tmp, "quiet")
    rc, out, err = run(["run", "-q", "--shim", shim, "--out", out_dir, "--", "/bin/true"])
    # (ld.so's own complaint about the fake shim may be there: not ours.)
    expect(rc == 0 and "tracing into" not in err, f"exit {rc}; -q: no 'tracing into' notice", err)
    rc, out, err = run(["run", "-q", "--shim", shim, "--out", out_dir, "--", "/no/such/program"])
    expect(rc == 127 and "rdzvscope run: /no/such/program: No such file or directory" in err,
           "-q still prints errors", rc, err)
    rc, out, err = run(["analyze", "-q", "-v", d])
    expect(rc == 2, f"exit {rc}: -q and -v exclude each other", err)


def case_run_relative_out(tmp):
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--shim", "shim/librdzvscope.so", "--out", "rel/t", "--",
                        "/usr/bin/env"], cwd=tmp)
    expect(rc == 0, f"exit {rc}", err)
    env = env_of(out)
    expect(env["RDZVSCOPE_DIR"] == os.path.join(tmp, "rel", "t"), "dir made absolute", env)
    expect(env["LD_PRELOAD"] == shim, "shim made absolute", env)


def case_run_default_out(tmp):
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--shim", shim, "--", "/usr/bin/env"], cwd=tmp,
                       env={"SLURM_JOB_ID": "777"})
    expect(rc == 0, f"exit {rc}", err)
    expect(env_of(out)["RDZVSCOPE_DIR"] == os.path.join(tmp, "rdzvscope-777"), "slurm dir",
           out)
    expect(mode(os.path.join(tmp, "rdzvscope-777")) == 0o700, "0700")
    rc, out, err = run(["run", "--shim", shim, "--", "/usr/bin/env"], cwd=tmp)
    expect(rc == 0, f"exit {rc}", err)
    d = env_of(out)["RDZVSCOPE_DIR"]
    name = os.path.basename(d)
    expect(os.path.dirname(d) == tmp and name.startswith("rdzvscope-20") and len(name) == 25,
           "timestamped dir in the current dir", d)


def case_run_shim_beside_exe(tmp):
    """Installed layout: bin/rdzvscope finds ../lib/librdzvscope.so by itself."""
    global RDZVSCOPE
    os.makedirs(os.path.join(tmp, "bin"))
    exe = os.path.join(tmp, "bin", "rdzvscope")
    shutil.copy2(RDZVSCOPE, exe)
    saved, RDZVSCOPE = RDZVSCOPE, exe
    try:
        rc, out, err = run(["run", "--out", os.path.join(tmp, "t"), "--", "/usr/bin/env"])
        expect(rc == 2 and os.path.join(tmp, "lib", "librdzvscope.so") in err,
               "names where it looked", rc, err)
        shim = fake_shim(tmp, "lib")
        rc, out, err = run(["run", "--out", os.path.join(tmp, "t"), "--", "/usr/bin/env"])
        expect(rc == 0, f"exit {rc}", err)
        expect(env_of(out)["LD_PRELOAD"] == shim, "found beside the exe", out)
    finally:
        RDZVSCOPE = saved


def case_run_env_shim(tmp):
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--out", os.path.join(tmp, "t"), "--", "/usr/bin/env"],
                       env={"RDZVSCOPE_SHIM": shim})
    expect(rc == 0, f"exit {rc}", err)
    expect(env_of(out)["LD_PRELOAD"] == shim, "RDZVSCOPE_SHIM used", out)
    other = fake_shim(tmp, "other")
    rc, out, err = run(["run", "--shim", other, "--out", os.path.join(tmp, "t"), "--",
                        "/usr/bin/env"], env={"RDZVSCOPE_SHIM": shim})
    expect(rc == 0 and env_of(out)["LD_PRELOAD"] == other, "--shim wins over the env", out)


def case_run_keeps_preload(tmp):
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"), "--",
                        "/usr/bin/env"], env={"LD_PRELOAD": f"/x/liba.so {shim}"})
    expect(rc == 0, f"exit {rc}", err)
    expect(env_of(out)["LD_PRELOAD"] == f"{shim}:/x/liba.so", "merged, shim once", out)


def case_run_no_command(tmp):
    shim = fake_shim(tmp)
    for args in (["run", "--shim", shim], ["run", "--shim", shim, "--"]):
        rc, out, err = run(args, cwd=tmp)
        expect(rc == 2, f"{args}: exit {rc}", err)
        expect("rdzvscope run:" in err, "usage error", err)


def case_run_exec_fails(tmp):
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"), "--",
                        "no-such-command-rdzvscope"])
    expect(rc == 127, f"exit {rc}", err)
    expect("rdzvscope run: no-such-command-rdzvscope: No such file or directory" in err,
           "names the command", err)


def case_run_verdict_status(tmp):
    # --verdict keeps the command's exit status, says nothing when it succeeds, and says how it
    # failed (with no traces here: these commands never use the network).
    out_dir = os.path.join(tmp, "t")
    rc, out, err = run(["run", "--verdict", "--out", out_dir, "--", "sh", "-c", "exit 7"])
    expect(rc == 7, f"exit {rc}", err)
    expect("rdzvscope: the command exited with status 7" in err, "says how it ended", err)
    expect("holds no trace and there is no verdict" in err, "no traces: no verdict, said so", err)
    rc, out, err = run(["run", "--verdict", "--out", out_dir, "--", "/bin/true"])
    expect(rc == 0 and "the command" not in err, f"success: exit {rc}, nothing said", err)
    rc, out, err = run(["run", "--verdict", "--out", out_dir, "--", "no-such-command-rdzvscope"])
    expect(rc == 127, f"exec failure: exit {rc}", err)
    expect("rdzvscope run: no-such-command-rdzvscope: No such file or directory" in err, "names it", err)
    # A command killed by a signal: rdzvscope ends by the same signal, without a core of its own.
    rc, out, err = run(["run", "--verdict", "--out", out_dir, "--", "sh", "-c", "kill -SEGV $$"], cwd=tmp)
    expect(rc == -signal.SIGSEGV, f"ends by SIGSEGV like the command: {rc}", err)
    expect("was killed by SIGSEGV" in err, "says so", err)
    expect(not any(n.startswith("core") for n in os.listdir(tmp)), "no core file", os.listdir(tmp))


def case_run_verdict_forwards_signals(tmp):
    # A scheduler's signals reach the command through rdzvscope, which stays its parent: the
    # command sees SIGUSR1 and goes on, then SIGTERM, and exits 5 from its handler.
    seen = os.path.join(tmp, "seen")
    child = ("import signal, sys, time\n"
             f"log = open({seen!r}, 'a', buffering=1)\n"
             "signal.signal(signal.SIGUSR1, lambda s, f: log.write('USR1\\n'))\n"
             "def term(s, f):\n    log.write('TERM\\n'); sys.exit(5)\n"
             "signal.signal(signal.SIGTERM, term)\n"
             "print('ready', flush=True)\n"
             "while True: time.sleep(0.05)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "RDZVSCOPE_SHIM")}
    p = subprocess.Popen([RDZVSCOPE, "run", "--verdict", "--out", os.path.join(tmp, "t"), "--",
                          sys.executable, "-c", child], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    expect(p.stdout.readline().strip() == "ready", "the command started")
    p.send_signal(signal.SIGUSR1)
    for _ in range(200):   # the handler has written it: the signal went through
        if os.path.exists(seen) and "USR1" in open(seen).read():
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    expect(p.returncode == 5, f"the command's own status: {p.returncode}", err)
    expect(open(seen).read().split() == ["USR1", "TERM"], "both signals reached it", open(seen).read())
    expect(f"rdzvscope passed on SIGUSR1 from pid {os.getpid()}" in err, "names the first signal and its sender", err)
    expect("exited with status 5" in err, "says how it ended", err)


def case_run_verdict_traced_failure(tmp):
    # With the real shim (found beside the executable): a rank whose store never answers. The
    # verdict comes from its trace, on stderr after the command's own output.
    out_dir = os.path.join(tmp, "t")
    port = free_port()
    child = ("import socket, sys\n"
             "for _ in range(3):\n"
             f"    try: socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
             "    except OSError as e: print('connect failed:', e, flush=True)\n"
             "sys.exit(1)\n")
    rc, out, err = run(["run", "--verdict", "--out", out_dir, "--", "/usr/bin/python3", "-c", child],
                       env={"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                            "MASTER_PORT": str(port)})
    expect(rc == 1, f"exit {rc}", err)
    expect(out.count("connect failed") == 3, "the command's own output", out)
    expect("rdzvscope: the command exited with status 1" in err, "heading", err)
    verdict = err[err.index("rdzvscope: the command"):]
    expect("VERDICT" in verdict and "initiating rank" in verdict, "the verdict follows", err)
    expect(f"rdzvscope analyze {out_dir}" in verdict, "and how to see more", err)


def case_run_bad_ports(tmp):
    shim = fake_shim(tmp)
    for ports in ("0", "65536", "29500,x", ""):
        rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"),
                            "--ports", ports, "--", "/bin/true"])
        # An empty --ports is CLI11's "needs an argument" or our own error: both exit 2.
        expect(rc == 2, f"--ports {ports!r}: exit {rc}", err)


def case_run_bad_max_mb(tmp):
    # The shim caps a trace file at 1024 MiB; run must refuse what the shim would ignore.
    shim = fake_shim(tmp)
    for mb in ("0", "1025", "65536", "x"):
        rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"),
                            "--max-mb", mb, "--", "/bin/true"])
        expect(rc == 2, f"--max-mb {mb!r}: exit {rc}", err)
    rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"),
                        "--max-mb", "1024", "--", "/bin/true"])
    expect(rc == 0, f"--max-mb 1024: exit {rc}", err)


def case_run_out_is_file(tmp):
    shim = fake_shim(tmp)
    f = os.path.join(tmp, "file")
    open(f, "w").close()
    rc, out, err = run(["run", "--shim", shim, "--out", f, "--", "/bin/true"])
    expect(rc == 2 and f in err, f"exit {rc}", err)


def case_run_args_after_dashdash(tmp):
    """Options after -- belong to the command, not to rdzvscope."""
    shim = fake_shim(tmp)
    rc, out, err = run(["run", "--shim", shim, "--out", os.path.join(tmp, "t"), "--",
                        "/bin/sh", "-c", "echo \"$0 $1\"", "--help", "--out"])
    expect(rc == 0, f"exit {rc}", err)
    expect(out == "--help --out\n", "arguments passed through", out)


if __name__ == "__main__":
    run_case(globals(), CASE)
