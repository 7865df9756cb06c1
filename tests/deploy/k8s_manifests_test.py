#!/usr/bin/env python3
"""The Kubernetes manifests of examples/kubernetes/, checked against the rest of the repository.

usage: k8s_manifests_test.py [REPO_ROOT]        (default: two levels above this script)

No cluster runs here. Every *.yaml of examples/kubernetes/ is parsed with a real YAML parser
(PyYAML: Debian's python3-yaml), its kinds and API versions checked, and what the manifests
hand to rdzvscope and to torchrun compared with what the sources and the tested examples use:

  - LD_PRELOAD names the shim file CMake builds (shim/CMakeLists.txt: OUTPUT_NAME), in an
    emptyDir that an init container of the rdzvscope image fills by copying the installed
    shim (the path of README.md and examples/slurm_job.sbatch, run by tests/slurm);
  - every RDZVSCOPE_* variable is read by the shim (core/, shim/) and documented in
    docs/commands.md; RDZVSCOPE_DIR's placeholders are those recorder_core.h expands and
    docs/commands.md lists, and its fixed part lies on a volume that outlives the pod (the
    ReadWriteMany claim of traces-pvc.yaml, or a hostPath);
  - torchrun gets the flags of examples/torchrun.sh (run by tests/examples), the same backend,
    an endpoint whose port the pods expose and RDZVSCOPE_PORTS names, and --rdzv-id equal to
    the TORCHELASTIC_RUN_ID that RDZVSCOPE_DIR's %j expands to;
  - every $(NAME) a container's args or env use is defined (Kubernetes leaves an undefined
    one as it is), or set by the training-operator in a PyTorchJob;
  - `rdzvscope attach` in the DaemonSet and in the kubectl debug recipes of
    examples/kubernetes/README.md and docs/kubernetes.md uses options that
    analyzer/cli/cmd_attach.cpp defines and tests/bpf passes, in a combination it accepts.

Every finding is listed; exit status 1 when there is one.
"""
import glob
import importlib.util
import os
import re
import shlex
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import expect  # noqa: E402

try:
    import yaml
except ImportError:
    sys.exit(f"k8s_manifests_test: {sys.executable} has no `yaml` module (Debian: apt-get install "
             "python3-yaml; pip: PyYAML); the manifests cannot be parsed")

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                       else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
K8S = os.path.join(ROOT, "examples", "kubernetes")

# The kinds the folder holds, by (apiVersion, kind), and how many documents of each.
EXPECTED_KINDS = {
    ("kubeflow.org/v1", "PyTorchJob"): 1,
    ("batch/v1", "Job"): 1,
    ("v1", "Service"): 1,
    ("apps/v1", "DaemonSet"): 1,
    ("v1", "PersistentVolumeClaim"): 1,
}
# What the training-operator puts into every container of a PyTorchJob's pods (v1 API).
OPERATOR_VARS = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED"}
OPERATOR_PREFIX = "PET_"
KUBEFLOW_CONTAINER = "pytorch"
KUBEFLOW_PORT_NAME = "pytorchjob-port"
RDZVSCOPE_IMAGE_RE = re.compile(r"/rdzvscope:")
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


# ------------------------------------------------------------------ facts from the repository

def shim_file_name():
    """lib<OUTPUT_NAME>.so of the SHARED target rdzvscope_shim (shim/CMakeLists.txt)."""
    text = read("shim", "CMakeLists.txt")
    if not re.search(r"add_library\(\s*rdzvscope_shim\s+SHARED", text):
        raise SystemExit("shim/CMakeLists.txt: no SHARED library rdzvscope_shim")
    m = re.search(r"set_target_properties\(\s*rdzvscope_shim\s+PROPERTIES(.*?)\)", text, re.S)
    name = re.search(r"\bOUTPUT_NAME\s+(\S+)", m.group(1)) if m else None
    if not name:
        raise SystemExit("shim/CMakeLists.txt: no OUTPUT_NAME for rdzvscope_shim")
    if not re.search(r"install\(\s*TARGETS\s+rdzvscope_shim\b.*?LIBRARY\s+DESTINATION\s+\$\{CMAKE_INSTALL_LIBDIR\}",
                     text, re.S):
        raise SystemExit("shim/CMakeLists.txt: rdzvscope_shim is not installed into CMAKE_INSTALL_LIBDIR")
    return "lib" + name.group(1) + ".so"


