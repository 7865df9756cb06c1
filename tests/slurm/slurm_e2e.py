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
  attach_hung              a job hung in its rendezvous, started without the shim (3 nodes, one
                           PyTorch 2.13 rank each by hand, rank 2 sleeping before
                           init_process_group, ranks 0 and 1 waiting in the store on node0),
                           then examples/slurm_attach.sh: `srun --overlap --jobid J -N3 rdzvscope
                           attach --all --port P --duration S --out SHARED/.../%h --same-netns`
                           and `rdzvscope analyze`. Checks one file per process, in its own
                           node's directory (the 3 nodes share a kernel: each attach sees every
                           node's processes and must keep only its own), the store connections
                           found open, and the verdict: straggler_timeout, rank 2.

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
import threading
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest import checks  # noqa: E402
from rdzvtest.checks import Fail, expect, log  # noqa: E402
from rdzvtest.cluster import Cluster  # noqa: E402
from rdzvtest.launch import job_env, read  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402
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


def shared_and_submit(work):
    """WORK/shared (the traces, as a cluster's shared file system) and WORK/submit (where
    jobs are submitted from, their output files), made."""
    shared, submit = os.path.join(work, "shared"), os.path.join(work, "submit")
    os.makedirs(shared)
    os.makedirs(submit)
    return shared, submit


def trace_hosts(files):
    return {f["header"].get("host") for f in files}


# ------------------------------------------------------------------------------- sbatch

def case_sbatch_name_resolution(args, work):
    errors = []
    shared, submit = shared_and_submit(work)
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

        v = expect_verdict(args.rdzvscope, trace_dir, errors, "name_resolution",
                           initiating_host=BAD_HOST)
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


def expect_verdict(rdzvscope, path, errors, cls, **want):
    """`rdzvscope analyze PATH --format json`: its verdict has class `cls` and each field of
    `want` (initiating_rank=2...); returns the verdict."""
    v = analyze_json(rdzvscope, path, errors).get("verdict") or {}
    log(f"analyze {path}: " + json.dumps(v)[:600])
    expect(v.get("class") == cls, f"verdict.class {v.get('class')!r}, expected {cls!r}", errors)
    for k, value in want.items():
        expect(v.get(k) == value, f"verdict.{k} {v.get(k)!r}, expected {value!r}", errors)
    return v


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


# ------------------------------------------------------------------------------- attach

ATTACH_SCRIPT = os.path.join(ROOT, "examples", "slurm_attach.sh")
ATTACH_HOSTS = 3
LATE_RANK = 2
# The ranks' rendezvous timeout: attach must be recording on every node before it expires
# (4.4 s after the ranks' store connects were seen, on a 2-core machine at load 8: srun, and
# the probes loaded on 3 nodes at once).
HUNG_TIMEOUT_S = 20
ATTACH_S = HUNG_TIMEOUT_S + 15       # until the waits time out and the ranks exit
# One rank per node, started by hand (no shim, no torchrun); rank 2 sleeps before
# init_process_group, so ranks 0 and 1 wait in the store on node0 until their timeout.
HUNG_JOB = """#!/bin/bash
srun --label --ntasks-per-node=1 bash -c \\
  'export RANK=$SLURM_PROCID LOCAL_RANK=0 WORLD_SIZE=$SLURM_NTASKS; exec "$PYTHON" "$TRAIN"'
"""
TIMED_OUT = ("Socket Timeout", "wait timeout after", "waiting for clients")


def established(sc, host, port):
    """The TCP connections accepted on `port` on `host` (the store's ends of its clients)."""
    p = sc.cmd(host, "ss", "-Htn", "state", "established", f"( sport = :{port} )", check=False,
               timeout=15)
    return len(p.stdout.splitlines())


def read_timed(pipe, lines):
    """Appends (monotonic time, line) for each line of `pipe` until it closes (a thread)."""
    for line in pipe:
        lines.append((time.monotonic(), line.rstrip("\n")))


