#!/usr/bin/env python3
"""`rdzvscope watch`'s terminal view, in a real terminal (tmux): the headline and the rank
states on screen, one line per rank when they fit and folded by state and host when they do
not, redrawn to the new size when the window is resized, and `q` quits with status 0 and
gives the terminal back.

    watch_terminal.py --rdzvscope BIN --gen GEN_JOB --work DIR
(GEN_JOB: bench/scale's generator of a synthetic job's trace files.)
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import Fail, expect, finish_scenario, run_script  # noqa: E402


class Tmux:
    """A tmux server of its own (-L), so that nothing of the user's sessions is touched."""

    def __init__(self, name):
        self.base = ["tmux", "-L", name, "-f", "/dev/null"]

    def __call__(self, *args, check=True):
        p = subprocess.run(self.base + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30)
        if check and p.returncode != 0:
            raise Fail(f"tmux {' '.join(args)}: {p.stdout.strip()}")
        return p.stdout

    def screen(self):
        return self("capture-pane", "-p", "-t", "w").rstrip("\n").split("\n")

    def wait_for(self, needle, bound_s=40):
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            lines = self.screen()
            if any(needle in line for line in lines):
                return lines
            time.sleep(0.2)
        raise Fail(f"{needle!r} never on screen; the screen:\n" + "\n".join(self.screen()))

    def kill(self):
        self("kill-server", check=False)


def start(tmux, rdzvscope, trace_dir, cols, rows, status_file, strace_out=None):
    """watch in a new window; its exit status lands in status_file (tmux's own pane_dead_status
    is not always filled in). With strace_out, watch's writes are recorded there."""
    strace = f"strace -o {strace_out} -e trace=write -e signal=none -s 100000 " if strace_out else ""
    tmux("new-session", "-d", "-s", "w", "-x", str(cols), "-y", str(rows),
         f"{strace}{rdzvscope} watch {trace_dir} --interval 0.3; echo $? > {status_file}; sleep 30")


def wait_for_table(tmux, rows, bound_s=40):
    """The screen once it shows `rows` rank lines (or the last screen seen after bound_s)."""
    deadline = time.monotonic() + bound_s
    lines = tmux.screen()
    while time.monotonic() < deadline:
        lines = tmux.screen()
        if len(rank_lines(lines)) >= rows:
            break
        time.sleep(0.2)
    return lines


def rank_lines(lines):
    return [line for line in lines if len(line.split()) > 2 and line.split()[0].isdigit()
            and line.split()[1].startswith("node")]


def frames_torn(strace_out):
    """The frames (they start by homing the cursor, ESC [ H) that took more than one write():
    a terminal shows such a frame half drawn. strace writes ESC as \\33."""
    torn = []
    for line in open(strace_out, errors="replace"):
        if line.startswith('write(1, "\\33[H') and '\\33[J"' not in line:
            torn.append(line[:100])
    return torn


def quit_with_q(tmux, status_file, errors, what):
    tmux("send-keys", "-t", "w", "q")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.exists(status_file) and open(status_file).read().strip():
            status = open(status_file).read().strip()
            expect(status == "0", f"{what}: watch exited with {status} after q", errors)
            # Back on the normal screen: the alternate screen held the view.
            expect(not any("ranks joined" in line for line in tmux.screen()),
                   f"{what}: the view is still on screen after q", errors)
            return
        time.sleep(0.2)
    errors.append(f"{what}: watch still running 30 s after q; the screen:\n" + "\n".join(tmux.screen()))


def small_job(tmux, args, work, errors):
    """8 ranks fit: one line per rank."""
    d = os.path.join(work, "small")
    subprocess.run([args.gen, d, "8"], check=True, stdout=subprocess.DEVNULL)
    status = os.path.join(work, "small.status")
    writes = os.path.join(work, "small.strace")
    start(tmux, args.rdzvscope, d, 120, 40, status, writes)
    lines = wait_for_table(tmux, 8)
    text = "\n".join(lines)
    expect(any(line.startswith("7 of 8 ranks joined; missing: 7 (") for line in lines),
           f"small: no headline naming rank 7 on screen:\n{text}", errors)
    table = rank_lines(lines)
    expect(len(table) == 8, f"small: {len(table)} rank lines on screen, expected 8:\n{text}", errors)
    quit_with_q(tmux, status, errors, "small")
    torn = frames_torn(writes)
    expect(not torn, f"small: {len(torn)} frame(s) written in pieces, the first: {torn[:1]}", errors)
    tmux("kill-session", "-t", "w", check=False)


def large_job(tmux, args, work, errors):
    """1,024 ranks do not fit: folded by state and host; then the window is resized."""
    d = os.path.join(work, "large")
    subprocess.run([args.gen, d, "1024"], check=True, stdout=subprocess.DEVNULL)
    status = os.path.join(work, "large.status")
    start(tmux, args.rdzvscope, d, 120, 40, status)
    lines = tmux.wait_for("STATE")
    text = "\n".join(lines)
    expect(any(line.startswith("1023 of 1024 ranks joined") for line in lines), f"large: headline:\n{text}", errors)
    expect(len(lines) <= 40 and all(len(line) <= 120 for line in lines), f"large: beyond 120x40:\n{text}", errors)
    tmux("resize-window", "-t", "w", "-x", "70", "-y", "15")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = tmux.screen()
        if len(lines) <= 15 and any(line.startswith("1023 of 1024") for line in lines):
            break
        time.sleep(0.2)
    text = "\n".join(lines)
    expect(len(lines) <= 15 and all(len(line) <= 70 for line in lines),
           f"large: after the resize to 70x15 the screen is {max(map(len, lines))}x{len(lines)}:\n{text}", errors)
    expect(any(line.startswith("1023 of 1024") for line in lines), f"large: headline lost after the resize:\n{text}",
           errors)
    quit_with_q(tmux, status, errors, "large")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    t_start = time.monotonic()
    if not shutil.which("tmux"):
        raise Fail("tmux is not installed (scripts/install-deps.sh installs it)")
    if not shutil.which("strace"):
        raise Fail("strace is not installed (scripts/install-deps.sh installs it)")
    work = os.path.join(args.work, f"watch_terminal-{os.getpid()}")
    os.makedirs(work)
    errors = []
    tmux = Tmux(f"rdzvtest-{os.getpid()}")
    try:
        small_job(tmux, args, work, errors)
        large_job(tmux, args, work, errors)
    finally:
        tmux.kill()
    return finish_scenario("watch_terminal", errors, work, t_start, keep=False)


if __name__ == "__main__":
    run_script(main)