def installed_shim_path(shim):
    """The installed shim's path as examples/slurm_job.sbatch defaults it (tests/slurm runs that
    script) and as README.md states it; both must agree and end in `shim`."""
    sbatch = re.search(r"RDZVSCOPE_SHIM:-([^}]+)\}", read("examples", "slurm_job.sbatch"))
    if not sbatch:
        raise SystemExit("examples/slurm_job.sbatch: no ${RDZVSCOPE_SHIM:-PATH} default")
    path = sbatch.group(1)
    if os.path.basename(path) != shim:
        raise SystemExit(f"examples/slurm_job.sbatch installs {path}, CMake builds {shim}")
    if f"`{path}`" not in read("README.md"):
        raise SystemExit(f"README.md does not give {path} as the installed shim")
    return path


def shim_variables():
    """RDZVSCOPE_* names the shim and its recorder core read (string literals in core/, shim/,
    include/), and those docs/commands.md's environment table documents."""
    read_by_shim = set()
    for d in ("core", "shim", "include"):
        for path in glob.glob(os.path.join(ROOT, d, "**", "*"), recursive=True):
            if os.path.isfile(path) and path.endswith((".c", ".cpp", ".h")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    read_by_shim |= set(re.findall(r'"(RDZVSCOPE_[A-Z_]+)"', f.read()))
    env_section = read("docs", "commands.md").split("## Environment variables", 1)[-1]
    documented = set(re.findall(r"^\| `(RDZVSCOPE_[A-Z_]+)` \|", env_section, re.M))
    if "RDZVSCOPE_DIR" not in read_by_shim or "RDZVSCOPE_DIR" not in documented:
        raise SystemExit("RDZVSCOPE_DIR is neither read nor documented: the sources moved")
    return read_by_shim, documented


def supported_placeholders():
    """The placeholders of RDZVSCOPE_DIR that the recorder core expands (recorder_core.h's
    comment on rdzv_trace_dir_expand) and that docs/commands.md documents: both."""
    header = read("include", "rdzvscope", "recorder_core.h")
    m = re.search(r"/\* RDZVSCOPE_DIR's placeholders(.*?)\*/", header, re.S)
    if not m:
        raise SystemExit("recorder_core.h: no comment on RDZVSCOPE_DIR's placeholders")
    in_header = set(re.findall(r"%[A-Za-z%]", m.group(1)))
    row = re.search(r"^\| `RDZVSCOPE_DIR` \|(.*)$", read("docs", "commands.md"), re.M)
    in_docs = set(re.findall(r"`(%[A-Za-z%])`", row.group(1))) if row else set()
    both = in_header & in_docs
    if not {"%h", "%j"} <= both:
        raise SystemExit(f"placeholders: header {sorted(in_header)}, docs {sorted(in_docs)}")
    return both


def torchrun_sh_flags():
    """{flag: value} of the torchrun command line of examples/torchrun.sh (tests/examples runs it)."""
    text = read("examples", "torchrun.sh")
    cmd = text[text.index("torchrun \\"):]
    flags = dict(re.findall(r"^\s+(--[a-z][a-z-]*)=(\S+?)\s*\\?$", cmd, re.M))
    if not {"--rdzv-backend", "--rdzv-endpoint", "--nnodes"} <= set(flags):
        raise SystemExit(f"examples/torchrun.sh: torchrun flags not found ({flags})")
    return {k: v.strip('"') for k, v in flags.items()}


def attach_options():
    """{option name: takes a value} of `rdzvscope attach`: cmd_attach.cpp's add_option and
    add_flag, the -v/-q that main.cpp adds to every command, and --help."""
    opts = {"--help": False, "-h": False}
    for src in (read("analyzer", "cli", "cmd_attach.cpp"), read("analyzer", "cli", "main.cpp")):
        for kind, names in re.findall(r"add_(option|flag)\(\s*\"([^\"]+)\"", src):
            for n in names.split(","):
                if n.startswith("-"):
                    opts[n] = kind == "option"
    for must in ("--all", "--port", "--out", "--pid", "--comm", "--duration"):
        if must not in opts:
            raise SystemExit(f"cmd_attach.cpp: no {must} option found; parsed {sorted(opts)}")
    return opts


def attach_options_tested():
    """Options passed to `rdzvscope attach` as literals in tests/bpf/*.py."""
    seen = set()
    for path in glob.glob(os.path.join(ROOT, "tests", "bpf", "*.py")):
        with open(path, encoding="utf-8") as f:
            seen |= set(re.findall(r"\"(--[a-z-]+)\"", f.read()))
    return seen


# ------------------------------------------------------------------ the manifests

def load_manifests(errors):
    docs = []
    files = sorted(glob.glob(os.path.join(K8S, "*.yaml")) + glob.glob(os.path.join(K8S, "*.yml")))
    expect(files, f"no manifest in {K8S}", errors)
    for path in files:
        with open(path, encoding="utf-8") as f:
            try:
                parsed = [d for d in yaml.safe_load_all(f) if d is not None]
            except yaml.YAMLError as e:
                errors.append(f"{os.path.basename(path)}: not YAML: {e}")
                continue
        expect(parsed, f"{os.path.basename(path)}: no document", errors)
        for d in parsed:
            docs.append((os.path.basename(path), d))
    return docs


def check_kinds(docs, errors):
    count = {}
    for fname, d in docs:
        ok = isinstance(d, dict) and isinstance(d.get("metadata"), dict) and d["metadata"].get("name")
        expect(ok, f"{fname}: a document without apiVersion/kind/metadata.name", errors)
        if not ok:
            continue
        key = (d.get("apiVersion"), d.get("kind"))
        expect(key in EXPECTED_KINDS, f"{fname}: unexpected {key[1]} of apiVersion {key[0]}", errors)
        count[key] = count.get(key, 0) + 1
    for key, n in EXPECTED_KINDS.items():
        expect(count.get(key, 0) == n, f"{n} {key[1]} ({key[0]}) expected, found {count.get(key, 0)}", errors)


def of_kind(docs, kind):
    return [(f, d) for f, d in docs if isinstance(d, dict) and d.get("kind") == kind]


def env_of(container):
    """[(name, value or None for valueFrom, the entry)] in order."""
    return [(e.get("name"), e.get("value"), e) for e in container.get("env") or []]


def substitute(value, env):
    """$(NAME) replaced from env (a dict of literal values), as the kubelet does."""
    return VAR_REF.sub(lambda m: str(env.get(m.group(1), m.group(0))), value)


def check_var_refs(where, container, operator_vars, errors):
    """Every $(NAME) in command, args and env values is defined before use (env: by an earlier
    entry; command/args: anywhere in env) or set by the operator."""
    def by_operator(ref):
        return bool(operator_vars) and (ref in operator_vars or ref.startswith(OPERATOR_PREFIX))

    defined = set()
    for name, value, _ in env_of(container):
        for ref in VAR_REF.findall(value or ""):
            expect(ref in defined or by_operator(ref),
                   f"{where}: env {name} uses $({ref}) before (or without) defining it", errors)
        defined.add(name)
    for arg in (container.get("command") or []) + (container.get("args") or []):
        for ref in VAR_REF.findall(str(arg)):
            expect(ref in defined or by_operator(ref),
                   f"{where}: $({ref}) in the command line is not defined in the container's env", errors)


def check_traced_pod(where, pod_spec, facts, claims, errors, kubeflow=False, hosts=None):
    """One pod template of a traced job: init container, LD_PRELOAD, RDZVSCOPE_*, torchrun.
    Returns {"endpoint_port": ..., "env": ...} for the caller's own checks."""
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    inits = pod_spec.get("initContainers") or []
    containers = pod_spec.get("containers") or []
    expect(len(containers) == 1, f"{where}: one container expected, found {len(containers)}", errors)
    if not containers:
        return {}
    c = containers[0]
    if kubeflow:
        expect(c.get("name") == KUBEFLOW_CONTAINER,
               f"{where}: the training-operator needs the container named {KUBEFLOW_CONTAINER!r}", errors)
    operator_vars = OPERATOR_VARS if kubeflow else set()
    check_var_refs(f"{where} container {c.get('name')}", c, operator_vars, errors)
    env_list = env_of(c)
    names = [n for n, _, _ in env_list]
    expect(len(names) == len(set(names)), f"{where}: an env variable is set twice: {names}", errors)
    literal = {n: v for n, v, _ in env_list if v is not None}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}

    # The shim: LD_PRELOAD in an emptyDir filled by the init container.
    preload = literal.get("LD_PRELOAD", "")
    expect(preload, f"{where}: no LD_PRELOAD", errors)
    expect(":" not in preload and " " not in preload,
           f"{where}: LD_PRELOAD should name the shim only: {preload}", errors)
    expect(os.path.basename(preload) == facts["shim"],
           f"{where}: LD_PRELOAD={preload}, but CMake builds {facts['shim']}", errors)
    shim_dir = os.path.dirname(preload)
    shim_mount = mounts.get(shim_dir)
    expect(shim_mount is not None, f"{where}: nothing is mounted at {shim_dir}, LD_PRELOAD's directory", errors)
    shim_vol = volumes.get(shim_mount.get("name")) if shim_mount else None
    expect(shim_vol is not None and "emptyDir" in shim_vol,
           f"{where}: the volume at {shim_dir} should be an emptyDir: {shim_vol}", errors)
    if shim_mount:
        expect(shim_mount.get("readOnly") is True, f"{where}: mount the shim's volume read-only in the workers", errors)
    copied = False
    for init in inits:
        cmd = [str(x) for x in (init.get("command") or []) + (init.get("args") or [])]
        init_mounts = {m.get("mountPath"): m.get("name") for m in init.get("volumeMounts") or []}
        if cmd[:1] == ["cp"] and len(cmd) == 3:
            src, dst = cmd[1], cmd[2]
            dst_dir = os.path.dirname(dst) if not dst.endswith("/") else dst.rstrip("/")
            target = dst if not dst.endswith("/") else os.path.join(dst, os.path.basename(src))
            copied = (src == facts["shim_installed"] and
                      init_mounts.get(dst_dir) == (shim_mount or {}).get("name") and
                      os.path.relpath(target, dst_dir) == os.path.relpath(preload, shim_dir))
            expect(RDZVSCOPE_IMAGE_RE.search(str(init.get("image", ""))),
                   f"{where}: init container {init.get('name')}: image {init.get('image')} is not the rdzvscope image",
                   errors)
            facts.setdefault("images", set()).add(init.get("image"))
    expect(copied, f"{where}: no init container copies {facts['shim_installed']} to {preload} "
                   f"through the emptyDir", errors)

    # The shim's variables.
    for n in names:
        if n.startswith("RDZVSCOPE_"):
            expect(n in facts["read_by_shim"], f"{where}: {n} is not read by the shim (core/, shim/)", errors)
            expect(n in facts["documented"], f"{where}: {n} is not in docs/commands.md's environment table", errors)
    expect("RDZVSCOPE_SHIM" not in names and "RDZVSCOPE_INJECT" not in names,
           f"{where}: RDZVSCOPE_SHIM/RDZVSCOPE_INJECT are for `rdzvscope run`, not a job's env", errors)
    trace_dir = literal.get("RDZVSCOPE_DIR", "")
    expect(trace_dir.startswith("/"), f"{where}: RDZVSCOPE_DIR should be an absolute path: {trace_dir!r}", errors)
    used = set(re.findall(r"%.", trace_dir))
    expect(used <= facts["placeholders"],
           f"{where}: RDZVSCOPE_DIR {trace_dir} uses {sorted(used - facts['placeholders'])}, "
           f"supported: {sorted(facts['placeholders'])}", errors)
    expect({"%j", "%h"} <= used, f"{where}: RDZVSCOPE_DIR should give one directory per job and pod (%j, %h)", errors)
    fixed = trace_dir.split("%", 1)[0].rstrip("/") or "/"
    trace_mounts = [p for p in mounts if fixed == p or fixed.startswith(p.rstrip("/") + "/")]
    expect(trace_mounts, f"{where}: RDZVSCOPE_DIR's fixed part {fixed} is on no volume", errors)
    for p in trace_mounts:
        vol = volumes.get(mounts[p].get("name"), {})
        expect("persistentVolumeClaim" in vol or "hostPath" in vol,
               f"{where}: traces at {p} go to a volume that dies with the pod: {vol}", errors)
        expect(not mounts[p].get("readOnly"), f"{where}: the trace volume at {p} is read-only", errors)
        if "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"].get("claimName")
            expect(claim in claims, f"{where}: claim {claim} is not defined in {K8S}", errors)

    # torchrun, as examples/torchrun.sh runs it.
    cmd = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
    expect(cmd[:1] == ["torchrun"], f"{where}: the container should run torchrun: {cmd[:3]}", errors)
    flags = {}
    for a in cmd[1:]:
        if a.startswith("--"):
            expect("=" in a, f"{where}: torchrun flag {a} without =VALUE (torchrun.sh's form)", errors)
            k, _, v = a.partition("=")
            flags[k] = v
    want = facts["torchrun_flags"]
    expect(set(flags) == set(want),
           f"{where}: torchrun flags {sorted(flags)}, examples/torchrun.sh uses {sorted(want)}", errors)
    expect(flags.get("--rdzv-backend") == want.get("--rdzv-backend"),
           f"{where}: --rdzv-backend={flags.get('--rdzv-backend')}, torchrun.sh: {want.get('--rdzv-backend')}", errors)
    expect(cmd and not cmd[-1].startswith("-") and cmd[-1].endswith(".py"),
           f"{where}: torchrun should end with the training script: {cmd[-1:]}", errors)
    expect(flags.get("--rdzv-id") == "$(TORCHELASTIC_RUN_ID)",
           f"{where}: --rdzv-id should be $(TORCHELASTIC_RUN_ID), the %j of RDZVSCOPE_DIR", errors)
    run_id = next((e for n, _, e in env_list if n == "TORCHELASTIC_RUN_ID"), None)
    expect(run_id is not None and (run_id.get("value") or run_id.get("valueFrom")),
           f"{where}: TORCHELASTIC_RUN_ID (the agent's %j, torchrun's --rdzv-id) is not set", errors)
    endpoint = substitute(flags.get("--rdzv-endpoint", ""), literal)
    host, _, port = endpoint.rpartition(":")
    expect(host and port, f"{where}: --rdzv-endpoint should be HOST:PORT: {endpoint}", errors)
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    if kubeflow:
        expect(port == "$(MASTER_PORT)", f"{where}: the endpoint's port should be the operator's MASTER_PORT", errors)
        port = str(ports.get(KUBEFLOW_PORT_NAME))
        expect(ports.get(KUBEFLOW_PORT_NAME) is not None,
               f"{where}: no port named {KUBEFLOW_PORT_NAME} (the operator's MASTER_PORT)", errors)
    else:
        expect(port.isdigit() and int(port) in ports.values(),
               f"{where}: the endpoint's port {port} is not a containerPort ({ports})", errors)
    expect(substitute(literal.get("RDZVSCOPE_PORTS", ""), literal) == port,
           f"{where}: RDZVSCOPE_PORTS={literal.get('RDZVSCOPE_PORTS')} is not the rendezvous port {port}", errors)
    for var, flag in (("NNODES", "--nnodes"), ("NPROC_PER_NODE", "--nproc-per-node")):
        value = substitute(flags.get(flag, ""), literal)
        expect(value.isdigit(), f"{where}: {flag} is {value!r}, not a fixed number", errors)
    return {"endpoint_host": host, "endpoint_port": port, "env": literal, "run_id": run_id,
            "nnodes": substitute(flags.get("--nnodes", ""), literal),
            "nproc": substitute(flags.get("--nproc-per-node", ""), literal)}


