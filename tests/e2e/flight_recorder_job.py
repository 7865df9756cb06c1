#!/usr/bin/env python3
"""PyTorch's Flight Recorder dumps read by `rdzvscope analyze` (issue 28), from a real job.

A 4-rank gloo job on PyTorch 2.x (tests/e2e/rank.py, ranks started by hand over TCPStore),
TORCH_FR_BUFFER_SIZE set, init_process_group timeout 2 s; rank 2 sleeps after
init_process_group, before the first all_reduce, while ranks 0, 1, 3 enter it and time out.
Each rank writes `torch._C._distributed_c10d._dump_fr_trace()` to
${TORCH_FR_DUMP_TEMP_FILE}<rank> once its all_reduce failed (E2E_FR_DUMP=1): the file NCCL's
watchdog writes on a timeout, under the same name. The CPU build cannot make NCCL's dump (gloo
has no watchdog and writes none on its own), so the job's own call stands in for it.

  never_entered  rank 2 dumps from a thread 3.5 s after init_process_group, still asleep, as
                 NCCL dumps every rank once one times out (E2E_FR_DUMP_AFTER_S); traced with
                 `rdzvscope run`, the dumps written into the trace directory. Analyzed from the
                 dumps alone (--flight-recorder), with the logs, and from the trace directory
                 (traces, logs, and the dumps found there under their default names).
  entered_late   rank 2 dumps only after its own all_reduce failed (it entered collective 1
                 once the others had given up); untraced, the dumps alone.
  missing_dump   the never_entered run again without rank 3's dump: rank 3 is named as having
                 none, not as late.

    flight_recorder_job.py --rdzvscope build/bin/rdzvscope --python .venv/torch-2.13.0/bin/python
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest.launch import RANK_SCRIPT, Launcher, job_env, start  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

WORLD = 4
STALLED = 2
TIMEOUT_S = 2
STALL_S = 5
JOB_BOUND_S = 60
PEER_GONE = ("Connection closed by peer", "Connection reset by peer")   # gloo's pair.cc


class Run:
    def __init__(self, work, name):
        self.dir = os.path.join(work, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.trace_dir = os.path.join(self.dir, "traces")
        self.log_dir = os.path.join(self.dir, "logs")
        self.dump_dir = self.trace_dir   # where TORCH_FR_DUMP_TEMP_FILE points
        os.makedirs(self.trace_dir)
        os.makedirs(self.log_dir)
        self.procs = []
        self.t0 = time.monotonic()


def launch(args, run, traced, dump_while_stalled):
    port = free_port()
    for rank in range(WORLD):
        extra = dict(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo",
                     OMP_NUM_THREADS="1", E2E_TIMEOUT_S=str(TIMEOUT_S),
                     TORCH_FR_BUFFER_SIZE="200", E2E_FR_DUMP="1",
                     TORCH_FR_DUMP_TEMP_FILE=os.path.join(run.dump_dir, "nccl_trace_rank_"))
        if rank == STALLED:
            extra.update(E2E_FAULT="stall@after_init", E2E_STALL_S=str(STALL_S))
            if dump_while_stalled:
                extra["E2E_FR_DUMP_AFTER_S"] = "3.5"
        cmd = [args.python, RANK_SCRIPT]
        if traced:
            cmd = [args.rdzvscope, "run", "--out", run.trace_dir, "--"] + cmd
        run.procs.append(start(f"rank{rank}", rank, cmd, job_env(**extra),
                               os.path.join(run.log_dir, f"rank{rank}.log")))


def check_fault(run):
    """The fault really happened: every rank failed its all_reduce and left its dump."""
    for p in run.procs:
        text = p.text()
        if p.rc != 1 or "e2e: FAILED" not in text:
            raise Fail(f"rank {p.rank} did not fail its all_reduce (rc {p.rc}):\n{text[-2000:]}")
        if "flight recorder dumped" not in text:
            raise Fail(f"rank {p.rank} wrote no Flight Recorder dump:\n{text[-2000:]}")
    # A rank that entered either timed out itself or, waiting on a pair with a rank that had
    # already timed out and exited, found that pair closed first (the ranks enter the all_reduce
    # up to a few hundred ms apart on a loaded machine); at least one timed out. Both entered
    # collective 1, which is what their dumps show.
    waited = [p for p in run.procs if p.rank != STALLED]
    timed_out = [p.rank for p in waited if "Timed out waiting" in p.text()]
    for p in waited:
        if p.rank not in timed_out and not any(m in p.text() for m in PEER_GONE):
            raise Fail(f"rank {p.rank} neither timed out in its all_reduce nor lost a pair:\n{p.text()[-2000:]}")
    if not timed_out:
        raise Fail("no rank timed out in its all_reduce")


def analyze(args, argv, expect_rc=0):
    p = subprocess.run([args.rdzvscope, "analyze"] + argv + ["--format", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=cli.ANALYZE_TIMEOUT_S)
    if p.returncode != expect_rc:
        raise Fail(f"analyze {' '.join(argv)} exited {p.returncode}, not {expect_rc}:\n{p.stdout[-3000:]}{p.stderr}")
    return json.loads(p.stdout) if expect_rc == 0 else p.stderr


def expect_straggler(diag, what, kind, confidence="high", waited=(0, 1, 3)):
    v = diag["verdict"]
    fr = diag.get("flight_recorder")
    errors = []
    if v["class"] != "straggler_timeout" or v["initiating_rank"] != STALLED:
        errors.append(f"verdict {v['class']} rank {v['initiating_rank']}, not straggler_timeout rank {STALLED}")
    if not fr or fr["kind"] != kind or fr["behind_ranks"] != [STALLED] or fr["sequence"] != 1 \
            or fr["op"] != "all_reduce" or fr["waited_ranks"] != list(waited):
        errors.append(f"flight_recorder is {fr}")
    if confidence and v["confidence"] != confidence:
        errors.append(f"confidence {v['confidence']}, not {confidence}")
    if errors:
        raise Fail(f"{what}: " + "; ".join(errors) + f"\n{json.dumps(v, indent=1)}")
    print(f"ok: {what}: {v['summary'][:160]}")


def logs_of(run):
    return [os.path.join(run.log_dir, f"rank{r}.log") for r in range(WORLD)]


def one_run(args, name, traced, dump_while_stalled):
    launcher = Launcher(args.rdzvscope, traced=traced)
    run = Run(args.work, name)
    launch(args, run, traced, dump_while_stalled)
    launcher.wait_all(run, JOB_BOUND_S)
    print(f"{name}: the job took {time.monotonic() - run.t0:.1f} s")
    check_fault(run)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="fr-job-")
    try:
        run = one_run(args, "never_entered", traced=True, dump_while_stalled=True)
        dumps_only = os.path.join(run.dir, "dumps")
        os.makedirs(dumps_only)
        for r in range(WORLD):
            shutil.copy(os.path.join(run.dump_dir, f"nccl_trace_rank_{r}"), dumps_only)
        expect_straggler(analyze(args, ["--flight-recorder", dumps_only]), "dumps alone", "never_entered")
        expect_straggler(analyze(args, ["--flight-recorder", dumps_only, "--log"] + logs_of(run)),
                         "dumps and logs", "never_entered")
        # The traces decide who never sent on its pairs; the dumps found in the trace directory
        # are their evidence beside.
        both = analyze(args, [run.trace_dir, "--log"] + logs_of(run))
        expect_straggler(both, "traces, logs and the dumps beside them", "never_entered")
        if not any("Flight Recorder" in e for f in both["findings"] for e in f["evidence"]):
            raise Fail(f"the traces' verdict does not cite the dumps: {json.dumps(both['findings'], indent=1)}")

        os.unlink(os.path.join(dumps_only, "nccl_trace_rank_3"))
        missing = analyze(args, ["--flight-recorder", dumps_only])
        expect_straggler(missing, "rank 3's dump missing", "never_entered", confidence="medium", waited=(0, 1))
        if missing["flight_recorder"]["ranks_without_dump"] != [3] or "rank 3 left no dump" not in missing["verdict"]["summary"]:
            raise Fail(f"rank 3's missing dump is not said: {missing['verdict']['summary']}")

        late = one_run(args, "entered_late", traced=False, dump_while_stalled=False)
        expect_straggler(analyze(args, ["--flight-recorder", late.dump_dir]), "entered late, dumps alone", "entered_late")

        # A damaged dump: one line naming it, exit 2.
        bad = os.path.join(run.dir, "bad")
        os.makedirs(bad)
        with open(os.path.join(bad, "nccl_trace_rank_0"), "wb") as f:
            f.write(open(os.path.join(run.dump_dir, "nccl_trace_rank_0"), "rb").read()[:100])
        err = analyze(args, ["--flight-recorder", os.path.join(bad, "nccl_trace_rank_0")], expect_rc=2)
        if "nccl_trace_rank_0" not in err or "truncated" not in err:
            raise Fail(f"a truncated dump's error does not name it: {err}")
        print("ok: a truncated dump is an error naming the file")
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    if not os.environ.get("KEEP"):
        shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
