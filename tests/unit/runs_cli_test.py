#!/usr/bin/env python3
"""End-to-end tests of `rdzvscope analyze --runs` (one case per ctest test), on copies of the
real traces and logs of tests/golden/ (captured from real PyTorch runs), some with their run
id or clock rewritten by trace_patch.py.

usage: runs_cli_test.py RDZVSCOPE GOLDEN_DIR CASE
"""
import importlib.util
import json
import os
import shutil
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import trace_patch  # noqa: E402
from rdzvtest.cli import expect, run_case, run_cli  # noqa: E402

RDZVSCOPE, GOLDEN, CASE = sys.argv[1], sys.argv[2], sys.argv[3]


def run(args, **kw):
    """rdzvscope ARGS, the parent environment scrubbed (RDZVSCOPE read at each call)."""
    return run_cli(RDZVSCOPE, args, **kw)


def scenario(name, dest, **kw):
    return trace_patch.copy_scenario(os.path.join(GOLDEN, name), dest, **kw)


def runs_json(args):
    rc, out, err = run(["analyze", "--runs"] + args + ["--format", "json"])
    expect(rc == 0, f"exit {rc}", out, err)
    return json.loads(out), err


def case_same_rank_dir_of_runs(tmp):
    # Two retries of the straggler job (one host): rank 2 late both times. One directory of
    # run directories, each laid out as traces/ + logs/ below it.
    runs = os.path.join(tmp, "runs")
    scenario("straggler", os.path.join(runs, "try1"))
    scenario("straggler", os.path.join(runs, "try2"))
    j, err = runs_json([runs])
    expect(j["schema"] == "rdzvscope.runs/1", "schema", j)
    c = j["comparison"]
    expect(c["pattern"] == "same_rank" and c["class"] == "straggler_timeout", "comparison", c)
    expect([r["id"] for r in j["runs"]] == ["try1", "try2"], "ids: directory names, sorted", j["runs"])
    for r in j["runs"]:
        v = r["diagnosis"]["verdict"]
        expect(r["diagnosis"]["schema"] == "rdzvscope.diagnosis/1", "full diagnosis inside", r)
        expect(v["class"] == "straggler_timeout" and v["initiating_rank"] == 2 and v["initiating_host"] == "vm",
               "each run's verdict", v)
        expect(r["diagnosis"]["inputs"]["log_files"] == 4 and r["diagnosis"]["inputs"]["trace_files"] == 4,
               "the run's logs found below its directory", r["diagnosis"]["inputs"])
    expect("try1, try2" in c["summary"], "the summary names the runs", c)
    expect(j["skipped"] == [] and err == "", "nothing left out", j, err)


def case_mixed_classes_and_ids_from_traces(tmp):
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    for f in scenario("straggler", a):
        trace_patch.patch_header(f, run_id="job-1001")
    for f in scenario("store_killed", b):
        trace_patch.patch_header(f, slurm_job_id="1002")
    j, _ = runs_json([a, b])
    c = j["comparison"]
    expect(c["pattern"] == "mixed_classes" and c["class"] is None, "comparison", c)
    expect([r["id"] for r in j["runs"]] == ["job-1001", "1002"], "ids from TORCHELASTIC_RUN_ID / SLURM_JOB_ID",
           j["runs"])
    expect([r["diagnosis"]["verdict"]["class"] for r in j["runs"]] == ["straggler_timeout", "broken_pipe"],
           "classes", j["runs"])
    expect("job-1001: straggler_timeout" in c["summary"], "summary", c)
    expect(len(c["hosts"]) == 2 and c["hosts"][0]["run"] == "job-1001", "hosts per run", c["hosts"])


def case_agents_named_by_rdzv_id(tmp):
    # A run of torchrun agents only (no worker ever started): agents carry no
    # TORCHELASTIC_RUN_ID, the --rdzv-id of their command line names the run.
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    scenario("torch2.13-torchrun_c10d-name_resolution_agent", a)
    scenario("healthy", b)
    j, _ = runs_json([a, b])
    expect([r["id"] for r in j["runs"]] == ["e2e-name_resolution_agent", "b"],
           "ids: the agents' --rdzv-id, else the directory's name", j["runs"])


def case_moving_rank(tmp):
    # The straggler of run b is "rank 3": swap the rank numbers of ranks 2 and 3 in its copy.
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    scenario("straggler", a)
    for f in scenario("straggler", b):
        r = trace_patch.rank_of(f)
        if r in (2, 3):
            with open(f, "r+b") as fh:
                fh.seek(trace_patch.OFF_RANK)
                fh.write((5 - r).to_bytes(4, "little", signed=True))
    shutil.rmtree(os.path.join(b, "logs"))  # the logs would still say rank 2
    j, _ = runs_json([a, b])
    expect([r["diagnosis"]["verdict"]["initiating_rank"] for r in j["runs"]] == [2, 3], "ranks", j["runs"])
    expect(j["comparison"]["pattern"] == "moving", "pattern", j["comparison"])