def label_ref(run_id):
    ref = ((run_id or {}).get("valueFrom") or {}).get("fieldRef") or {}
    m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", ref.get("fieldPath", ""))
    return m.group(1) if m else None


def check_pytorchjob(docs, facts, claims, errors):
    for fname, job in of_kind(docs, "PyTorchJob"):
        specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
        expect(set(specs) == {"Master", "Worker"}, f"{fname}: replica types {sorted(specs)}, want Master, Worker",
               errors)
        expect(specs.get("Master", {}).get("replicas") == 1, f"{fname}: exactly one Master", errors)
        total = sum(int(s.get("replicas", 0)) for s in specs.values())
        nproc = str(job["spec"].get("nprocPerNode", ""))
        for rtype, s in specs.items():
            where = f"{fname} {rtype}"
            info = check_traced_pod(where, ((s.get("template") or {}).get("spec") or {}), facts, claims, errors,
                                    kubeflow=True)
            if not info:
                continue
            expect(info["nnodes"] == str(total),
                   f"{where}: --nnodes {info['nnodes']}, the job has {total} pods", errors)
            expect(info["nproc"] == nproc, f"{where}: --nproc-per-node {info['nproc']}, spec.nprocPerNode {nproc}",
                   errors)
            expect(info["endpoint_host"] == "$(MASTER_ADDR)", f"{where}: the endpoint's host should be MASTER_ADDR",
                   errors)
            expect(label_ref(info["run_id"]) == "training.kubeflow.org/job-name",
                   f"{where}: TORCHELASTIC_RUN_ID should come from the pod label training.kubeflow.org/job-name",
                   errors)
            facts.setdefault("rdzv_ports", set()).add(info["endpoint_port"])


