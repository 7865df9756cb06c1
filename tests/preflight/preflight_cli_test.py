#!/usr/bin/env python3
"""The built `rdzvscope preflight` on this machine alone (no cluster): bad usage is one line on
stderr and exit 2; the endpoint comes from the option or the environment; a store host on
127.0.0.1 binds a free port, and waits for nodes that never come. Under torchrun's and
Slurm's variables (no RANK): the endpoint, the number of nodes and their names from them, the
node told by its node rank; the job key from --job-id or the environment. `rdzvscope analyze`
shows the reports `--out` wrote beside traces (text, Markdown, JSON, the HTML page, and per
run with --runs).

    preflight_cli_test.py RDZVSCOPE CASE
"""
import importlib.util
import json
import os
import shutil
import socket
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.cli import expect, run_case, run_cli  # noqa: E402
from rdzvtest.launch import read  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

RDZVSCOPE = None
# The job's variables of the test's own environment must not decide for the preflight.
JOB_ENV = ("MASTER_ADDR", "MASTER_PORT", "PET_RDZV_ENDPOINT", "WORLD_SIZE", "PET_NNODES",
           "PET_NPROC_PER_NODE", "PET_NODE_RANK", "SLURM_JOB_NODELIST", "SLURM_NODEID", "GROUP_RANK",
           "RANK", "PET_RDZV_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")


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
                "--nodes", "--verbose", "--job-id"):
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


def case_job_id(tmp):
    """The job key: --job-id, else PET_RDZV_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID; a bad one is
    a usage error of one line."""
    port = free_port()
    ep = ["--endpoint", f"127.0.0.1:{port}", "--format", "json"]
    rc, out, err = preflight(ep, env={"SLURM_JOB_ID": "4242"})
    expect(rc == 0 and report(out)["job"] == {"id": "4242", "source": "SLURM_JOB_ID"}, "SLURM_JOB_ID",
           out, err)
    rc, out, err = preflight(ep, env={"SLURM_JOB_ID": "4242", "PET_RDZV_ID": "none",
                                      "TORCHELASTIC_RUN_ID": "run-9"})
    expect(report(out)["job"] == {"id": "run-9", "source": "TORCHELASTIC_RUN_ID"},
           "PET_RDZV_ID 'none' (torchrun's default) is no job key", out, err)
    rc, out, err = preflight(ep + ["--job-id", "train-A"], env={"PET_RDZV_ID": "rdzv-1"})
    expect(report(out)["job"] == {"id": "train-A", "source": "--job-id"}, "--job-id first", out, err)
    rc, out, err = preflight(ep)
    expect(report(out)["job"] == {"id": None, "source": None}, "no job key", out, err)
    for bad in ("", "a b", "x" * 129, "tab\there"):
        rc, out, err = preflight(ep + ["--job-id", bad])
        expect_usage(rc, out, err, "rdzvscope preflight: --job-id '")
        expect(len(err.strip().splitlines()) == 1, f"--job-id {bad!r}: more than one line", err)


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


def case_torchrun_env(tmp):
    """Before torchrun in a job script: no RANK; the endpoint from PET_RDZV_ENDPOINT or the
    --rdzv-endpoint flag, the nodes from PET_NNODES or --nnodes, the node from PET_NODE_RANK."""
    port = free_port()
    env = {"PET_RDZV_ENDPOINT": f"127.0.0.1:{port}", "PET_NNODES": "1", "PET_NODE_RANK": "0",
           "PET_NPROC_PER_NODE": "4"}
    rc, out, err = preflight(["--format", "json"], env=env)
    expect(rc == 0, f"exit {rc}", out, err)
    r = report(out)
    expect(r["endpoint"]["source"] == "PET_RDZV_ENDPOINT" and r["endpoint"]["port"] == port,
           f"endpoint {r['endpoint']}", out)
    expect(r["node"] == {"rank": 0, "source": "PET_NODE_RANK"}, f"node {r.get('node')}", out)
    expect(r["role"] == "store_host" and r["world_size"] == 1, "role / world size", out)
    expect(r["ranks"] == {"count": 5, "source": "PET_NNODES x (PET_NPROC_PER_NODE + 1)"},
           f"ranks {r['ranks']}", out)
    rc, out, err = preflight(["--rdzv-endpoint", f"127.0.0.1:{port}", "--nnodes", "1:1"])
    expect(rc == 0, f"--rdzv-endpoint / --nnodes: exit {rc}", out, err)
    expect(f"-> 127.0.0.1:{port}" in out and "this node only" in out, "first line", out)
    # a node rank in the first line of the text report
    rc, out, err = preflight(["--rdzv-endpoint", f"127.0.0.1:{port}"], env={"GROUP_RANK": "3"})
    expect(rc == 0 and "(node 3, from GROUP_RANK)" in out.splitlines()[0], "GROUP_RANK", out, err)
    # PET_NNODES=2: the store host waits for the other node, as with --world-size 2
    rc, out, err = preflight(["--timeout", "1"], env=dict(env, PET_NNODES="2"))
    expect(rc == 3 and "2 nodes meeting" in " ".join(out.split()), f"PET_NNODES=2: exit {rc}", out, err)
    # elastic ranges have no fixed number of nodes to wait for
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nnodes", "1:4"])
    expect_usage(rc, out, err, "--nnodes '1:4'")
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nnodes", "2", "--world-size", "3"])
    expect_usage(rc, out, err, "--world-size 3 but --nnodes 2")
    rc, out, err = preflight(["--format", "json"], env=dict(env, PET_NNODES="1:4"))
    expect(rc == 0 and report(out)["world_size"] is None, "PET_NNODES=1:4 is no meeting", out, err)
    expect("PET_NNODES=1:4 is no fixed number" in err, "PET_NNODES=1:4 not said", err)


