#!/usr/bin/env python3
"""A trace directory with thousands of good files and every kind of bad one (issue 6).

    bad_trace_dir.py GEN_JOB RDZVSCOPE WORKDIR [N]

GEN_JOB writes an N-rank straggler job (bench/scale/gen_job). Beside it, the test plants a
zero-length file, a file without the magic, one of a future format version, one cut inside
a record, one with impossible record values, a FIFO, a directory, a dangling symlink and a
file the analyzer may not read (as root the analyzer runs as `nobody` for that). Then:
  - `rdzvscope analyze` exits 0 and says one line on stderr per bad file, naming the file
    and what is wrong with it;
  - the report counts every file and every damaged one;
  - the verdict and the initiating rank are those of the clean job: the damage changed
    nothing else.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HEADER_SIZE, RECORD_SIZE = 4096, 192
OFF_VERSION = 8                  # struct rdzv_file_header: magic[8], then version
OFF_TS, OFF_DUR = 8, 16          # struct rdzv_record: ts_ns, dur_ns
NOBODY = 65534

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def analyze(rdzvscope, path, as_nobody):
    cmd = [rdzvscope, "analyze", path, "--format", "json"]
    if as_nobody:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + cmd
    # The bound only turns a hang (the FIFO bug) into a failure; it asserts no speed.
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    return p.returncode, p.stdout, p.stderr


def patch(path, offset, fmt, value):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


def main():
    gen_job, rdzvscope, work = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
    as_nobody = os.geteuid() == 0
    if as_nobody and not shutil.which("setpriv"):
        print("bad_trace_dir: root, and no setpriv to drop privileges: cannot make a file "
              "unreadable for the analyzer")
        return 1
    if as_nobody:
        # nobody must reach the job through every parent directory: a build tree under a
        # 0700 directory (mktemp -d) would fail the clean run with EACCES, so use /tmp.
        work = tempfile.mkdtemp(prefix="rdzvscope-bad-trace-dir-", dir="/tmp")
    else:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    os.chmod(work, 0o755)
    job = os.path.join(work, "job")
    subprocess.run([gen_job, job, str(n)], check=True, stdout=subprocess.DEVNULL)
    os.chmod(job, 0o755)
    good = sorted(f for f in os.listdir(job) if f.endswith(".rzt"))
    check(len(good) == n, f"gen_job wrote {len(good)} files, want {n}")
    for f in good:
        os.chmod(os.path.join(job, f), 0o644)

    rc, out, err = analyze(rdzvscope, job, as_nobody)
    if rc != 0:
        print(f"FAIL: the clean job: exit {rc}\n{err}")
        return 1
    clean = json.loads(out)
    print(f"clean job: {n} files, verdict {clean['verdict']['class']} "
          f"rank {clean['verdict']['initiating_rank']}")

    def path(name):
        return os.path.join(job, name)

    def copy_of(i, name):
        shutil.copyfile(path(good[i]), path(name))
        os.chmod(path(name), 0o644)
        return path(name)

    # name -> what the one stderr line about it must say. Files rejected whole are copies
    # of good files (so they would change the job if they were read); the damaged-but-used
    # ones are good files of ranks that are neither the store host nor the straggler.
    expected = {}
    open(path("empty.rzt"), "w").close()
    os.chmod(path("empty.rzt"), 0o644)
    expected["empty.rzt"] = "too short"
    p = copy_of(1, "bad-magic.rzt")
    patch(p, 0, "8s", b"NOTATRCE")
    expected["bad-magic.rzt"] = "magic"
    p = copy_of(2, "future-version.rzt")
    patch(p, OFF_VERSION, "<I", 99)
    expected["future-version.rzt"] = "version 99"
    cut = path(good[3])
    with open(cut, "r+b") as f:
        f.truncate(HEADER_SIZE + 2 * RECORD_SIZE + RECORD_SIZE // 2)
    expected[good[3]] = "truncated"
    odd = path(good[4])
    patch(odd, HEADER_SIZE + OFF_DUR, "<Q", 1 << 62)
    expected[good[4]] = "impossible times"
    os.mkfifo(path("fifo.rzt"))
    expected["fifo.rzt"] = "not a regular file"
    os.mkdir(path("subdir.rzt"))
    expected["subdir.rzt"] = "is a directory"
    os.symlink(path("gone.rzt"), path("dangling.rzt"))
    expected["dangling.rzt"] = "No such file or directory"
    p = copy_of(5, "unreadable.rzt")
    os.chmod(p, 0o000)
    expected["unreadable.rzt"] = "Permission denied"

    rc, out, err = analyze(rdzvscope, job, as_nobody)
    check(rc == 0, f"exit {rc}, want 0 (damage is reported, the analysis goes on)")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    for name, words in expected.items():
        about = [ln for ln in lines if path(name) + ":" in ln]
        check(len(about) == 1, f"want one stderr line about {name}, got {about}")
        check(all(words in ln for ln in about),
              f"the line about {name} does not say {words!r}: {about}")
    named = {ln for ln in lines if any(path(nm) + ":" in ln for nm in expected)}
    check(named == set(lines), f"stderr lines about nothing planted: {sorted(set(lines) - named)}")
    try:
        d = json.loads(out)
    except ValueError as e:
        print(f"FAIL: the report is not JSON ({e})\n{out[:2000]}")
        return 1
    inputs = d["inputs"]
    total = n + len(expected) - 2   # two of the planted names are good files, damaged
    check(inputs["trace_files"] == total,
          f"trace_files {inputs['trace_files']}, want {total}")
    check(inputs["damaged_files"] == len(expected),
          f"damaged_files {inputs['damaged_files']}, want {len(expected)}")
    check(len(inputs.get("problems") or []) == len(expected),
          f"the report lists {len(inputs.get('problems') or [])} problems, want {len(expected)}")
    for key in ("class", "initiating_rank", "initiating_host"):
        check(d["verdict"][key] == clean["verdict"][key],
              f"verdict {key} {d['verdict'][key]!r}, the clean job's {clean['verdict'][key]!r}")

    if failures:
        print("FAIL:\n  - " + "\n  - ".join(failures))
        print("stderr of the analysis:\n" + err)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"ok: {total} files, {len(expected)} damaged, each named once on stderr; "
          "the verdict is the clean job's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
