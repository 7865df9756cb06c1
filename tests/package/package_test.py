#!/usr/bin/env python3
"""The Debian package of a build tree, built, inspected, extracted and used (issue 16 item 7).

    package_test.py --build-dir BUILD --source SRC --cpack CPACK --cmake CMAKE --version V
                    --prefix P --bindir B --libdir L --mandir M --datadir D --includedir I
                    --bpf yes|no --python VENV/bin/python3 --work DIR

1. `cpack -G DEB` of BUILD (its CPackConfig.cmake) into a scratch directory.
2. `dpkg-deb -I`: Package rdzvscope, the project's version, this machine's architecture, a
   maintainer, and a Depends naming the package of every library the CLI, the shim and the
   SPANK plugin link (found here with readelf + ldconfig + dpkg -S, not a list kept by hand).
   `dpkg-deb -c`: everything under P; the CLI, the shim, the header, the CMake config, every
   man page of SRC/docs/man and every file of SRC/examples (scripts executable); the CLI holds
   the BPF object of `attach` (an ELF for machine BPF inside it) when --bpf yes.
3. `dpkg-deb -x` into an empty root R, then from R only: `R/P/B/rdzvscope run` preloads
   R/P/L/librdzvscope.so (found beside itself, no RDZVSCOPE_SHIM), and with that file renamed
   says in one line where it looked; --version, --help; `man -l` of a page and `man -M` by
   name; as root with BTF, `attach --all` loads its probes; a find_package(rdzvscope) consumer
   configured with CMAKE_PREFIX_PATH=R/P reads a trace header through rdzvscope::format and
   knows rdzvscope::rdzvscope_shim's path; then the demo's job (tests/examples/run_examples.py
   torchrun_sh with R's CLI and R's examples: torchrun, 4 workers, rank 2 late) and its
   verdict, straggler_timeout, rank 2.
Exit 0 = pass, 1 = fail, 77 = skipped (no dpkg-deb or dpkg-shlibdeps: not a Debian machine).
"""
import argparse
import glob
import importlib.util
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import cli  # noqa: E402
from rdzvtest.checks import expect, log  # noqa: E402
from rdzvtest.launch import job_env  # noqa: E402

MAN_PAGES_DIR = ("docs", "man")
EM_BPF = 247

CONSUMER_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(rdzvscope_consumer LANGUAGES CXX)
find_package(rdzvscope 0.1 CONFIG REQUIRED)
add_executable(read_header read_header.cpp)
target_link_libraries(read_header PRIVATE rdzvscope::format)
set_target_properties(read_header PROPERTIES CXX_STANDARD 20)
target_compile_definitions(read_header PRIVATE
  SHIM_PATH="$<TARGET_FILE:rdzvscope::rdzvscope_shim>")
