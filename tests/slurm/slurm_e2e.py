#!/usr/bin/env python3
"""rdzvscope on a real Slurm cluster (issue 16): munged, slurmctld and one slurmd per host of
the network-namespace test cluster (rdzvtest.slurm), real jobs, real faults.

    slurm_e2e.py CASE --rdzvscope BUILD/bin/rdzvscope --python VENV/bin/python3
                      [--spank BUILD/lib/rdzvscope_spank.so] [--work DIR] [--keep]

CASE
  sbatch_name_resolution   `sbatch --nodes=4 --gpus-per-node=0 --cpus-per-task=1
                           examples/slurm_job.sbatch examples/train_min.py` as docs/slurm.md
                           shows it (one torchrun agent per node, c10d rendezvous on node0, every
                           process under `rdzvscope run`), node0 missing from node3's /etc/hosts:
                           node3's agent cannot resolve the rendezvous host. Checks the job
                           failed, every node traced, the failed lookups on node3 only,
                           `rdzvscope analyze` on the job's trace directory (name_resolution,
                           node3, its agent), the summary.md the job's last step wrote; and a
                           plain `srun -N4 hostname`.
  spank                    plugstack.conf loads slurm/rdzvscope_spank.so (exclude=env), and
                           EpilogSlurmctld is examples/slurm_epilog.sh: `srun -N4
                           --rdzvscope=DIR` traces every node under DIR/YYYY/MM/DD/JOBID (the
                           existing LD_PRELOAD entry kept, the container variables set), the
                           same job without the option writes nothing, an excluded program is
                           left alone, and a failing `sbatch --rdzvscope=DIR` job is traced by
                           its batch script's srun and gets DIR/.../JOBID/summary.md from the
                           epilog.

Exit 77 (ctest: skipped) only where the test cannot run at all: not root, or Slurm/munge
missing and not installable (rdzvtest.slurm.missing_slurm). Every exit path stops the daemons,
the jobs and the hosts, and checks that nothing is left.
"""
import argparse
import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest import checks  # noqa: E402
from rdzvtest.checks import Fail, expect, log  # noqa: E402
from rdzvtest.cluster import Cluster  # noqa: E402
from rdzvtest.launch import job_env, read  # noqa: E402
from rdzvtest.slurm import SlurmCluster, missing_slurm  # noqa: E402
from rdzvtest.traces import events, failed_resolves  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SBATCH_SCRIPT = os.path.join(ROOT, "examples", "slurm_job.sbatch")
TRAIN = os.path.join(ROOT, "examples", "train_min.py")
EPILOG = os.path.join(ROOT, "examples", "slurm_epilog.sh")
HOSTS = 4
BAD_HOST = "node3"
JOB_BOUND_S = 60


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def job_environment(args, **extra):
    """What a user's shell would export to sbatch/srun: the CLI and torchrun on the PATH."""
    e = job_env()
    path = [os.path.dirname(os.path.abspath(args.rdzvscope)), os.path.dirname(args.python)]
    e["PATH"] = ":".join(path + [e.get("PATH", "/usr/bin:/bin")])
    e.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="eth0", PYTHONUNBUFFERED="1")
    e.update(extra)
    return e


def trace_hosts(files):
    return {f["header"].get("host") for f in files}


# ------------------------------------------------------------------------------- sbatch

