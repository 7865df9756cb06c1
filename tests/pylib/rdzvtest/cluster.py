"""The test cluster of tests/cluster/cluster.sh from Python: hosts node0..node(N-1), each a
network namespace with its own host name and /etc/hosts, under a prefix of the caller's own
(removed by `down` in every exit path, and by the next `up` when the caller was killed)."""
import os
import shutil
import subprocess

from rdzvtest.checks import Fail

CLUSTER_SH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "..", "..", "cluster", "cluster.sh"))


def missing_requirements():
    """Why the cluster cannot be made here (the tests then exit 77), else None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, iptables)"
    for tool in ("ip", "iptables", "unshare"):
        if not shutil.which(tool):
            return f"needs `{tool}` (apt-get install iproute2 iptables util-linux)"
    return None


class Cluster:
    """cluster.sh with a prefix of its own; `down` in every exit path."""

    def __init__(self, n, prefix=None):
        self.prefix = prefix or f"rze{os.getpid()}"
        self.n = n
        self.hosts = [f"node{i}" for i in range(n)]
        self.up_done = False
        self.addr = {}

    def sh(self, *args, check=True, timeout=60):
        env = dict(os.environ, RDZV_CLUSTER_OWNER=str(os.getpid()))
        p = subprocess.run([CLUSTER_SH, "-p", self.prefix] + list(args), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise Fail(f"`cluster.sh -p {self.prefix} {' '.join(args)}` exited "
                       f"{p.returncode}: {p.stdout.strip()}")
        return p.stdout

    def up(self):
        self.up_done = True
        out = self.sh("up", str(self.n))
        self.addr = {}
        for line in self.sh("hosts").splitlines():
            host, addr, _ns = line.split()
            self.addr[host] = addr
        return out

    def exec_prefix(self, host):
        """The command prefix that runs a command on `host`."""
        return [CLUSTER_SH, "-p", self.prefix, "exec", host]

    def run_on(self, host, *cmd, check=True):
        return self.sh("exec", host, *cmd, check=check)

    def down(self):
        """Removes the cluster; returns what is left of it (empty when nothing is)."""
        if not self.up_done:
            return []
        self.sh("down", check=False)
        left = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
        stale = [l.split()[0] for l in left.splitlines() if l.startswith(self.prefix + "-")]
        for path in (f"/run/rdzvscope-cluster/{self.prefix}",
                     *(f"/etc/netns/{self.prefix}-{h}" for h in self.hosts)):
            if os.path.exists(path):
                stale.append(path)
        return stale