def case_slurm_nodelist(tmp):
    """Inside a Slurm job: SLURM_JOB_NODELIST names the nodes (and their number), SLURM_NODEID the
    node; a malformed list is a usage error quoting it."""
    port = free_port()
    me = socket.gethostname()
    env = {"SLURM_JOB_NODELIST": f"{me},gpu[01-02]", "SLURM_NODEID": "0"}
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--timeout", "1", "--format",
                              "json"], env=env)
    expect(rc == 3, f"exit {rc}, want 3", out, err)
    r = report(out)
    expect(r["world_size"] == 3 and r["node"] == {"rank": 0, "source": "SLURM_NODEID"},
           f"world size {r['world_size']}, node {r.get('node')}", out)
    nodes = [c for c in r["checks"] if c["name"] == "nodes"]
    expect(nodes and "never showed up: gpu01, gpu02" in nodes[0]["measured"], "missing nodes", out)
    # --nnodes 2 against a list of 3: the list is set aside, said once
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nnodes", "2", "--timeout", "1"],
                             env=env)
    expect(rc == 3 and "SLURM_JOB_NODELIST names 3 node(s)" in err, "list of another size", out, err)
    for bad, why in (("gpu[01-", "'[' without ']'"), ("gpu[3-1]", "runs backwards"),
                     ("a,,b", "empty name")):
        rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}"], env={"SLURM_JOB_NODELIST": bad})
        expect_usage(rc, out, err, f"SLURM_JOB_NODELIST: hostlist '{bad}': ")
        expect(why in err, f"{bad}: reason", err)
    # --nodes wins over the list
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nodes", me, "--format", "json"],
                             env=env)
    expect(rc == 0 and report(out)["world_size"] == 1, "--nodes over SLURM_JOB_NODELIST", out, err)


def case_analyze_shows_preflight(tmp):
    """preflight --out into the trace directory: analyze shows it beside the traces (text,
    markdown, JSON), and says which files it could not read."""
    port = free_port()
    traces = os.path.join(tmp, "traces")
    shutil.copytree(os.path.join(GOLDEN, "healthy", "traces"), traces)
    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--format", "json"], unset=JOB_ENV)
    expect(rc == 0 and "preflight" not in json.loads(out), "a preflight key without reports", out, err)
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{port}", "--nodes", "me,other", "--timeout",
                              "1", "--out", traces], env={"PET_NODE_RANK": "0"})
    expect(rc == 3, f"preflight exit {rc}, want 3", out, err)
    host = socket.gethostname()

    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--format", "json"], unset=JOB_ENV)
    expect(rc == 0, f"analyze exit {rc}", out, err)
    d = json.loads(out)
    pf = d.get("preflight") or {}
    expect(pf.get("files") == 1 and len(pf.get("nodes", [])) == 1, f"preflight {pf}", out)
    n = pf["nodes"][0]
    expect(n["host"] == host and n["node_rank"] == 0 and n["role"] == "store_host"
           and n["can_rendezvous"] is False and n["verdict"] == "fail", f"node {n}", out)
    expect([f["name"] for f in n["failed"]] == ["nodes"] and "never showed up" in n["failed"][0]["measured"]
           and n["failed"][0]["fix"], f"failed {n['failed']}", out)
    expect(d["verdict"]["class"] == "healthy", "the verdict changed", out)

    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces], unset=JOB_ENV)
    flat = " ".join(out.split())
    for needle in ("PREFLIGHT 1 node report(s)", "1 node(s) could not rendezvous",
                   f"{host} (node 0) store host", "CANNOT rendezvous", "FAIL nodes",
                   "never showed up: me, other", "fix:"):
        expect(needle in flat, f"text report lacks {needle!r}", out)
    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--format", "markdown"], unset=JOB_ENV)
    expect("### Preflight (before the job started)" in out and "**cannot rendezvous**" in out
           and "**nodes**" in out, "markdown section", out)
    page = os.path.join(tmp, "report.html")
    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--html", page], unset=JOB_ENV)
    html = read(page)
    section = html[html.find('<section id="preflight">'):html.find('<section id="inputs">')]
    for needle in ("<h2>Preflight (before the job started)</h2>",
                   f"1 node(s); could not rendezvous: {host} (node 0) (nodes)",
                   f"<tr class=\"bad\"><td>{host} (node 0)</td><td>store host</td>",
                   "CANNOT rendezvous", "never showed up: me, other", "(fix: look at those nodes"):
        expect(needle in section, f"the HTML page's preflight section lacks {needle!r}", section or html[-3000:])
    # What the reports say is escaped like every input of the page.
    with open(os.path.join(traces, "preflight.evil.json"), "w") as f:
        json.dump({"schema": "rdzvscope.preflight/1", "host": "<b>evil", "role": "node", "verdict": "fail",
                   "can_rendezvous": False,
                   "checks": [{"name": "connect", "verdict": "fail",
                               "measured": "<script>alert(1)</script>", "fix": "a & b"}]}, f)
    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--html", page], unset=JOB_ENV)
    html = read(page)
    expect(rc == 0 and "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
           and "&lt;b&gt;evil" in html and "a &amp; b" in html, "the preflight section is not escaped",
           html[html.find('<section id="preflight">'):][:3000])
    os.remove(os.path.join(traces, "preflight.evil.json"))

    # A file that is not a preflight report (nested a level down, as with %h directories).
    os.makedirs(os.path.join(traces, "sub"))
    with open(os.path.join(traces, "sub", "preflight.bogus.json"), "w") as f:
        f.write("{\"schema\": \"something/else\"}")
    rc, out, err = run_cli(RDZVSCOPE, ["analyze", traces, "--format", "json"], unset=JOB_ENV)
    pf = json.loads(out)["preflight"]
    expect(pf["files"] == 2 and len(pf["nodes"]) == 1 and len(pf["problems"]) == 1
           and "not a preflight report" in pf["problems"][0], f"preflight {pf}", out)