def case_sbatch_name_resolution(args, work):
    errors = []
    shared = os.path.join(work, "shared")
    submit = os.path.join(work, "submit")
    os.makedirs(shared)
    os.makedirs(submit)
    with SlurmCluster(Cluster(HOSTS), os.path.join(work, "slurm"), keep=args.keep) as sc:
        # a short srun: every node runs a task, each in its own host
        t = time.monotonic()
        p = sc.cmd("node0", "srun", "-N4", "--ntasks-per-node=1", "hostname", timeout=30)
        got = sorted(p.stdout.split())
        log(f"srun -N4 hostname: {got} ({time.monotonic() - t:.1f}s)")
        expect(got == sc.cluster.hosts, f"srun -N4 hostname printed {got}", errors)

        # the fault: node3 cannot resolve node0, the rendezvous host
        removed = sc.edit_hosts(BAD_HOST, "node0")
        expect(removed == 1, f"removed {removed} lines naming node0 from {BAD_HOST}'s /etc/hosts",
               errors)
        r = sc.cmd(BAD_HOST, "getent", "hosts", "node0", check=False)
        expect(r.returncode == 2, f"`getent hosts node0` on {BAD_HOST} exited {r.returncode}", errors)

        env = job_environment(args, SHARED=shared, NPROC_PER_NODE="1",
                              RDZV_CONF="join_timeout=10,read_timeout=10", RDZV_TIMEOUT_S="5",
                              TRACE_MODE=args.trace_mode,
                              RDZVSCOPE_SHIM=os.path.join(os.path.dirname(os.path.dirname(
                                  args.rdzvscope)), "lib", "librdzvscope.so"))
        t = time.monotonic()
        # exactly what docs/slurm.md shows for a CPU-only cluster
        job = sc.sbatch("node0", "--nodes=4", "--gpus-per-node=0", "--cpus-per-task=1",
                        SBATCH_SCRIPT, TRAIN, env=env, cwd=submit)
        info = sc.wait_job(job, JOB_BOUND_S)
        took = time.monotonic() - t
        out_file = os.path.join(submit, f"rdzv-traced-{job}.out")
        out = read(out_file)
        log(f"job {job}: {info.get('JobState')} exit {info.get('ExitCode')} after {took:.1f}s "
            f"on {info.get('NodeList')}")
        expect(info.get("JobState") == "FAILED", f"job {job} is {info.get('JobState')}, expected "
                                                 f"FAILED", errors)
        expect(info.get("NodeList") == "node[0-3]", f"job {job} ran on {info.get('NodeList')}",
               errors)
        expect("gai error: -2" in out or "Name or service not known" in out,
               f"the job's output ({out_file}) has no failed lookup", errors)
        trace_dir = os.path.join(shared, f"rdzv-{job}")
        files = cli.dump(args.rdzvscope, trace_dir) if os.path.isdir(trace_dir) else []
        expect(files, f"no trace files in {trace_dir}", errors)
        hosts = trace_hosts(files)
        expect(hosts >= set(sc.cluster.hosts), f"traces from hosts {sorted(hosts)}", errors)
        bad = {f["header"].get("host") for f, _ in failed_resolves(files, "node0")}
        expect(bad == {BAD_HOST}, f"failed lookups of node0 on {sorted(bad)}, expected "
                                  f"[{BAD_HOST}]", errors)
        good = {f["header"].get("host") for f, ev in events(files, "resolve")
                if ev.get("host") == "node0" and ev.get("ret") == 0}
        expect(good >= {"node1", "node2"}, f"hosts that resolved node0: {sorted(good)}", errors)

        diag = analyze_json(args.rdzvscope, trace_dir, errors)
        v = diag.get("verdict") or {}
        log(f"analyze {trace_dir}: " + json.dumps(v)[:600])
        expect(v.get("class") == "name_resolution", f"verdict.class {v.get('class')!r}", errors)
        expect(v.get("initiating_host") == BAD_HOST,
               f"verdict.initiating_host {v.get('initiating_host')!r}, expected {BAD_HOST!r}",
               errors)
        # Every process carries the job's Slurm identity in its trace header. node3's agent
        # never joined, so torch gave nothing a rank: the rank is the Slurm task's
        # (SLURM_PROCID; one task per node, in node order: 3).
        ids = [f["header"].get("identity") or {} for f in files]
        expect(all(i.get("slurm_job_id") == str(job) for i in ids),
               f"slurm_job_id in the headers: {sorted({str(i.get('slurm_job_id')) for i in ids})}",
               errors)
        bad_ranks = {(f["header"].get("identity") or {}).get("slurm_procid") for f in files
                     if f["header"].get("host") == BAD_HOST}
        expect(bad_ranks == {3}, f"SLURM_PROCID in {BAD_HOST}'s trace headers: "
                                 f"{sorted(bad_ranks, key=str)}", errors)
        expect(v.get("initiating_rank") == 3,
               f"verdict.initiating_rank {v.get('initiating_rank')!r}, expected 3 (node3's task)",
               errors)

        summary = os.path.join(trace_dir, "summary.md")
        text = read(summary)
        log(f"{summary}: {len(text)} bytes; " + " | ".join(text.splitlines()[:4]))
        expect("name_resolution" in text, f"{summary} does not name name_resolution", errors)
        expect(BAD_HOST in text, f"{summary} does not name {BAD_HOST}", errors)
        if errors:
            sc.keep = True                 # the daemons' logs stay in the scratch directory
            log(f"--- {out_file}\n{out[-4000:]}")
    return errors


