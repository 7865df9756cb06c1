#!/usr/bin/env bash
# Install the Debian packages that rdzvscope's build, tests and demo need.
# Idempotent: when every package is already installed, apt is not run at all.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake clang libbpf-dev bpftool libelf-dev zlib1g-dev
  libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libcli11-dev libbenchmark-dev
  # tests and demo
  python3-torch iproute2 iptables strace valgrind binutils procps
  # fuzzing and sanitizers with clang (libFuzzer), the HTML report's headless-browser test
  libclang-rt-14-dev chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
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
echo "install-deps: done"