def case_duplicate_ids(tmp):
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    for d in (a, b):
        for f in scenario("healthy", d):
            trace_patch.patch_header(f, slurm_job_id="77")
    j, _ = runs_json([a, b])
    expect([r["id"] for r in j["runs"]] == ["77 (a)", "77 (b)"], "ids made unique", j["runs"])
    expect(j["comparison"]["pattern"] == "all_healthy", "pattern", j["comparison"])


def case_text_and_markdown(tmp):
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    scenario("name_resolution_one", a)
    scenario("name_resolution_one", b)
    rc, out, err = run(["analyze", "--runs", a, b])
    expect(rc == 0, f"exit {rc}", err)
    lines = out.splitlines()
    expect(lines[0].startswith("VERDICT  same_rank: name_resolution in all 2 runs (a, b)"), "verdict first", out)
    expect(any(l.split()[:2] == ["a", "name_resolution"] for l in lines), "a table row per run", out)
    rc, out, err = run(["analyze", "--runs", a, b, "--format", "markdown"])
    expect(rc == 0 and "**Reproduced across runs:** yes" in out and "| a | name\\_resolution" not in out, "markdown", out)
    # The class, with its cause where the rule names one (a name that does not exist).
    expect("| a | name_resolution (name_unknown) |" in out, "markdown table row", out)
    rc, out, err = run(["analyze", "--runs", a, b, "--fail-on-problem"])
    expect(rc == 3, f"--fail-on-problem: exit {rc}", err)


def case_bad_usage(tmp):
    a = os.path.join(tmp, "a")
    scenario("healthy", a)
    rc, out, err = run(["analyze", "--runs"])
    expect(rc == 2 and "--runs needs the run directories" in err and out == "", f"no paths: exit {rc}", err)
    for extra in (["--log", os.path.join(a, "logs", "rank0.log")], ["--timeline", os.path.join(tmp, "t.json")],
                  ["--html", os.path.join(tmp, "r.html")]):
        rc, out, err = run(["analyze", "--runs", a] + extra)
        expect(rc == 2 and f"{extra[0]} cannot be used with --runs" in err and out == "", f"{extra}: exit {rc}", err)
    expect(not os.path.exists(os.path.join(tmp, "t.json")), "no timeline written")
    rc, out, err = run(["analyze", "--runs", a, os.path.join(tmp, "missing")])
    expect(rc == 2 and "missing: No such file or directory" in err, f"missing path: exit {rc}", err)


def case_unreadable_run_left_out(tmp):
    good, garbage, empty = (os.path.join(tmp, n) for n in ("good", "garbage", "empty"))
    scenario("healthy", good)
    os.makedirs(garbage)
    with open(os.path.join(garbage, "vm.1.rzt"), "wb") as f:
        f.write(b"not a trace" * 500)
    os.makedirs(empty)
    j, err = runs_json([good, garbage, empty])
    expect([r["id"] for r in j["runs"]] == ["good"], "the good run analyzed", j["runs"])
    expect([s["path"] for s in j["skipped"]] == [empty, garbage], "the others left out, said why", j["skipped"])
    expect(f"{garbage}: no readable trace or log" in err and f"{empty}: no *.rzt trace file" in err, "stderr", err)
    expect(j["comparison"]["pattern"] == "single_run", "one run left to compare", j["comparison"])
    rc, out, err = run(["analyze", "--runs", garbage, empty])
    expect(rc == 2 and "no run could be analyzed" in err, f"nothing readable: exit {rc}", err)


def case_sequential_runs_in_one_dir_hinted(tmp):
    # Two retries' traces dropped into one directory: different run ids, the second 600 s later.
    d = os.path.join(tmp, "mixed")
    os.makedirs(d)
    for name, shift, rid in (("r1", 0, "job-1"), ("r2", 600, "job-2")):
        for f in scenario("healthy", os.path.join(tmp, name), logs=False):
            trace_patch.patch_header(f, run_id=rid, shift_s=shift)
            shutil.copy(f, os.path.join(d, name + "-" + os.path.basename(f)))
    rc, out, err = run(["analyze", d])
    expect(rc == 0, f"exit {rc}", err)
    expect("2 runs one after the other (job-1 (4 processes), job-2 (4 processes))" in err and "--runs" in err,
           "hint on stderr", err)
    # Two ids at the same time (a second copy with other pids, 0.5 s later) are a collision,
    # not retries: no hint.
    same = os.path.join(tmp, "same")
    os.makedirs(same)
    for name, shift, rid in (("r3", 0, "job-3"), ("r4", 0.5, "job-4")):
        for f in scenario("healthy", os.path.join(tmp, name), logs=False):
            pid = trace_patch.header_field(f, trace_patch.OFF_PID, "<i")
            trace_patch.patch_header(f, run_id=rid, shift_s=shift, pid=pid + (1000 if name == "r4" else 0))
            shutil.copy(f, os.path.join(same, name + "-" + os.path.basename(f)))
    rc, out, err = run(["analyze", same])
    expect(rc == 0 and "one after the other" not in err, f"overlapping runs: exit {rc}", err)


if __name__ == "__main__":
    run_case(globals(), CASE)
