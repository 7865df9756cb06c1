#!/usr/bin/env python3
"""The built `rdzvscope preflight` on this machine alone (no cluster): bad usage is one line on
stderr and exit 2; the endpoint comes from the option or the environment; a store host on
127.0.0.1 binds a free port, and waits for nodes that never come.

    preflight_cli_test.py RDZVSCOPE CASE
"""
import importlib.util
import json
import os
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.cli import expect, run_case, run_cli  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

RDZVSCOPE = None
# The job's variables of the test's own environment must not decide for the preflight.
JOB_ENV = ("MASTER_ADDR", "MASTER_PORT", "PET_RDZV_ENDPOINT", "WORLD_SIZE", "PET_NNODES",
           "PET_NPROC_PER_NODE")


def preflight(args, env=None):
    return run_cli(RDZVSCOPE, ["preflight"] + args, env=env, unset=JOB_ENV)


def expect_usage(rc, out, err, needle):
    lines = err.strip().splitlines()
    expect(rc == 2, f"exit {rc}, want 2", out, err)
    expect(len(lines) >= 1 and needle in lines[0], f"stderr's first line lacks {needle!r}", err)
    expect(out == "", "a report on stdout for bad usage", out)


def case_help(tmp):
    rc, out, err = preflight(["--help"])
    expect(rc == 0, f"--help exit {rc}", err)
    for opt in ("--endpoint", "--world-size", "NODES", "--timeout", "--out", "--format", "--ranks",
                "--nodes", "--verbose"):
        expect(opt in out, f"--help lacks {opt}", out)


def case_unknown_flag(tmp):
    rc, out, err = preflight(["--endpoint", "h:1", "--frobnicate"])
    expect(rc == 2, f"exit {rc}", err)
    expect("frobnicate" in err, "stderr does not name the flag", err)


def case_bad_endpoint(tmp):
    for bad in ("node0:notaport", "node0:70000", "::1:29500", "[::1", "a b:1", ":29500"):
        rc, out, err = preflight(["--endpoint", bad])
        expect_usage(rc, out, err, "rdzvscope preflight: --endpoint: ")
        expect(len(err.strip().splitlines()) == 1, f"{bad}: more than one line", err)
    rc, out, err = preflight([], env={"MASTER_ADDR": "node0"})
    expect_usage(rc, out, err, "MASTER_ADDR is set but MASTER_PORT is not")
    rc, out, err = preflight([], env={"PET_RDZV_ENDPOINT": "node0:x"})
    expect_usage(rc, out, err, "PET_RDZV_ENDPOINT: 'node0:x'")


def case_no_endpoint(tmp):
    rc, out, err = preflight([])
    expect_usage(rc, out, err, "no endpoint: give --endpoint HOST:PORT")


def report(out):
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        raise AssertionError(f"not JSON ({e}): {out[:2000]}")


def case_endpoint_from_env(tmp):
    port = free_port()
    rc, out, err = preflight(["--format", "json"],
                             env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    expect(rc == 0, f"exit {rc}", out, err)
    r = report(out)
    want = {"host": "127.0.0.1", "port": port, "source": "MASTER_ADDR/MASTER_PORT"}
    expect(r["endpoint"] == want, f"endpoint {r['endpoint']}", out)
    rc, out, err = preflight(["--format", "json"],
                             env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1",
                                  "PET_RDZV_ENDPOINT": f"127.0.0.1:{port}"})
    expect(report(out)["endpoint"]["source"] == "PET_RDZV_ENDPOINT",
           "PET_RDZV_ENDPOINT not preferred", out)


def case_world_size_vs_nodes(tmp):
    rc, out, err = preflight(["--endpoint", "127.0.0.1:1", "--world-size", "2", "--nodes", "a,b,c"])
    expect_usage(rc, out, err, "--world-size 2 but --nodes names 3 node(s)")
    rc, out, err = preflight(["--endpoint", "127.0.0.1:1", "--world-size", "0"])
    expect(rc == 2, f"--world-size 0: exit {rc}", err)


def case_store_host_alone(tmp):
    port = free_port()
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--ranks", "8"])
    expect(rc == 0, f"exit {rc}", out, err)
    flat = " ".join(out.split())   # the report wraps its lines
    for needle in ("ROLE store host", "127.0.0.1 resolves to 127.0.0.1, an address of this node",
                   f"port {port} can be bound as c10d binds it", "somaxconn", "nofile",
                   "VERDICT can rendezvous"):
        expect(needle in flat, f"report lacks {needle!r}", out)


def case_store_host_waits_alone(tmp):
    port = free_port()
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nodes", "me,other",
                              "--timeout", "1"])
    expect(rc == 3, f"exit {rc}, want 3", out, err)
    expect("never showed up: " in " ".join(out.split()), "no missing node named", out)
    expect("VERDICT   CANNOT rendezvous: nodes" in out, "verdict line", out)


def case_json_and_out(tmp):
    port = free_port()
    out_dir = os.path.join(tmp, "traces")
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--format", "json",
                              "--out", out_dir, "-v"])
    expect(rc == 0, f"exit {rc}", out, err)
    r = report(out)
    expect(r["schema"] == "rdzvscope.preflight/1" and r["role"] == "store_host"
           and r["can_rendezvous"], "report fields", out)
    fields = {"name", "verdict", "measured", "fix", "data"}
    expect(all(set(c) >= fields for c in r["checks"]), "check fields", out)
    files = os.listdir(out_dir)
    expect(files == [f"preflight.{r['host']}.json"], f"--out wrote {files}")
    with open(os.path.join(out_dir, files[0])) as f:
        expect(json.load(f)["checks"] == r["checks"], "the --out file differs from stdout")
    expect("rdzvscope preflight: " in err and "role: store host" in err, "-v said nothing", err)


if __name__ == "__main__":
    RDZVSCOPE = sys.argv[1]
    run_case(globals(), sys.argv[2])
