"""A real Slurm cluster on the test cluster of rdzvtest.cluster (issue 16): one munged, one
slurmctld on node0 and one slurmd per host, each daemon in its host's network namespace (host
name, /etc/hosts) through `cluster.sh exec`, all of them root, their files in a scratch
directory WORK, their unix sockets in a short one under /tmp:

    WORK/slurm.conf  cgroup.conf  plugstack.conf  munge.key  state/  log/
    /tmp/rzslurm-XXXX/munge.sock  spool/NODE/   (unix sockets: a path short enough for any WORK)

Every Slurm command of the test runs with SLURM_CONF=WORK/slurm.conf, inside a host of the
cluster (the root namespace has no route to the hosts): `SlurmCluster.cmd(HOST, ARGS...)`.

    with SlurmCluster(Cluster(4), work) as sc:     # up, munged, slurmctld, slurmd x4, idle
        sc.cmd("node0", "sbatch", ...)
    # here every daemon, job step and netns is gone, and WORK is removed (unless keep=True)

munged needs no network: its socket is a file, reachable from every namespace. The daemons
run in the foreground as children of the test (their pids are ours to end); the job steps
that slurmd forks (slurmstepd and the tasks) live in the hosts' namespaces, which
`cluster.sh down` empties. A test killed outright (SIGKILL) takes its daemons with it
(PR_SET_PDEATHSIG); the next test's `cluster.sh up` ends what ran in its hosts, and the next
SlurmCluster removes its /tmp directory. A host's /etc/hosts is bind-mounted into each `exec` of it: edit it
in place (same inode) with `edit_hosts`, never by replacing the file.
"""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from rdzvtest.checks import Fail, log

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
TOOLS = ("slurmctld", "slurmd", "slurmstepd", "munged", "mungekey", "sbatch", "srun", "sinfo",
         "squeue", "scontrol", "scancel")
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818


PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn of every daemon: SIGTERM when the test process dies, however it dies (the
    signal survives the execs of `cluster.sh exec`), so that a test killed by a timeout leaves
    no daemon behind; `cluster.sh up` later removes the hosts of a dead owner."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def proc_start(pid):
    """The start time of a process (field 22 of /proc/PID/stat), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def reap_stale_run_dirs():
    """Removes the /tmp/rzslurm-* directories of tests that were killed (their owner is gone;
    their daemons died with them, PR_SET_PDEATHSIG, and `cluster.sh up` removes their hosts)."""
    for d in os.listdir("/tmp"):
        if not d.startswith("rzslurm-"):
            continue
        path = os.path.join("/tmp", d)
        try:
            with open(os.path.join(path, "owner")) as f:
                pid, start = f.read().split()
        except (OSError, ValueError):
            continue
        if proc_start(int(pid)) != start:
            shutil.rmtree(path, ignore_errors=True)


def tool(name):
    """The path of a Slurm or munge program (the daemons are in sbin, not on every PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN_DIRS:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def missing_slurm():
    """Why a Slurm cluster cannot be made here (then the test exits 77), else None. Tries to
    install the Debian packages when a program is missing and apt-get is there (root only)."""
    from rdzvtest.cluster import missing_requirements
    why = missing_requirements()
    if why:
        return why
    missing = [t for t in TOOLS if not tool(t)]
    if missing and shutil.which("apt-get"):
        log(f"slurm: {', '.join(missing)} missing: apt-get install {' '.join(PACKAGES)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
        quiet = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        if subprocess.run(install, **quiet).returncode != 0:   # stale package lists
            subprocess.run(["apt-get", "update"], **quiet)
            subprocess.run(install, **quiet)
        missing = [t for t in TOOLS if not tool(t)]
    if missing:
        return (f"needs {', '.join(missing)} (apt-get install {' '.join(PACKAGES)}, "
                f"or scripts/install-deps.sh)")
    return None


class SlurmCluster:
    """munged + slurmctld (node0) + one slurmd per host of `cluster` (a rdzvtest.cluster.Cluster,
    brought up here). `conf_extra`: lines appended to slurm.conf; `plugstack`: the lines of
    plugstack.conf (SPANK plugins); `cpus`: CPUs each node declares (slurmd takes the
    configuration's count, SlurmdParameters=config_overrides, so the 4 nodes of a 2-core machine
    can each offer more than the machine has)."""

    def __init__(self, cluster, work=None, conf_extra=(), plugstack=(), cpus=2, keep=False,
                 env=None):
        self.cluster = cluster
        self.own_work = work is None
        self.work = work or tempfile.mkdtemp(prefix="rdzvscope-slurm-")
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o700)         # munged checks the directories of its key and socket
        self.conf = os.path.join(self.work, "slurm.conf")
        # The unix sockets (munged's, slurmstepd's in the spool directories) need a short path
        # (108 bytes at most): they live in a directory of their own under /tmp.
        reap_stale_run_dirs()
        self.run_dir = tempfile.mkdtemp(prefix="rzslurm-", dir="/tmp")
        with open(os.path.join(self.run_dir, "owner"), "w") as f:
            f.write(f"{os.getpid()} {proc_start(os.getpid())}\n")
        self.conf_extra = list(conf_extra)
        self.plugstack = list(plugstack)
        self.cpus = cpus
        self.keep = keep
        self.base_env = env
        self.ctl_host = cluster.hosts[0]
        self.daemons = []                  # (label, Popen)
        self.started = False

    # ----------------------------------------------------------------------------- files
    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def sock(self):
        return os.path.join(self.run_dir, "munge.sock")

    def env(self, **extra):
        e = dict(self.base_env if self.base_env is not None else os.environ)
        for k in list(e):
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SPANK_")):
                del e[k]
        e["SLURM_CONF"] = self.conf
        e.update(extra)
        return e

    def write_conf(self):
        w, r = self.work, self.run_dir
        for d in ("state", "log"):
            os.makedirs(self.path(d), exist_ok=True)
        os.makedirs(os.path.join(r, "spool"), exist_ok=True)
        nodes = "\n".join(
            f"NodeName={h} NodeAddr={self.cluster.addr[h]} NodeHostname={h} CPUs={self.cpus} "
            f"RealMemory=1000 State=UNKNOWN" for h in self.cluster.hosts)
        conf = f"""# rdzvscope test cluster {self.cluster.prefix} (tests/pylib/rdzvtest/slurm.py)
ClusterName=rdzv{self.cluster.prefix}
SlurmctldHost={self.ctl_host}({self.cluster.addr[self.ctl_host]})
SlurmctldPort={SLURMCTLD_PORT}
SlurmdPort={SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge.sock
StateSaveLocation={w}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={w}/slurmctld.pid
SlurmdPidFile={r}/spool/slurmd-%n.pid
SlurmctldLogFile={w}/log/slurmctld.log
SlurmdLogFile={w}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={w}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=300
MessageTimeout=10
TCPTimeout=5
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=NO
"""
        conf += "".join(l + "\n" for l in self.conf_extra)
        with open(self.conf, "w") as f:
            f.write(conf)
        # slurmd 22.05 loads a cgroup plugin whatever the task and proctrack plugins: autodetect
        # fails in a host (`ip netns exec` mounts a fresh /sys, no cgroup file system in it);
        # cgroup/v1 named outright loads without touching any hierarchy, and nothing here
        # uses one (proctrack/linuxproc, task/none, no constraints).
        with open(self.path("cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\n"
                    "ConstrainDevices=no\n")
        with open(self.path("plugstack.conf"), "w") as f:
            f.write("".join(l + "\n" for l in self.plugstack))

    # ----------------------------------------------------------------------------- daemons
    def spawn(self, label, cmd):
        out = open(self.path("log", f"{label}.out"), "w")
        p = subprocess.Popen(cmd, env=self.env(), stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True,
                             preexec_fn=die_with_parent)
        out.close()
        self.daemons.append((label, p))
        return p

    def start_munged(self):
        key = self.path("munge.key")
        subprocess.run([tool("mungekey"), "--create", "--keyfile", key], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
        os.chmod(key, 0o600)
        self.spawn("munged", [tool("munged"), "--foreground", "--force",
                              f"--socket={self.sock()}", f"--key-file={key}",
                              f"--pid-file={self.path('munged.pid')}",
                              f"--log-file={self.path('log', 'munged.log')}",
                              f"--seed-file={self.path('munged.seed')}", "--num-threads=4"])
        self.wait_for(lambda: os.path.exists(self.sock()), 10, "munged's socket")

    def start(self):
        """Cluster up, munged, slurmctld, slurmds; returns once sinfo shows every node idle."""
        t0 = time.monotonic()
        self.started = True
        self.cluster.up()
        self.write_conf()
        self.start_munged()
        ex = self.cluster.exec_prefix
        self.spawn("slurmctld", ex(self.ctl_host) + [tool("slurmctld"), "-D", "-i", "-f", self.conf])
        self.wait_for(lambda: self.cmd(self.ctl_host, "scontrol", "ping", check=False,
                                       timeout=15).returncode == 0, 20, "slurmctld to answer")
        for h in self.cluster.hosts:
            os.makedirs(os.path.join(self.run_dir, "spool", h), exist_ok=True)
            self.spawn(f"slurmd-{h}", ex(h) + [tool("slurmd"), "-D", "-N", h, "-f", self.conf])
        self.wait_idle(30)
        log(f"slurm: {len(self.cluster.hosts)} node(s) idle after {time.monotonic() - t0:.1f}s "
            f"(conf {self.conf})")
        return self

    def node_states(self):
        p = self.cmd(self.ctl_host, "sinfo", "-h", "-N", "-o", "%N %t", check=False, timeout=15)
        states = {}
        for line in p.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def wait_idle(self, timeout_s):
        want = set(self.cluster.hosts)
        last = {}

        def idle():
            nonlocal last
            last = self.node_states()
            return set(last) == want and all(s == "idle" for s in last.values())
        self.wait_for(idle, timeout_s, "every node idle", lambda: f"sinfo: {last}")

    def wait_for(self, cond, timeout_s, what, detail=lambda: ""):
        deadline = time.monotonic() + timeout_s
        while True:
            dead = [(l, p.returncode) for l, p in self.daemons if p.poll() is not None]
            if dead:
                raise Fail(f"slurm: daemon(s) exited while waiting for {what}: {dead}\n"
                           + self.logs_tail())
            if cond():
                return
            if time.monotonic() > deadline:
                raise Fail(f"slurm: no {what} after {timeout_s}s {detail()}\n" + self.logs_tail())
            time.sleep(0.2)

    def logs_tail(self, n=15):
        out = []
        d = self.path("log")
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            try:
                with open(os.path.join(d, f), errors="replace") as fh:
                    lines = fh.read().splitlines()[-n:]
            except OSError:
                continue
            if lines:
                out.append(f"--- {f}\n" + "\n".join(lines))
        return "\n".join(out)

    # ----------------------------------------------------------------------------- commands
    def cmd(self, host, *args, env=None, check=True, timeout=60, input=None, cwd=None):
        """Runs a Slurm client command (sbatch, srun, sinfo, ...) on `host`, SLURM_CONF set;
        returns the CompletedProcess (text, stdout and stderr apart)."""
        argv = list(args)
        if argv and not os.path.isabs(argv[0]) and tool(argv[0]):
            argv[0] = tool(argv[0])
        e = self.env(**(env or {}))
        p = subprocess.run(self.cluster.exec_prefix(host) + argv, env=e, input=input, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise Fail(f"slurm: `{' '.join(args)}` on {host} exited {p.returncode}: "
                       f"{(p.stdout + p.stderr).strip()[-2000:]}")
        return p

    def popen(self, host, *args, env=None, cwd=None):
        """Starts a Slurm client command on `host` in the background (as cmd does, SLURM_CONF
        set); stdout and stderr are text pipes, read by the caller; the caller waits for it."""
        argv = list(args)
        if argv and not os.path.isabs(argv[0]) and tool(argv[0]):
            argv[0] = tool(argv[0])
        return subprocess.Popen(self.cluster.exec_prefix(host) + argv, env=self.env(**(env or {})),
                                cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def sbatch(self, host, *args, env=None, cwd=None):
        """Submits; returns the job id."""
        p = self.cmd(host, "sbatch", "--parsable", *args, env=env, cwd=cwd)
        m = re.match(r"(\d+)", p.stdout.strip())
        if not m:
            raise Fail(f"slurm: sbatch printed no job id: {p.stdout!r} {p.stderr!r}")
        return int(m.group(1))

    def job_info(self, job):
        """scontrol show job's KEY=VALUE pairs ({} once the job is forgotten)."""
        p = self.cmd(self.ctl_host, "scontrol", "-o", "show", "job", str(job), check=False,
                     timeout=15)
        info = {}
        for tok in p.stdout.split():
            k, sep, v = tok.partition("=")
            if sep:
                info[k] = v
        return info

    def wait_job(self, job, timeout_s):
        """Waits until the job has ended; returns its scontrol info (JobState, ExitCode...)."""
        deadline = time.monotonic() + timeout_s
        info = {}
        while time.monotonic() < deadline:
            info = self.job_info(job)
            if "launch_failed" in (info.get("Reason") or ""):
                self.cmd(self.ctl_host, "scancel", str(job), check=False, timeout=15)
                raise Fail(f"slurm: job {job} could not be launched ({info.get('Reason')})\n"
                           + self.logs_tail())
            if info.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                        "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                                        "PREEMPTED"):
                return info
            time.sleep(0.3)
        self.cmd(self.ctl_host, "scancel", str(job), check=False, timeout=15)
        raise Fail(f"slurm: job {job} still {info.get('JobState')} (reason "
                   f"{info.get('Reason')}) after {timeout_s}s (cancelled)\n" + self.logs_tail())

    def edit_hosts(self, host, drop_name):
        """Removes every line naming `drop_name` from `host`'s /etc/hosts, in place (the file
        is bind-mounted into each exec of the host: its inode must stay)."""
        path = f"/etc/netns/{self.cluster.prefix}-{host}/hosts"
        with open(path, "r+") as f:
            lines = f.read().splitlines(keepends=True)
            kept = [l for l in lines if drop_name not in l.split()[1:]]
            f.seek(0)
            f.write("".join(kept))
            f.truncate()
        return len(lines) - len(kept)

    # ----------------------------------------------------------------------------- stop
    def stop(self):
        """Stops every job, daemon and host; returns what is left (empty: nothing)."""
        left = []
        if not self.started:
            return left
        try:
            if any(l == "slurmctld" and p.poll() is None for l, p in self.daemons):
                self.cmd(self.ctl_host, "scancel", "--user=root", check=False, timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            pass
        # slurmds first (no node reports back to a controller gone), then the controller,
        # munged last (everything else authenticates through it).
        order = sorted(self.daemons, key=lambda d: (d[0] == "munged", d[0] == "slurmctld"))
        for label, p in order:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                p.wait(timeout=8)
            except subprocess.TimeoutExpired:
                left.append(f"{label} (pid {p.pid}) ignored SIGTERM for 8 s: SIGKILL")
                p.kill()
                p.wait()
        # job steps (slurmstepd, tasks) still in the hosts: cluster.sh down kills them
        left += self.cluster.down()
        for label, p in self.daemons:
            try:
                os.kill(p.pid, 0)
                left.append(f"{label} pid {p.pid} still exists")
            except ProcessLookupError:
                pass
        leftovers = self.processes_using_work()
        if leftovers:
            left.append(f"processes still using {self.work}: {leftovers}")
            for pid in leftovers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if os.path.exists(self.run_dir):
            left.append(f"{self.run_dir} could not be removed")
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
            if os.path.exists(self.work):
                left.append(f"{self.work} could not be removed")
        self.started = False
        return left

    def processes_using_work(self):
        """pids whose command line or environment names the scratch directory (a daemon or
        job step that escaped)."""
        me = os.getpid()
        found = []
        needles = (self.work.encode(), self.run_dir.encode())
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == me:
                continue
            for what in ("cmdline", "environ"):
                try:
                    with open(f"/proc/{d}/{what}", "rb") as f:
                        data = f.read()
                        if any(n in data for n in needles):
                            found.append(int(d))
                            break
                except OSError:
                    pass
        return found

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        if exc[0] is not None:
            self.keep = True               # the daemons' logs and the conf, for the failure
        left = self.stop()
        if left:
            log(f"slurm: left behind: {left}")
            if exc[0] is None:
                raise Fail(f"slurm: left behind: {left}")
        return False