def case_attach_hung(args, work):
    errors = []
    shared, submit = shared_and_submit(work)
    script = os.path.join(work, "hung.sbatch")
    with open(script, "w") as f:
        f.write(HUNG_JOB)
    port = free_port()
    with SlurmCluster(Cluster(ATTACH_HOSTS), os.path.join(work, "slurm"), keep=args.keep) as sc:
        env = job_environment(args, MASTER_ADDR="node0", MASTER_PORT=str(port),
                              RDZV_TIMEOUT_S=str(HUNG_TIMEOUT_S), RDZV_DELAY_S="600",
                              RDZV_LATE_RANK=str(LATE_RANK), PYTHON=args.python, TRAIN=TRAIN)
        job = sc.sbatch("node0", f"--nodes={ATTACH_HOSTS}", "--output=hung-%j.out", script,
                        env=env, cwd=submit)
        out_file = os.path.join(submit, f"hung-{job}.out")
        # hung: ranks 0 and 1 connected to the store (rank 0's own client and rank 1's)
        t = time.monotonic()
        while established(sc, "node0", port) < 2:
            info = sc.job_info(job)
            if info.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING"):
                raise Fail(f"job {job} is {info.get('JobState')} before its ranks reached the "
                           f"store:\n{read(out_file)[-3000:]}")
            if time.monotonic() - t > 120:
                raise Fail(f"ranks 0 and 1 not connected to node0:{port} after 120 s:\n"
                           f"{read(out_file)[-3000:]}")
            time.sleep(0.5)
        t_store = time.monotonic()
        log(f"job {job}: ranks 0 and 1 in the store on node0:{port} after {t_store - t:.1f}s")

        # the example, as an admin runs it: one attach per node, then analyze
        # --same-netns: these 3 nodes are network namespaces of one kernel (docs/slurm.md)
        attach_env = job_environment(args, SHARED=shared, RDZVSCOPE=args.rdzvscope,
                                     ATTACH_OPTS="--same-netns")
        p = sc.popen("node0", "bash", ATTACH_SCRIPT, str(job), str(port), str(ATTACH_S),
                     env=attach_env, cwd=submit)
        err_lines = []
        reader = threading.Thread(target=read_timed, args=(p.stderr, err_lines), daemon=True)
        reader.start()
        try:
            stdout = p.stdout.read()
            p.wait(timeout=ATTACH_S + 60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Fail(f"examples/slurm_attach.sh still running {ATTACH_S + 60}s after start")
        reader.join(10)
        stderr = "\n".join(l for _, l in err_lines)
        ready = [at for at, l in err_lines if "recording all processes" in l]
        log(f"slurm_attach.sh exited {p.returncode} after {time.monotonic() - t_store:.1f}s; "
            f"{len(ready)} attach(es) recording, the last "
            f"{(max(ready) - t_store) if ready else float('nan'):.1f}s after the store connects "
            f"(the ranks' timeout: {HUNG_TIMEOUT_S}s)")
        expect(p.returncode == 0, f"slurm_attach.sh exited {p.returncode}: {stderr[-2000:]}",
               errors)
        expect(len(ready) == ATTACH_HOSTS, f"{len(ready)} of {ATTACH_HOSTS} attach(es) said they "
                                           f"were recording: {stderr[-2000:]}", errors)
        # (else what follows fails for want of the timeouts: say why)
        expect(not ready or max(ready) - t_store < HUNG_TIMEOUT_S,
               f"attach was recording only {max(ready or [0]) - t_store:.1f}s after the store "
               f"connects, past the ranks' {HUNG_TIMEOUT_S}s timeout: a machine this slow "
               f"needs a larger HUNG_TIMEOUT_S", errors)
        expect("VERDICT  straggler_timeout" in stdout,
               f"the script's analyze printed no straggler verdict: {stdout[-1500:]}", errors)
        # --same-netns did something: the nodes share a kernel, so each attach saw the others'
        # store processes and removed their files
        left_out = [l for l in stderr.splitlines() if "network namespaces left out" in l]
        expect(left_out, f"no attach left out another node's processes: {stderr[-2000:]}", errors)

        out = os.path.join(shared, f"attach-{job}")
        try:
            files = cli.dump(args.rdzvscope, out)
        except Fail as e:                  # no trace at all: said, and the rest still checked
            files = []
            errors.append(str(e))
        log(f"{out}: " + ", ".join(sorted(os.path.relpath(f["header"]["file"], out)
                                          for f in files)))
        # one file per process, under its own node's directory, named after that node
        for f in files:
            h = f["header"]
            node = os.path.basename(os.path.dirname(h["file"]))
            expect(h.get("source") == "bpf", f"{h['file']}: source {h.get('source')}", errors)
            expect(h.get("host") == node, f"{h['file']}: host {h.get('host')!r} in {node}/",
                   errors)
        origins = [json.dumps(f["header"].get("origin"), sort_keys=True) for f in files]
        expect(len(set(origins)) == len(origins), "a process recorded twice: "
               + ", ".join(o for o in origins if origins.count(o) > 1)[:600], errors)
        ranks = {}
        for f in files:
            r = (f["header"].get("identity") or {}).get("rank")
            if isinstance(r, int) and r >= 0:
                ranks.setdefault(r, set()).add(f["header"].get("host"))
        expect(ranks == {0: {"node0"}, 1: {"node1"}},
               f"ranks traced by host: {ranks}, expected rank 0 on node0, 1 on node1 (2 late)",
               errors)
        # the store connections were there before attach started (the job was hung already)
        found = [ev for _, ev in events(files, "connect") if "preexisting" in (ev.get("flags") or [])]
        expect(found, "no store connection found open when attach started", errors)

        expect_verdict(args.rdzvscope, out, errors, "straggler_timeout",
                       initiating_rank=LATE_RANK)

        sc.cmd("node0", "scancel", str(job), check=False, timeout=15)
        sc.wait_job(job, 30)
        text = read(out_file)
        expect(f"rank {LATE_RANK}/{ATTACH_HOSTS}" in text and "sleeping" in text,
               f"rank {LATE_RANK} did not say it was sleeping: {text[-1500:]}", errors)
        expect(any(n in text for n in TIMED_OUT),
               f"no rank timed out waiting in the store: {text[-1500:]}", errors)
        if errors:
            sc.keep = True
            log(f"--- {out_file}\n{text[-3000:]}\n--- slurm_attach.sh\n{stdout[-3000:]}\n"
                f"{stderr[-3000:]}")
    return errors


CASES = {"sbatch_name_resolution": case_sbatch_name_resolution, "spank": case_spank,
         "attach_hung": case_attach_hung}


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
