#!/usr/bin/env bash
# Installs what attn needs from Debian's packages, if anything is missing. Safe to run again.
#   scripts/install-deps.sh          build and run
#   scripts/install-deps.sh --test   also what the test suite uses
set -euo pipefail

packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev
  libspdlog-dev libutf8proc-dev libonig-dev zlib1g-dev libedit-dev libcpp-httplib-dev)
if [ "${1:-}" = "--test" ]; then
  # numpy writes the full-size random models; chromium renders the attention page; clang and
  # its runtime build the sanitizer and fuzzer builds (libFuzzer); curl is the HTTP client of the
  # attn serve tests, nginx the load balancer in front of two replicas, hey its load run (node
  # and npm, which run the openai client, come with the machines: scripts/install-test-npm.sh).
  packages+=(libgtest-dev python3-numpy chromium clang libclang-rt-14-dev curl nginx hey)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