def case_runs_show_preflight(tmp):
    """analyze --runs: each run's preflight verdict beside its diagnosis (text, Markdown,
    JSON); a run whose preflight failed is marked; without preflight reports nothing changes."""
    runs = [os.path.join(tmp, r) for r in ("try1", "try2", "try3")]
    for r in runs:
        shutil.copytree(os.path.join(GOLDEN, "healthy", "traces"), r)
    rc, before, err = run_cli(RDZVSCOPE, ["analyze", "--runs"] + runs, unset=JOB_ENV)
    expect(rc == 0 and "preflight" not in before.lower(), "a preflight column without reports", before, err)
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{free_port()}", "--nodes", "me,other",
                              "--timeout", "1", "--out", runs[0]], env={"PET_NODE_RANK": "0"})
    expect(rc == 3, f"try1's preflight exit {rc}, want 3", out, err)
    rc, out, err = preflight(["--endpoint", f"127.0.0.1:{free_port()}", "--out", runs[1]])
    expect(rc == 0, f"try2's preflight exit {rc}, want 0", out, err)
    host = socket.gethostname()

    rc, out, err = run_cli(RDZVSCOPE, ["analyze", "--runs"] + runs, unset=JOB_ENV)
    expect(rc == 0, f"analyze --runs exit {rc}", out, err)
    rows = {l.split()[0]: l.split() for l in out.splitlines() if l.startswith(" try")}
    header = [l for l in out.splitlines() if "failed after" in l]
    expect(header and header[0].split()[-1] == "preflight", "no preflight column", out)
    expect([rows[t][-1] for t in ("try1", "try2", "try3")] == ["FAILED", "ok", "-"],
           f"preflight column {[rows.get(t) for t in ('try1', 'try2', 'try3')]}", out)
    flat = " ".join(out.split())
    for needle in (f"PREFLIGHT FAILED before the job: 1 node(s); could not rendezvous: {host} (node 0) (nodes)",
                   "preflight before the job: 1 node(s), every one could rendezvous"):
        expect(needle in flat, f"text lacks {needle!r}", out)
    expect(flat.count("preflight before the job") == 1, "try3 (no report) has a preflight line", out)

    rc, out, err = run_cli(RDZVSCOPE, ["analyze", "--runs", "--format", "markdown"] + runs, unset=JOB_ENV)
    expect("| Preflight |" in out and "| **failed**: 1 node(s); could not rendezvous:" in out
           and "| ok: 1 node(s), every one could rendezvous |" in out, "markdown preflight column", out)

    rc, out, err = run_cli(RDZVSCOPE, ["analyze", "--runs", "--format", "json"] + runs, unset=JOB_ENV)
    d = {r["id"]: r for r in json.loads(out)["runs"]}
    expect(d["try1"]["preflight"]["can_rendezvous"] is False
           and d["try1"]["preflight"]["nodes"][0]["failed"][0]["name"] == "nodes", f"try1 {d['try1'].get('preflight')}", out)
    expect(d["try2"]["preflight"]["can_rendezvous"] is True, f"try2 {d['try2'].get('preflight')}", out)
    expect("preflight" not in d["try3"], "try3 has a preflight key without a report", out)


if __name__ == "__main__":
    RDZVSCOPE = sys.argv[1]
    run_case(globals(), sys.argv[2])
