#!/usr/bin/env bash
# Installs the Debian 12 packages the QEMU harness (run-in-vm.sh,
# build-module.sh) needs, only those missing; `--list` prints them instead.
# What the tests need in the guest comes from scripts/install-deps.sh.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "${1:-}" = --list ]; then
  echo "${VM_PACKAGES[*]}"
  exit 0
fi

missing=()
for p in "${VM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || vm_die "missing packages: ${missing[*]}; run as root or install them"
echo "tests/vm/install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