def analyze_json(rdzvscope, path, errors):
    rc, out, err = cli.run_cli(rdzvscope, ["analyze", path, "--format", "json"], timeout=60)
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        errors.append(f"`rdzvscope analyze {path} --format json` exited {rc}, no JSON: "
                      f"{(out + err)[-1500:]}")
        return {}


# ------------------------------------------------------------------------------- spank

PROBE = r"""
import os, socket, sys
# one lookup and one connect (slurmctld's port on node0): a traced process writes a trace
socket.getaddrinfo("node0", 6817, type=socket.SOCK_STREAM)
s = socket.create_connection(("node0", 6817), timeout=5)
s.close()
keys = ("LD_PRELOAD", "RDZVSCOPE_DIR", "APPTAINERENV_LD_PRELOAD", "SINGULARITYENV_LD_PRELOAD",
        "APPTAINERENV_RDZVSCOPE_DIR", "APPTAINER_BIND", "SINGULARITY_BIND")
print("probe", socket.gethostname(), " ".join(f"{k}={os.environ.get(k, '-')}" for k in keys),
      flush=True)
"""


def parse_probe(stdout):
    """{host: {VAR: value}} from the probes' lines."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "probe":
            out[parts[1]] = dict(p.split("=", 1) for p in parts[2:])
    return out


def job_dirs(base):
    """JOBID -> BASE/YYYY/MM/DD/JOBID, every job directory under BASE."""
    found = {}
    for root, dirs, _files in os.walk(base):
        rel = os.path.relpath(root, base).split(os.sep)
        if len(rel) == 4:
            found[rel[3]] = root
            dirs[:] = []
    return found


def case_spank(args, work):
    errors = []
    if not args.spank or not os.path.isfile(args.spank):
        raise Fail(f"the SPANK plugin was not built: {args.spank!r} (is slurm/spank.h there?)")
    shim = os.path.join(os.path.dirname(os.path.abspath(args.spank)), "librdzvscope.so")
    traces = os.path.join(work, "traces")       # --rdzvscope=DIR
    submit = os.path.join(work, "submit")
    os.makedirs(submit)
    probe = os.path.join(work, "probe.py")
    with open(probe, "w") as f:
        f.write(PROBE)
    # slurmctld gives an epilog no environment: a wrapper sets what slurm_epilog.sh reads
    epilog = os.path.join(work, "epilog.sh")
    with open(epilog, "w") as f:
        f.write(f"#!/bin/sh\nexport RDZVSCOPE_TRACE_ROOTS='{traces}' "
                f"RDZVSCOPE_BIN='{os.path.abspath(args.rdzvscope)}' "
                f"RDZVSCOPE_EPILOG_CONF=/nonexistent\n"
                f"exec /bin/bash '{EPILOG}' >> '{work}/epilog.log' 2>&1\n")
    os.chmod(epilog, 0o755)
    plug = f"required {os.path.abspath(args.spank)} shim={shim} exclude=env"
    with SlurmCluster(Cluster(HOSTS), os.path.join(work, "slurm"), keep=args.keep,
                      plugstack=[plug], conf_extra=[f"EpilogSlurmctld={epilog}"]) as sc:
        env = job_environment(args, LD_PRELOAD="libm.so.6")   # an entry the plugin must keep
        today = datetime.datetime.now(datetime.timezone.utc)

        # 1. --rdzvscope=DIR on srun: every node's task traced under DIR/YYYY/MM/DD/JOBID
        p = sc.cmd("node0", "srun", "-N4", "--ntasks-per-node=1", f"--rdzvscope={traces}",
                   args.python, probe, env=env, cwd=submit, timeout=40)
        seen = parse_probe(p.stdout)
        expect(sorted(seen) == sc.cluster.hosts, f"probes ran on {sorted(seen)}: {p.stdout} "
                                                 f"{p.stderr}", errors)
        dirs = job_dirs(traces)
        expect(len(dirs) == 1, f"job directories under {traces}: {dirs}", errors)
        for job, d in dirs.items():
            want = os.path.join(traces, today.strftime("%Y/%m/%d"), job)
            expect(d == want, f"job {job}'s traces in {d}, expected {want}", errors)
            files = cli.dump(args.rdzvscope, d)
            hosts = trace_hosts(files)
            log(f"srun --rdzvscope: job {job}: {len(files)} trace file(s) in {d}, hosts "
                f"{sorted(hosts)}")
            expect(hosts == set(sc.cluster.hosts), f"traces from hosts {sorted(hosts)}", errors)
            expect(any(ev.get("host") == "node0" for _, ev in events(files, "resolve")),
                   "no lookup of node0 in the traces", errors)
        for host, e in seen.items():
            expect(e.get("LD_PRELOAD") == f"{shim}:libm.so.6",
                   f"{host}: LD_PRELOAD={e.get('LD_PRELOAD')}", errors)
            expect(e.get("RDZVSCOPE_DIR") == f"{traces}/%Y/%m/%d/%j",
                   f"{host}: RDZVSCOPE_DIR={e.get('RDZVSCOPE_DIR')}", errors)
            for k in ("APPTAINERENV_LD_PRELOAD", "SINGULARITYENV_LD_PRELOAD"):
                expect(e.get(k) == shim, f"{host}: {k}={e.get(k)}", errors)
            expect(e.get("APPTAINERENV_RDZVSCOPE_DIR") == f"{traces}/%Y/%m/%d/%j",
                   f"{host}: APPTAINERENV_RDZVSCOPE_DIR={e.get('APPTAINERENV_RDZVSCOPE_DIR')}",
                   errors)
            for k in ("APPTAINER_BIND", "SINGULARITY_BIND"):
                expect(set((e.get(k) or "").split(",")) == {shim, traces}, f"{host}: {k}={e.get(k)}",
                       errors)

        # 2. the same job without the option: nothing traced, nothing set
        before = job_dirs(traces)
        p = sc.cmd("node0", "srun", "-N4", "--ntasks-per-node=1", args.python, probe, env=env,
                   cwd=submit, timeout=40)
        seen = parse_probe(p.stdout)
        expect(sorted(seen) == sc.cluster.hosts, f"untraced probes ran on {sorted(seen)}", errors)
        for host, e in seen.items():
            expect(e.get("LD_PRELOAD") == "libm.so.6" and e.get("RDZVSCOPE_DIR") == "-",
                   f"{host}, job without --rdzvscope: LD_PRELOAD={e.get('LD_PRELOAD')} "
                   f"RDZVSCOPE_DIR={e.get('RDZVSCOPE_DIR')}", errors)
        expect(job_dirs(traces) == before, f"a job without --rdzvscope wrote traces: "
                                           f"{job_dirs(traces)}", errors)
        stray = [os.path.join(r, f) for r, _, fs in os.walk(work) for f in fs if f.endswith(".rzt")
                 and not r.startswith(traces)]
        expect(not stray, f"trace files outside {traces}: {stray}", errors)

        # 3. exclude=env: the excluded program's task is left alone
        p = sc.cmd("node0", "srun", "-N1", f"--rdzvscope={traces}", "env", env=env, cwd=submit,
                   timeout=30)
        lines = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
        expect(lines.get("LD_PRELOAD") == "libm.so.6" and "RDZVSCOPE_DIR" not in lines,
               f"excluded `env`: LD_PRELOAD={lines.get('LD_PRELOAD')} "
               f"RDZVSCOPE_DIR={lines.get('RDZVSCOPE_DIR')}", errors)

        # 4. sbatch --rdzvscope=DIR: the batch script's srun traced too; the job fails (the
        # store host does not resolve anywhere) and the epilog writes its summary
        before = job_dirs(traces)
        wrap = (f"srun env RANK=0 WORLD_SIZE=1 MASTER_ADDR=nohost.rdzv MASTER_PORT=29500 "
                f"RDZV_TIMEOUT_S=3 {args.python} {TRAIN}")
        job = sc.sbatch("node0", "-N1", f"--rdzvscope={traces}", "--output=batch-%j.out",
                        f"--wrap={wrap}", env=job_environment(args), cwd=submit)
        info = sc.wait_job(job, 40)
        log(f"sbatch --rdzvscope: job {job} {info.get('JobState')} exit {info.get('ExitCode')}")
        expect(info.get("JobState") == "FAILED", f"job {job} is {info.get('JobState')}", errors)
        d = job_dirs(traces).get(str(job))
        expect(d is not None, f"no trace directory of job {job} under {traces} "
                              f"(before: {before})", errors)
        if d:
            summary = os.path.join(d, "summary.md")
            deadline = time.monotonic() + 20
            while not os.path.exists(summary) and time.monotonic() < deadline:
                time.sleep(0.3)
            text = read(summary)
            log(f"epilog: {summary}: " + " | ".join(text.splitlines()[:4]))
            expect("name_resolution" in text,
                   f"{summary} (from EpilogSlurmctld) lacks name_resolution: {text[:500]!r}; "
                   f"epilog log: {read(os.path.join(work, 'epilog.log'))}", errors)
        # the epilog ran after the srun jobs too: they succeeded, so no summary for them
        for j, jd in job_dirs(traces).items():
            if j != str(job):
                expect(not os.path.exists(os.path.join(jd, "summary.md")),
                       f"job {j} succeeded, yet the epilog wrote {jd}/summary.md", errors)
        if errors:
            sc.keep = True                 # the daemons' logs stay in the scratch directory
            log(f"--- batch output\n{read(os.path.join(submit, f'batch-{job}.out'))[-3000:]}")
    return errors


CASES = {"sbatch_name_resolution": case_sbatch_name_resolution, "spank": case_spank}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--python", required=True, help="interpreter with PyTorch 2.x (its torchrun)")
    ap.add_argument("--spank", help="rdzvscope_spank.so")
    ap.add_argument("--work", help="scratch parent directory")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--trace-mode", choices=("run", "preload"), default="run",
                    help="sbatch_name_resolution: the job script's TRACE_MODE (default run)")
    args = ap.parse_args()
    why = missing_slurm()
    if why:
        log(f"SKIP slurm.{args.case}: {why}")
        return 77
    missing = checks.missing_executable((("rdzvscope CLI", args.rdzvscope), ("python", args.python)))
    if missing:
        log(missing)
        return 1
    args.rdzvscope = os.path.abspath(args.rdzvscope)
    args.python = os.path.abspath(args.python)
    if args.work:
        os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f"{args.case}-", dir=args.work)
    os.chmod(work, 0o755)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    t0 = time.monotonic()
    try:
        errors = CASES[args.case](args, work)
    except (Fail, Interrupted, subprocess.TimeoutExpired) as e:
        errors = [str(e)]
    return checks.finish_scenario(f"slurm.{args.case}", errors, work, t0, args.keep)


if __name__ == "__main__":
    sys.exit(main())