def check_job(docs, facts, claims, errors):
    services = {d["metadata"]["name"]: d for _, d in of_kind(docs, "Service")}
    for fname, job in of_kind(docs, "Job"):
        name = job["metadata"]["name"]
        spec = job.get("spec") or {}
        pod = (spec.get("template") or {}).get("spec") or {}
        expect(spec.get("completionMode") == "Indexed", f"{fname}: the Job should be Indexed (pod names)", errors)
        expect(spec.get("completions") == spec.get("parallelism"),
               f"{fname}: completions {spec.get('completions')} != parallelism {spec.get('parallelism')}: "
               "every node must run at once to rendezvous", errors)
        expect(pod.get("restartPolicy") in ("Never", "OnFailure"), f"{fname}: restartPolicy", errors)
        sub = pod.get("subdomain")
        svc = services.get(sub)
        expect(svc is not None, f"{fname}: subdomain {sub} is no Service of the folder ({sorted(services)})", errors)
        if svc:
            sspec = svc.get("spec") or {}
            expect(sspec.get("clusterIP") == "None", f"{fname}: Service {sub} should be headless", errors)
            expect(sspec.get("selector") == {"job-name": name},
                   f"{fname}: Service {sub} should select the Job's pods (job-name: {name}): {sspec.get('selector')}",
                   errors)
            expect(sspec.get("publishNotReadyAddresses") is True,
                   f"{fname}: Service {sub}: publishNotReadyAddresses, or pod 0's name does not resolve "
                   "before it is ready", errors)
        info = check_traced_pod(f"{fname} Job", pod, facts, claims, errors)
        if not info:
            continue
        expect(info["endpoint_host"] == f"{name}-0.{sub}",
               f"{fname}: the endpoint host should be pod 0, {name}-0.{sub}: {info['endpoint_host']}", errors)
        expect(info["nnodes"] == str(spec.get("completions")),
               f"{fname}: --nnodes {info['nnodes']}, completions {spec.get('completions')}", errors)
        expect(label_ref(info["run_id"]) == "job-name",
               f"{fname}: TORCHELASTIC_RUN_ID should come from the pod label job-name", errors)
        facts.setdefault("rdzv_ports", set()).add(info["endpoint_port"])


