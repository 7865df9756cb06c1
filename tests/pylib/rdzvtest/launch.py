"""Launching test jobs: the environment a job starts from, the processes it launched, and
waiting for them, stopping them, and reading what rdzvscope made of them (tests/e2e,
tests/cluster and the other launchers)."""
import json
import os
import signal
import subprocess
import tempfile
import time

from rdzvtest import cli
from rdzvtest.checks import Fail
from rdzvtest.report import check_timeline_file

# tests/e2e/rank.py: the rank script of the real PyTorch jobs.
RANK_SCRIPT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "..", "..", "e2e", "rank.py"))

# What a launched job must not inherit from the test's own environment: a tracer's settings
# (what the shim reads and carries across exec), a rank's identity, another job's (torchrun's,
# Slurm's), torchrun's options (PET_*), a scenario's knobs (E2E_*, read by rank.py). Shared by
# every launcher. Other RDZVSCOPE_* variables (scripts/install-deps.sh's, which demo.sh runs)
# are kept.
JOB_VARS = ("LD_PRELOAD", "RDZVSCOPE_DIR", "RDZVSCOPE_PORTS", "RDZVSCOPE_MAX_MB",
            "RDZVSCOPE_GROUP_READ", "RDZVSCOPE_SHIM", "RDZVSCOPE_INJECT",
            "RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
JOB_PREFIXES = ("TORCHELASTIC_", "SLURM_", "PET_", "E2E_")


def job_env(**extra):
    """os.environ without JOB_VARS and JOB_PREFIXES, plus extra."""
    e = {k: v for k, v in os.environ.items() if k not in JOB_VARS and not k.startswith(JOB_PREFIXES)}
    e.update(extra)
    return e


def torch_version(python):
    """The PyTorch version that `python` imports, e.g. "2.13.0+cpu" (from its metadata: fast)."""
    code = ("import importlib.metadata as m\n"
            "try:\n    print(m.version('torch'))\n"
            "except Exception:\n    import torch; print(torch.__version__)")
    p = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    if p.returncode != 0 or not p.stdout.strip():
        raise SystemExit(f"FAIL: {python} has no PyTorch: {p.stderr.strip()[-300:]}")
    return p.stdout.strip()


def torchrun_cmd(python):
    """The torchrun of `python`'s installation (its bin/torchrun), else `python -m torch.distributed.run`."""
    exe = os.path.join(os.path.dirname(python), "torchrun")
    return [exe] if os.access(exe, os.X_OK) else [python, "-m", "torch.distributed.run"]


def read(path):
    """A file's text; "" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class Proc:
    """One launched rank (or helper) process, its stdout+stderr in log_path."""

    def __init__(self, label, rank, popen, log_path, cmd, started):
        self.label, self.rank, self.popen, self.log_path, self.cmd = label, rank, popen, log_path, cmd
        self.started = started
        self.rc = None
        self.ended = None
        self.killed_by_bound = False

    @property
    def pid(self):
        return self.popen.pid

    def text(self):
        return read(self.log_path)

    def poll(self):
        if self.rc is None:
            rc = self.popen.poll()
            if rc is not None:
                self.rc, self.ended = rc, time.monotonic()
        return self.rc


def start(label, rank, cmd, env, log_path, host=None):
    """Starts cmd in a session of its own (so that a bound can kill its whole tree), stdout and
    stderr into log_path; returns its Proc (host: where it runs, for the test cluster)."""
    with open(log_path, "w") as out:
        popen = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    p = Proc(label, rank, popen, log_path, cmd, time.monotonic())
    p.host = host
    return p


class Launcher:
    """Waits for, stops and reads the processes of a run (an object with `procs`, `t0` and
    `trace_dir`), each started in a session of its own (Proc). traced=False: the run's
    processes ran without `rdzvscope run`, dump() gives None."""

    def __init__(self, rdzvscope, traced=True):
        self.rdzvscope = rdzvscope
        self.traced = traced

    def wait_for_line(self, procs, text, bound_s):
        """Wait until every proc's log holds `text` (or it exited). True when all printed it."""
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            pending = [p for p in procs if text not in p.text() and p.poll() is None]
            if not pending:
                break
            time.sleep(0.05)
        return all(text in p.text() for p in procs)

    def wait_for_exit(self, procs, bound_s):
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline and any([p.poll() is None for p in procs]):
            time.sleep(0.05)

    def terminate(self, procs, grace_s=2):
        """SIGTERM, then SIGKILL after grace_s: what a scheduler does to a hung job."""
        for p in procs:
            if p.poll() is None:
                p.killed_by_bound = True
                os.kill(p.pid, signal.SIGTERM)
        self.wait_for_exit(procs, grace_s)
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.popen.wait()
                p.poll()

    def wait_all(self, run, bound_s):
        """Every process of the run exited by run.t0 + bound_s, else SIGKILL its session."""
        deadline = run.t0 + bound_s
        while time.monotonic() < deadline:
            if all([p.poll() is not None for p in run.procs]):   # a list: poll every one
                return
            time.sleep(0.05)
        for p in run.procs:
            if p.poll() is None:
                p.killed_by_bound = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait()
                p.poll()

    def dump(self, run):
        """`rdzvscope dump TRACEDIR` -> [{header, events, summary}] per file; None untraced."""
        if not self.traced:
            return None
        if not os.path.isdir(run.trace_dir):
            return []
        return cli.dump(self.rdzvscope, run.trace_dir)

    def analyze(self, args):
        """`rdzvscope analyze ARGS --format json`, parsed. Every analysis also writes the
        Perfetto timeline, validated like the stored scenarios' (issue 5 asks for it on every
        end-to-end scenario). AnalyzerMissing when this build has no `analyze`."""
        timeline = tempfile.NamedTemporaryFile(prefix="timeline-", suffix=".json", delete=False).name
        cmd = [self.rdzvscope, "analyze"] + args + ["--format", "json", "--timeline", timeline]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=cli.ANALYZE_TIMEOUT_S)
            out = (p.stdout or "") + (p.stderr or "")
            if p.returncode != 0:
                lowered = out.lower()
                if "subcommand" in lowered or "not expected" in lowered or "unknown" in lowered and "analyze" in lowered:
                    raise cli.AnalyzerMissing(f"analyzer not available: `rdzvscope analyze` exited "
                                              f"{p.returncode}: {' '.join(out.split())[:200]}")
                raise Fail(f"`{' '.join(cmd)}` exited {p.returncode}:\n{out[:4000]}")
            try:
                diag = json.loads(p.stdout)
            except json.JSONDecodeError as e:
                raise Fail(f"`{' '.join(cmd)}` printed no JSON ({e}):\n{p.stdout[:4000]}")
            try:
                check_timeline_file(timeline, diag)
            except Fail as e:
                raise Fail(f"the timeline of `{' '.join(cmd)}` is invalid: {e}")
            return diag
        finally:
            if os.path.exists(timeline):
                os.unlink(timeline)


