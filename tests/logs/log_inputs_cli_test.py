#!/usr/bin/env python3
"""End-to-end tests of what `rdzvscope analyze --log` reads (issue 13's input side), one case
per ctest test: standard input, .gz logs, a directory, a truncated .gz, per-task file names
(Slurm %j-%t, torchrun --log-dir) and line prefixes (srun --label, host:rank:, kubectl
--prefix). The logs are the project's own 2.13 straggler run (tests/corpus/logs/own): rank 2
joined late, and only its file name says which rank its c10d lines belong to.

usage: log_inputs_cli_test.py RDZVSCOPE CORPUS_LOGS_DIR CASE
"""
import importlib.util
import json
import os
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import log_inputs  # noqa: E402
from rdzvtest.cli import expect, run_case  # noqa: E402

RDZVSCOPE, CORPUS_LOGS, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
STRAGGLER = os.path.join(CORPUS_LOGS, "own", "torch2.13-straggler")
WANT_CLASS, WANT_RANK = "straggler_timeout", 2


def logs():
    return log_inputs.without_own_prefixes(log_inputs.rank_logs(STRAGGLER))


def expect_straggler(args, stdin=None, want_rank=WANT_RANK):
    rc, v, out, err = log_inputs.analyze(RDZVSCOPE, args, stdin=stdin)
    expect(rc == 0 and v is not None, f"analyze {args}: exit {rc}", out[-2000:], err[-2000:])
    expect(v.get("class") == WANT_CLASS and v.get("initiating_rank") == want_rank,
           f"analyze {args}: got {v.get('class')} rank {v.get('initiating_rank')}, "
           f"want {WANT_CLASS} rank {want_rank}", v.get("summary"), err)
    return out, err


def case_stdin_merged_torchrun_prefixes(tmp):
    # `... 2>&1 | rdzvscope analyze --log -`: torchrun's "[rankN]:" on every line.
    out, _ = expect_straggler(["--log", "-"], stdin=log_inputs.merged(logs(), "[rank{rank}]:"))
    expect("<stdin>" in out, "the report does not call standard input <stdin>", out[-2000:])


def case_stdin_gzip(tmp):
    # `cat job.log.gz | rdzvscope analyze --log -`, srun --label prefixes.
    expect_straggler(["--log", "-"], stdin=log_inputs.gzip_bytes(log_inputs.merged(logs(), "{rank}: ")))


def case_gzip_files(tmp):
    paths = log_inputs.write_rank_logs(logs(), tmp, "rank{rank}.log.gz", compress=True)
    expect_straggler(sum((["--log", p] for p in paths), []))


def case_directory(tmp):
    job = os.path.join(tmp, "job")
    log_inputs.write_rank_logs(logs(), job, "logs/rank{rank}.log")
    os.makedirs(os.path.join(job, "traces"))
    with open(os.path.join(job, "traces", "rank0.rzt"), "wb") as f:
        f.write(b"RZT\x00\x01\x00\x00binary trace")
    _, err = expect_straggler(["--log", job])
    expect("skipped 1 binary file" in err and "4 log files read" in err,
           "no note of the skipped trace file", err)


def case_directory_without_logs(tmp):
    empty = os.path.join(tmp, "nothing")
    os.makedirs(empty)
    rc, v, out, err = log_inputs.analyze(RDZVSCOPE, ["--log", empty])
    expect(rc == 2 and v is None, f"exit {rc}, want 2 and no report", out, err)
    expect(f"log directory {empty}: no log file in it" in err, "the error does not name the directory", err)


def case_truncated_gzip(tmp):
    data = log_inputs.gzip_bytes(log_inputs.merged(logs(), "[rank{rank}]:"))
    path = os.path.join(tmp, "job.log.gz")
    with open(path, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    rc, v, out, err = log_inputs.analyze(RDZVSCOPE, ["--log", path])
    lines = [ln for ln in err.splitlines() if "truncated gzip data" in ln]
    expect(len(lines) == 1 and path in lines[0], "no one-line error naming the file and the problem", err)
    # As for a damaged trace: the damage is reported, what came before the cut is analysed.
    expect(rc == 0 and v is not None, f"exit {rc}: the lines before the cut were not analysed", out, err)
    inputs = json.loads(out)["inputs"]
    expect(any(path in p for p in inputs["problems"]), "the report does not list the damage", json.dumps(inputs))


def case_slurm_per_task_files(tmp):
    # sbatch/srun --output=job-%j-%t.out: one file per task, the task id is the rank.
    paths = log_inputs.write_rank_logs(logs(), tmp, "job-4242-{rank}.out")
    expect_straggler(sum((["--log", p] for p in paths), []))
    # The same directory given whole.
    expect_straggler(["--log", tmp])


def case_torchrun_log_dir(tmp):
    # torchrun --log-dir: RUN_ID/attempt_0/LOCAL_RANK/stderr.log
    root = os.path.join(tmp, "torchrun-logs")
    log_inputs.write_rank_logs(logs(), root, "job_abc/attempt_0/{rank}/stderr.log")
    expect_straggler(["--log", root])


def case_numbers_outside_the_patterns_are_no_rank(tmp):
    # "train-N.log" is no recognised pattern: the straggler's lines have no rank to name.
    paths = log_inputs.write_rank_logs(logs(), tmp, "train-{rank}.log")
    rc, v, out, err = log_inputs.analyze(RDZVSCOPE, sum((["--log", p] for p in paths), []))
    expect(rc == 0 and v is not None, f"exit {rc}", out, err)
    expect(v.get("initiating_rank") != WANT_RANK, f"rank {v.get('initiating_rank')} from an unrecognised name",
           v.get("summary"))


def case_host_rank_and_kubectl_prefixes(tmp):
    expect_straggler(["--log", "-"], stdin=log_inputs.merged(logs(), "node07:{rank}: "))
    expect_straggler(["--log", "-"], stdin=log_inputs.merged(logs(), "[pod/train-0/pytorch] [rank{rank}]:"))


if __name__ == "__main__":
    run_case(globals(), CASE)