def parse_attach(where, argv, opts, tested, facts, errors):
    """argv: what follows `rdzvscope attach`. Returns {option: [values]}."""
    got, current = {}, None
    for a in argv:
        if a.startswith("-") and not re.fullmatch(r"-?\d+", a):
            name, eq, value = a.partition("=")
            expect(name in opts, f"{where}: `rdzvscope attach` has no option {name} (cmd_attach.cpp)", errors)
            expect(name in tested, f"{where}: {name} is passed to attach by no test of tests/bpf", errors)
            got.setdefault(name, [])
            current = name if opts.get(name) else None
            if eq:
                got[name].append(value)
                current = name if name in ("--pid", "-p", "--comm", "--port") else None
        else:
            expect(current is not None, f"{where}: stray argument {a!r} after a flag", errors)
            if current:
                got[current].append(a)
    for name, values in got.items():
        if opts.get(name):
            expect(values, f"{where}: {name} without a value", errors)
    modes = [m for m in ("--pid", "--comm", "--all") if m in got or (m == "--pid" and "-p" in got)]
    expect(len(modes) == 1, f"{where}: exactly one of --pid, --comm, --all: {modes}", errors)
    if "--all" in got:
        expect(got.get("--port"), f"{where}: --all without --port records every socket of the node", errors)
    for p in got.get("--port", []):
        expect(p.isdigit() and 1 <= int(p) <= 65535, f"{where}: --port {p} is not a port", errors)
    want = facts.get("rdzv_ports", set())
    expect(want and want <= set(got.get("--port", [])),
           f"{where}: --port {got.get('--port')} should name the jobs' rendezvous port {sorted(want)}", errors)
    out = (got.get("--out") or got.get("-o") or [""])[-1]
    expect(out, f"{where}: --out is required", errors)
    used = set(re.findall(r"%.", out))
    expect(used <= facts["placeholders"], f"{where}: --out {out} uses {sorted(used - facts['placeholders'])}", errors)
    return got