# ------------------------------------------------------------------------ leaving nothing behind
# A launcher whose jobs start processes in sessions of their own (torchrun's workers, each in a
# new session) cannot reach them through a process group once their parent is gone. As a child
# subreaper it inherits every orphan of its descendants, so that all of them can be found (by
# their parent pid) and killed at the end, or when the launcher is interrupted.
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Makes this process the subreaper of its descendants (Linux prctl); False when refused."""
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents():
    """pid -> (parent pid, state) of every process, from /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()   # after "(comm)", which may hold spaces
        out[int(name)] = (int(fields[1]), fields[0])
    return out


def descendants(root=None):
    """The pids of every live descendant of `root` (default: this process), zombies left out."""
    root = root or os.getpid()
    table = _parents()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            found.append(c)
            todo.append(c)
    return [p for p in found if table.get(p, (0, "Z"))[1] != "Z"]


def reap_orphans(known=()):
    """Collects the exit status of this process's zombie children that are not in `known` (the
    pids of its own Popen objects, which collect theirs): orphans a subreaper inherited."""
    me = os.getpid()
    for pid, (ppid, state) in _parents().items():
        if ppid == me and state == "Z" and pid not in known:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def kill_descendants(known=(), grace_s=1.0):
    """SIGKILLs every descendant of this process (the frozen ones too), then reaps the orphans
    among them (`known`: pids whose Popen collects their status). Returns the pids killed."""
    killed = []
    for _ in range(3):   # a process may fork while we look
        pids = descendants()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and descendants():
            time.sleep(0.05)
    reap_orphans(known)
    return sorted(set(killed))