"""
# Reads the fixed header of a trace file with the installed header's struct: its magic,
# version, pid and host, and the shim's path as the package config gave it.
CONSUMER_CPP = r"""#include <rdzvscope/trace_format.h>
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  static rdzv_file_header h;
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(&h, sizeof h, 1, f) != 1) return 3;
  std::printf("magic_ok=%d version=%u pid=%d host=%.64s shim=%s\n",
              std::memcmp(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN) == 0, h.version, h.pid, h.host,
              SHIM_PATH);
  return 0;
}
"""


def run(argv, timeout=120, **kw):
    """Runs argv in a session of its own, killed whole at the timeout (cpack's build tool,
    torchrun's workers: nothing outlives the test)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def control_fields(text):
    """`dpkg-deb -I` -> {Field: value} of the control file (continuation lines dropped)."""
    fields = {}
    for line in text.splitlines():
        m = re.match(r"^ ([A-Z][A-Za-z-]+): (.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2).strip()
    return fields


def listing(text):
    """`dpkg-deb -c` -> {path without the leading '.': permission string}."""
    files = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].split(" -> ")[0]
            files[path[1:].rstrip("/") or "/"] = parts[0]
    return files


def needed_packages(paths):
    """The Debian packages holding the libraries that these ELF files link directly (their
    NEEDED entries, as dpkg-shlibdeps reads them; ldd says where each one is loaded from)."""
    pkgs, unknown = {}, []
    for path in paths:
        dyn = run(["readelf", "-d", path]).stdout
        loaded = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", path]).stdout, re.M))
        for soname in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
            lib = loaded.get(soname)
            owner = None
            # merged /usr: dpkg may know the file as /lib/... or /usr/lib/..., by link or target
            for cand in ({lib, os.path.realpath(lib)} if lib else set()):
                for c in (cand, cand.replace("/usr/lib/", "/lib/", 1),
                          cand.replace("/lib/", "/usr/lib/", 1) if cand.startswith("/lib/") else cand):
                    q = run(["dpkg", "-S", c])
                    if q.returncode == 0:
                        owner = q.stdout.split(":")[0].strip()
                        break
                if owner:
                    break
            if owner:
                pkgs[soname] = owner
            else:
                unknown.append(f"{soname} ({lib})")
    return pkgs, unknown


def provides(pkg):
    """The names an installed package provides (Debian's libspdlog1.10 provides
    libspdlog1.10-fmt9, the name its shlibs file gives dpkg-shlibdeps)."""
    q = run(["dpkg-query", "-W", "-f=${Provides}", pkg])
    return {p.strip().split()[0] for p in q.stdout.split(",") if p.strip()}


def has_bpf_object(path):
    """True when an ELF object for machine BPF is embedded in the file (libbpf's skeleton)."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.find(b"\x7fELF", 1)
    while at >= 0:
        if at + 20 <= len(data) and struct.unpack_from("<H", data, at + 18)[0] == EM_BPF:
            return True
        at = data.find(b"\x7fELF", at + 1)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("build-dir", "source", "cpack", "cmake", "version", "prefix", "bindir", "libdir",
                "mandir", "datadir", "includedir", "python", "work"):
        ap.add_argument(f"--{opt}", required=True)
    ap.add_argument("--bpf", choices=("yes", "no"), required=True)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    for tool in ("dpkg-deb", "dpkg-shlibdeps", "dpkg", "readelf", "man"):
        if not shutil.which(tool):
            log(f"SKIP package.deb: no {tool} (apt-get install dpkg-dev binutils man-db)")
            return 77
    os.makedirs(a.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="deb-", dir=a.work)
    t0 = time.monotonic()
    errors = []
    try:
        check_package(a, work, errors)
    except (subprocess.TimeoutExpired, OSError) as e:
        errors.append(str(e))
    took = time.monotonic() - t0
    if errors:
        for e in errors:
            print(f"FAIL: {e}")
        print(f"(scratch kept in {work}; {took:.1f}s)")
        return 1
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"PASS: package.deb ({took:.1f}s)")
    return 0


def check_package(a, work, errors):
    prefix = a.prefix.rstrip("/")
    rel = lambda *p: os.path.join(prefix, *p)           # noqa: E731  a path inside the package
    # 1. the package
    t = time.monotonic()
    pkgdir = os.path.join(work, "pkg")
    p = run([a.cpack, "-G", "DEB", "--config", os.path.join(a.build_dir, "CPackConfig.cmake"),
             "-B", pkgdir], timeout=240, cwd=work)
    debs = glob.glob(os.path.join(pkgdir, "*.deb"))
    log(f"cpack -G DEB: exit {p.returncode}, {[os.path.basename(d) for d in debs]} in "
        f"{time.monotonic() - t:.1f}s")
    if p.returncode != 0 or len(debs) != 1:
        errors.append(f"cpack -G DEB exited {p.returncode}, made {debs}: "
                      f"{(p.stdout + p.stderr)[-3000:]}")
        return
    deb = debs[0]
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    expect(os.path.basename(deb) == f"rdzvscope_{a.version}_{arch}.deb",
           f"package file {os.path.basename(deb)}", errors)

    # 2. its control fields and its files
    info = run(["dpkg-deb", "-I", deb])
    fields = control_fields(info.stdout)
    log("dpkg-deb -I: " + ", ".join(f"{k}: {v}" for k, v in fields.items()))
    expect(fields.get("Package") == "rdzvscope", f"Package: {fields.get('Package')}", errors)
    expect(fields.get("Version") == a.version, f"Version: {fields.get('Version')}", errors)
    expect(fields.get("Architecture") == arch, f"Architecture: {fields.get('Architecture')}",
           errors)
    expect("@" in fields.get("Maintainer", ""), f"Maintainer: {fields.get('Maintainer')}", errors)
    expect("rendezvous" in fields.get("Description", ""),
           f"Description: {fields.get('Description')}", errors)
    depends = {d.strip().split()[0] for d in fields.get("Depends", "").split(",") if d.strip()}
    files = listing(run(["dpkg-deb", "-c", deb]).stdout)
    outside = [f for f in files if f != "/" and not (f + "/").startswith(prefix + "/")
               and not (prefix + "/").startswith(f + "/")]
    expect(not outside, f"files outside {prefix}: {outside[:10]}", errors)
    want = [rel(a.bindir, "rdzvscope"), rel(a.libdir, "librdzvscope.so"),
            rel(a.includedir, "rdzvscope", "trace_format.h"),
            rel(a.libdir, "cmake", "rdzvscope", "rdzvscopeConfig.cmake"),
            rel(a.libdir, "cmake", "rdzvscope", "rdzvscopeConfigVersion.cmake"),
            rel(a.libdir, "cmake", "rdzvscope", "rdzvscopeTargets.cmake")]
    pages = sorted(os.listdir(os.path.join(a.source, *MAN_PAGES_DIR)))
    want += [rel(a.mandir, "man1", page) for page in pages]
    examples = rel(a.datadir, "rdzvscope", "examples")
    src_examples = os.path.join(a.source, "examples")
    scripts = []
    for root, dirs, names in os.walk(src_examples):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            path = os.path.join(examples, os.path.relpath(os.path.join(root, n), src_examples))
            want.append(path)
            if os.access(os.path.join(root, n), os.X_OK):
                scripts.append(path)
    missing = [w for w in want if w not in files]
    expect(not missing, f"not in the package: {missing}", errors)
    not_exec = [s for s in scripts if "x" not in files.get(s, "x")]
    expect(not not_exec, f"scripts not executable in the package: {not_exec}", errors)
    log(f"dpkg-deb -c: {len(files)} entries; {len(pages)} man pages, "
        f"{len([w for w in want if w.startswith(examples)])} example files")

    # 3. extracted into an empty root, used from there
    root = os.path.join(work, "root")
    x = run(["dpkg-deb", "-x", deb, root])
    expect(x.returncode == 0, f"dpkg-deb -x exited {x.returncode}: {x.stderr}", errors)
    inroot = lambda p: os.path.join(root, p.lstrip("/"))  # noqa: E731
    exe = inroot(rel(a.bindir, "rdzvscope"))
    shim = inroot(rel(a.libdir, "librdzvscope.so"))
    elf = [exe, shim] + glob.glob(inroot(rel(a.libdir, "rdzvscope_spank.so")))
    pkgs, unknown = needed_packages(elf)
    expect(not unknown, f"libraries linked but not found in a package here: {unknown}", errors)
    absent = sorted({f"{pkg} ({so})" for so, pkg in pkgs.items()
                     if pkg not in depends and not depends & provides(pkg)})
    expect(not absent, f"Depends ({fields.get('Depends')}) lacks {absent}", errors)
    log(f"linked: {sorted(set(pkgs.values()))}; Depends: {fields.get('Depends')}")
    if a.bpf == "yes":
        expect(has_bpf_object(exe), f"{exe} holds no BPF object (attach's probes)", errors)

    env = job_env(PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    env.pop("RDZVSCOPE_SHIM", None)
    v = run([exe, "--version"], env=env)
    expect(v.returncode == 0 and v.stdout.strip() == f"rdzvscope {a.version}",
           f"--version: exit {v.returncode}, {v.stdout.strip()!r}", errors)
    h = run([exe, "--help"], env=env)
    expect(h.returncode == 0 and all(c in h.stdout for c in ("run", "analyze", "attach", "dump")),
           f"--help: exit {h.returncode}, {h.stdout[:300]!r}", errors)

    # the shim, found beside the installed CLI: the child's LD_PRELOAD names it
    traces = os.path.join(work, "traces")
    # (a process gets a trace file at its first call of interest: here a lookup)
    probe = ("import os, socket; socket.getaddrinfo('localhost', 29500); "
             "print('preload=' + os.environ.get('LD_PRELOAD', ''))")
    r = run([exe, "run", "--out", traces, "--", sys.executable, "-c", probe], env=env)
    got = re.findall(r"preload=(\S*)", r.stdout)
    expect(r.returncode == 0 and got == [shim], f"`run` from the root: exit {r.returncode}, "
           f"LD_PRELOAD {got}, expected [{shim}]: {r.stderr[-500:]}", errors)
    rzt = sorted(glob.glob(os.path.join(traces, "*.rzt")))
    expect(rzt, f"`run` from the root wrote no trace in {traces}", errors)
    os.rename(shim, shim + ".away")
    try:
        r = run([exe, "run", "--out", traces, "--", "/bin/true"], env=env)
    finally:
        os.rename(shim + ".away", shim)
    msg = r.stderr.strip()
    expect(r.returncode != 0 and "cannot find the shim" in msg and shim in msg
           and len(msg.splitlines()) == 1,
           f"`run` without the installed shim: exit {r.returncode}, {msg!r}", errors)

    # man pages: one by file, one by name in the installed tree
    man_env = dict(env, MANPAGER="cat", PAGER="cat", MANWIDTH="100")
    page = inroot(rel(a.mandir, "man1", "rdzvscope-attach.1"))
    m = run(["man", "-l", page], env=man_env)
    expect(m.returncode == 0 and "rdzvscope attach" in m.stdout and "--same-netns" in m.stdout,
           f"man -l {page}: exit {m.returncode}, {(m.stdout + m.stderr)[:300]!r}", errors)
    m = run(["man", "-M", inroot(rel(a.mandir)), "rdzvscope-run"], env=man_env)
    expect(m.returncode == 0 and "rdzvscope run" in m.stdout,
           f"man -M {inroot(rel(a.mandir))} rdzvscope-run: exit {m.returncode}, "
           f"{(m.stdout + m.stderr)[:300]!r}", errors)

    # attach's probes, from the package's CLI (root and a kernel with BTF only)
    if a.bpf == "yes" and os.geteuid() == 0 and os.path.exists("/sys/kernel/btf/vmlinux"):
        at = run([exe, "attach", "--all", "--port", "1", "--duration", "1", "--out",
                  os.path.join(work, "attach")], env=env, timeout=60)
        expect(at.returncode == 0 and "recording all processes" in at.stderr,
               f"attach from the root: exit {at.returncode}: {at.stderr[-800:]}", errors)
    else:
        log("attach from the root not run: needs root, BTF and a CLI built with BPF")

    # a find_package(rdzvscope) consumer, against the root only
    src = os.path.join(work, "consumer")
    os.makedirs(src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(CONSUMER_CMAKE)
    with open(os.path.join(src, "read_header.cpp"), "w") as f:
        f.write(CONSUMER_CPP)
    bld = os.path.join(work, "consumer-build")
    c = run([a.cmake, "-S", src, "-B", bld, f"-DCMAKE_PREFIX_PATH={inroot(prefix)}",
             "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF",
             "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"], env=env, timeout=120)
    if c.returncode == 0:
        c = run([a.cmake, "--build", bld], env=env, timeout=120)
    expect(c.returncode == 0, f"the find_package consumer: {(c.stdout + c.stderr)[-2000:]}", errors)
    if c.returncode == 0 and rzt:
        o = run([os.path.join(bld, "read_header"), rzt[0]], env=env)
        got = dict(kv.split("=", 1) for kv in o.stdout.split())
        want_pid = cli.dump(exe, rzt[0])[0]["header"]["pid"]
        expect(o.returncode == 0 and got.get("magic_ok") == "1" and got.get("version") == "1"
               and got.get("pid") == str(want_pid) and got.get("shim") == shim,
               f"the consumer read {got} from {rzt[0]} (pid {want_pid}, shim {shim})", errors)

    # the demo's job with the installed CLI and the installed examples
    run_examples = os.path.join(a.source, "tests", "examples", "run_examples.py")
    t = time.monotonic()
    d = run([sys.executable, run_examples, "torchrun_sh", "--rdzvscope", exe, "--python",
             a.python, "--examples", inroot(examples), "--work", os.path.join(work, "demo")],
            env=dict(os.environ), timeout=240)
    log(f"the demo's job from the root ({time.monotonic() - t:.1f}s): {d.stdout.strip()[-400:]}")
    expect(d.returncode == 0, f"the demo's job from the root failed: "
                              f"{(d.stdout + d.stderr)[-3000:]}", errors)


if __name__ == "__main__":
    sys.exit(main())