def check_daemonset(docs, facts, errors):
    opts, tested = facts["attach_opts"], facts["attach_tested"]
    for fname, ds in of_kind(docs, "DaemonSet"):
        pod = (((ds.get("spec") or {}).get("template") or {}).get("spec")) or {}
        expect(pod.get("hostPID") is True, f"{fname}: hostPID (attach reads /proc of the node's processes)", errors)
        expect(pod.get("hostNetwork") is True, f"{fname}: hostNetwork (%h is then the node's name)", errors)
        sel = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        labels = (((ds.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        expect(sel and all(labels.get(k) == v for k, v in sel.items()),
               f"{fname}: the selector {sel} does not match the pod labels {labels}", errors)
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for c in pod.get("containers") or []:
            where = f"{fname} container {c.get('name')}"
            expect((c.get("securityContext") or {}).get("privileged") is True, f"{where}: privileged (eBPF)", errors)
            expect(RDZVSCOPE_IMAGE_RE.search(str(c.get("image", ""))), f"{where}: not the rdzvscope image", errors)
            facts.setdefault("images", set()).add(c.get("image"))
            cmd = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
            expect(cmd[:2] == ["rdzvscope", "attach"], f"{where}: runs {cmd[:2]}, not rdzvscope attach", errors)
            got = parse_attach(where, cmd[2:], opts, tested, facts, errors)
            expect("--duration" not in got,
                   f"{where}: --duration: the container would end and the DaemonSet restart it", errors)
            out = (got.get("--out") or got.get("-o") or [""])[-1]
            fixed = out.split("%", 1)[0].rstrip("/")
            mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts") or []}
            on = [p for p in mounts if fixed == p or fixed.startswith(p.rstrip("/") + "/")]
            expect(on and "hostPath" in volumes.get(mounts[on[0]], {}),
                   f"{where}: --out {out} is not on a hostPath volume", errors)
            if on:
                facts["attach_host_dir"] = volumes[mounts[on[0]]]["hostPath"].get("path", "") + \
                    fixed[len(on[0].rstrip("/")):]


def shell_commands(text):
    """Command lines in ``` blocks of a Markdown text, backslash continuations joined."""
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        lines += re.sub(r"\\\n\s*", " ", block).splitlines()
    return lines


def check_recipes(facts, errors):
    """The `kubectl debug node/...` recipes: the same attach, privileged, into the node's
    directory of the DaemonSet."""
    opts, tested = facts["attach_opts"], facts["attach_tested"]
    for rel in (("examples", "kubernetes", "README.md"), ("docs", "kubernetes.md")):
        where = "/".join(rel)
        text = read(*rel)
        n = 0
        for line in shell_commands(text):
            if "rdzvscope attach" not in line:
                continue
            n += 1
            words = shlex.split(line.split("#", 1)[0] if " #" in line else line)
            i = words.index("rdzvscope")
            expect(words[i + 1] == "attach", f"{where}: {line}", errors)
            argv = []
            for w in words[i + 2:]:
                if w in (";", "&&", "||", "|", "&", "done") or w.endswith(";"):
                    if w.endswith(";") and w != ";":
                        argv.append(w[:-1])
                    break
                argv.append(w)
            got = parse_attach(f"{where}: {line.strip()[:60]}...", argv, opts, tested, facts, errors)
            if "kubectl debug node/" in line:
                expect("--profile=sysadmin" in words, f"{where}: kubectl debug without --profile=sysadmin: {line}",
                       errors)
                expect(RDZVSCOPE_IMAGE_RE.search(line), f"{where}: kubectl debug with another image: {line}", errors)
                out = (got.get("--out") or got.get("-o") or [""])[-1]
                want = "/host" + facts.get("attach_host_dir", "?")
                expect(out.split("%", 1)[0].rstrip("/") == want,
                       f"{where}: --out {out}: the node's root is at /host, the DaemonSet writes to {want}", errors)
        expect(n > 0 or where.startswith("docs"), f"{where}: no `rdzvscope attach` recipe", errors)
        expect("kubectl debug node/" in text or where.startswith("docs"), f"{where}: no kubectl debug node/ recipe",
               errors)


def check_docs_name_files(errors):
    """docs/kubernetes.md and the folder's README name every manifest of the folder."""
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml")))
    for rel in (("examples", "kubernetes", "README.md"), ("docs", "kubernetes.md")):
        text = read(*rel)
        for f in files:
            expect(f"`{f}`" in text, f"{'/'.join(rel)}: does not name {f}", errors)


def main():
    errors = []
    shim = shim_file_name()
    read_by_shim, documented = shim_variables()
    facts = {
        "shim": shim,
        "shim_installed": installed_shim_path(shim),
        "read_by_shim": read_by_shim,
        "documented": documented,
        "placeholders": supported_placeholders(),
        "torchrun_flags": torchrun_sh_flags(),
        "attach_opts": attach_options(),
        "attach_tested": attach_options_tested(),
    }
    docs = load_manifests(errors)
    check_kinds(docs, errors)
    claims = set()
    for fname, pvc in of_kind(docs, "PersistentVolumeClaim"):
        claims.add(pvc["metadata"]["name"])
        expect("ReadWriteMany" in ((pvc.get("spec") or {}).get("accessModes") or []),
               f"{fname}: every node writes the traces: ReadWriteMany", errors)
    check_pytorchjob(docs, facts, claims, errors)
    check_job(docs, facts, claims, errors)
    expect(len(facts.get("rdzv_ports", ())) == 1,
           f"the jobs use different rendezvous ports: {facts.get('rdzv_ports')}", errors)
    check_daemonset(docs, facts, errors)
    check_recipes(facts, errors)
    check_docs_name_files(errors)
    expect(len(facts.get("images", ())) == 1, f"more than one rdzvscope image: {facts.get('images')}", errors)
    for e in errors:
        print("FAIL", e)
    kinds = sorted({d.get("kind") for _, d in docs if isinstance(d, dict)})
    print(f"k8s_manifests: {len(docs)} documents ({', '.join(kinds)}), shim {shim} "
          f"from {facts['shim_installed']}, placeholders {' '.join(sorted(facts['placeholders']))}, "
          f"torchrun {' '.join(sorted(facts['torchrun_flags']))}: "
          f"{'ok' if not errors else str(len(errors)) + ' problem(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
