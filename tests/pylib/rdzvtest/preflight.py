"""Running `rdzvscope preflight` on the hosts of a test cluster (rdzvtest.cluster), all at
once as on a real job's nodes, and reading what each said: its exit status, its text report
(stdout) and its JSON report (the --out file, schema rdzvscope.preflight/1)."""
import json
import os
import subprocess
import time

from rdzvtest.checks import expect
from rdzvtest.launch import job_env, read


class NodePreflight:
    """One host's preflight: started in a session of its own, its stdout+stderr in a log."""

    def __init__(self, host, popen, log_path, out_dir):
        self.host, self.popen, self.log_path, self.out_dir = host, popen, log_path, out_dir
        self.rc = None

    @property
    def label(self):
        return f"preflight@{self.host}"

    def text(self):
        return read(self.log_path)

    def report(self):
        """The JSON report it wrote with --out, or None."""
        path = os.path.join(self.out_dir, f"preflight.{self.host}.json")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError):
            return None

    def checks(self, name=None):
        """Its report's checks (those called `name`)."""
        rep = self.report() or {}
        return [c for c in rep.get("checks", []) if name is None or c.get("name") == name]


def start(cluster, host, rdzvscope, work, args, env=None, wrap=()):
    """`rdzvscope preflight ARGS --out WORK/out` on `host` (wrap: a command put in front of
    rdzvscope, e.g. ("sh", "-c", "ulimit -n 128; exec \"$@\"", "sh")). Returns NodePreflight."""
    out_dir = os.path.join(work, "out")
    log_path = os.path.join(work, f"preflight-{host}.log")
    e = job_env(**(env or {}))
    cmd = cluster.exec_prefix(host) + list(wrap) + [rdzvscope, "preflight", "--out", out_dir] + list(args)
    with open(log_path, "w") as out:
        popen = subprocess.Popen(cmd, env=e, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    return NodePreflight(host, popen, log_path, out_dir)


def wait(preflights, bound_s):
    """Every preflight's exit status, by bound_s; one still running then is killed (rc None)."""
    deadline = time.monotonic() + bound_s
    for p in preflights:
        try:
            p.rc = p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.popen.pid, 9)
            p.popen.wait()
            p.rc = None


def expect_check(p, name, verdict, needles, errors):
    """p's JSON report has a check `name` with `verdict` whose measured text holds every one
    of needles; the text report on its stdout holds them too."""
    checks = p.checks(name)
    hit = [c for c in checks if c.get("verdict") == verdict
           and all(n in c.get("measured", "") for n in needles)]
    expect(hit, f"{p.label}: no {verdict} check '{name}' with {needles!r}; its checks: "
                f"{json.dumps(p.checks())[:1500]}\n{p.text()[-1500:]}", errors)
    text = " ".join(p.text().split())   # the text report wraps its lines
    for n in needles:
        expect(" ".join(n.split()) in text, f"{p.label}: its text report lacks {n!r}", errors)


def expect_rc(p, rc, errors):
    expect(p.rc == rc, f"{p.label}: exit status {p.rc}, expected {rc}\n{p.text()[-2500:]}", errors)
