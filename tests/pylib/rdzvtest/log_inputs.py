"""The input side of `rdzvscope analyze --log` (issue 13): building log files in the forms
users hand over (gzip, per-task Slurm names, torchrun's --log-dir layout, merged and prefixed
streams) from a directory of rank logs, and running `analyze --log` on them, standard input
included.

    rank_logs(dir)                   {rank: bytes} of dir's rankN.log files
    write_rank_logs(logs, dest, name, compress=False)
                                     one file per rank, named name.format(rank=N)
    merged(logs, prefix)             one stream of every rank's lines, each after
                                     prefix.format(rank=N)
    gzip_bytes(data)                 data as one gzip member
    analyze(rdzvscope, args, stdin=None)
                                     (exit status, verdict dict or None, stdout, stderr) of
                                     `rdzvscope analyze --format json ARGS`
"""
import gzip
import json
import os
import re
import subprocess

from rdzvtest.cli import CLI_SCRUB

RANK_LOG = re.compile(r"^rank(\d+)\.log$")


def rank_logs(src_dir):
    """{rank: content} of the rankN.log files of src_dir."""
    out = {}
    for name in os.listdir(src_dir):
        m = RANK_LOG.match(name)
        if m:
            with open(os.path.join(src_dir, name), "rb") as f:
                out[int(m.group(1))] = f.read()
    return out


# The project's e2e ranks begin their own lines with "[rankN] ", which the reader takes as the
# line's rank: stripped where a test wants the file name (or a prefix it adds) to be the only
# thing that says whose lines they are.
OWN_PREFIX = re.compile(rb"^\[rank\d+\] ", re.M)


def without_own_prefixes(logs):
    """{rank: content} with the e2e ranks' own "[rankN] " line prefixes removed."""
    return {rank: OWN_PREFIX.sub(b"", content) for rank, content in logs.items()}


def gzip_bytes(data):
    return gzip.compress(data, mtime=0)


def write_rank_logs(logs, dest, name, compress=False):
    """Writes each rank's log to dest/name.format(rank=N) (directories made), gzip-compressed
    when compress; returns the paths in rank order."""
    paths = []
    for rank in sorted(logs):
        path = os.path.join(dest, name.format(rank=rank))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(gzip_bytes(logs[rank]) if compress else logs[rank])
        paths.append(path)
    return paths


def merged(logs, prefix):
    """Every rank's lines in one stream, rank by rank, each line after prefix.format(rank=N)."""
    out = []
    for rank in sorted(logs):
        for line in logs[rank].splitlines(keepends=True):
            out.append(prefix.format(rank=rank).encode() + line)
    return b"".join(out)


def analyze(rdzvscope, args, stdin=None, timeout=60):
    """`rdzvscope analyze --format json ARGS` with stdin (bytes) on its standard input.
    Returns (exit status, verdict or None, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if k not in CLI_SCRUB}
    p = subprocess.run([rdzvscope, "analyze", "--format", "json"] + list(args), input=stdin or b"",
                       capture_output=True, env=env, timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    try:
        verdict = json.loads(out)["verdict"]
    except (ValueError, KeyError):
        verdict = None
    return p.returncode, verdict, out, err
