#!/usr/bin/env bash
# Install what rdzvscope's build, tests and demo need: Debian packages, and a virtual
# environment with PyTorch 2.x (pinned: an unpinned `torch` would pull a CUDA build of several
# GB). Idempotent: when everything is present, neither apt nor pip runs. Needs root (or sudo)
# only when a Debian package is missing.
#
# RDZVSCOPE_TORCH_VERSIONS  the PyTorch versions under test, space separated (default
#                           "2.13.0 1.13"): a 2.x version is pip-installed into its own venv,
#                           1.13 is Debian's python3-torch for /usr/bin/python3. The CMake
#                           cache variable RDZVSCOPE_TORCH_PYTHONS takes the interpreters;
#                           `scripts/install-deps.sh --pythons` prints them.
# RDZVSCOPE_VENV_DIR        where the venvs live (default: .venv/ in this checkout, git-ignored);
#                           one venv per version: $RDZVSCOPE_VENV_DIR/torch-<version>
# RDZVSCOPE_VENV_PYTHON     the interpreter that creates the venvs (default python3; 3.11 for
#                           the torch 2.13.0 wheel on the test machines)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSIONS=${RDZVSCOPE_TORCH_VERSIONS:-2.13.0 1.13}
VENV_DIR=${RDZVSCOPE_VENV_DIR:-$ROOT/.venv}
VENV_PYTHON=${RDZVSCOPE_VENV_PYTHON:-python3}

# The interpreter that has PyTorch VERSION: Debian's for 1.13, the venv's for the others.
python_for() {
  case $1 in
    1.13|1.13.*) echo /usr/bin/python3 ;;
    *) echo "$VENV_DIR/torch-$1/bin/python3" ;;
  esac
}

if [[ ${1:-} == --pythons ]]; then
  out=()
  for v in $VERSIONS; do out+=("$(python_for "$v")"); done
  (IFS=';'; echo "${out[*]}")
  exit 0
fi

PACKAGES=(
  # build
  build-essential cmake clang libbpf-dev bpftool libelf-dev zlib1g-dev
  libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libcli11-dev libbenchmark-dev
  # tests and demo
  python3-torch python3-venv iproute2 iptables strace valgrind binutils procps
  # fuzzing and sanitizers with clang (libFuzzer), the HTML report's headless-browser test
  libclang-rt-14-dev chromium
  # watch: its terminal view is tested in tmux, its metrics with Prometheus' own promtool
  tmux prometheus
  # Slurm (tests/slurm: a real cluster of munged, slurmctld and slurmds; the SPANK plugin's header)
  slurmctld slurmd slurm-client munge libslurm-dev
  # tests/deploy: the man pages rendered by man
  man-db
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

install_debian() {
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages already installed"
  return 0
fi

echo "install-deps: missing: ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: not root and no sudo: install these packages as root: ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
echo "install-deps: apt-get install -y --no-install-recommends ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "install-deps: Debian packages done"
}

# What the tests import beside torch, pinned like it: the Prometheus client's own parser
# checks the metrics files; PyYAML parses the Kubernetes manifests (tests/deploy).
VENV_EXTRAS=(numpy prometheus_client==0.26.0 pyyaml==6.0.3)

# A venv with torch==VERSION; nothing is run when it already imports that version and the extras.
install_torch_venv() {
  local version=$1 venv="$VENV_DIR/torch-$1"
  local py="$venv/bin/python3"
  if [[ -x $py ]] && have=$("$py" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null) &&
     [[ ${have%%+*} == "$version" ]]; then
    if ! "$py" -c 'import numpy, prometheus_client, yaml' 2>/dev/null; then
      echo "install-deps: adding ${VENV_EXTRAS[*]} to $venv"
      "$venv/bin/pip" install --quiet --disable-pip-version-check "${VENV_EXTRAS[@]}" ||
        { echo "install-deps: cannot install ${VENV_EXTRAS[*]} into $venv" >&2; return 1; }
    fi
    echo "install-deps: torch $have already in $venv"
    return 0
  fi
  echo "install-deps: creating $venv with torch==$version"
  mkdir -p "$VENV_DIR"
  rm -rf "$venv"
  if ! "$VENV_PYTHON" -m venv "$venv" >/dev/null ||
     ! "$venv/bin/pip" install --quiet --disable-pip-version-check "torch==$version" "${VENV_EXTRAS[@]}"; then
    echo "install-deps: cannot install PyTorch $version into $venv (pip install torch==$version failed: see above); the tests need it" >&2
    return 1
  fi
  echo "install-deps: torch $("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) installed in $venv"
}

install_debian
for v in $VERSIONS; do
  case $v in
    1.13|1.13.*) /usr/bin/python3 -c 'import torch' 2>/dev/null ||
        { echo "install-deps: Debian's python3-torch (1.13) does not import under /usr/bin/python3" >&2; exit 1; } ;;
    2.*) install_torch_venv "$v" ;;
    *) echo "install-deps: RDZVSCOPE_TORCH_VERSIONS: cannot install PyTorch '$v' (1.13 or 2.x)" >&2; exit 1 ;;
  esac
done
