#!/usr/bin/env bash
# Builds an out-of-tree kernel module (default helper-kmod/) against the
# headers of the kernel run-in-vm.sh boots, in a copy of its sources, and
# prints the path of the .ko; the source tree stays clean.
set -euo pipefail

usage() {
  echo "usage: tests/vm/build-module.sh [-o OUTDIR] [SRCDIR]" >&2
  echo "  SRCDIR defaults to helper-kmod/, OUTDIR to \$PFMFS_VM_WORK/kmod/<name of SRCDIR>" >&2
  exit 2
}

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=
while getopts o:h opt; do
  case $opt in
    o) out=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
src=$(cd "${1:-$REPO_ROOT/helper-kmod}" 2>/dev/null && pwd) || vm_die "no module sources in ${1:-helper-kmod/}"
[ -f "$src/Kbuild" ] || [ -f "$src/Makefile" ] || vm_die "$src has neither Kbuild nor Makefile"
out=${out:-$VM_WORK/kmod/${src##*/}}

vm_guest_kernel
kdir=/lib/modules/$VM_KVER/build
[ -f "$kdir/Makefile" ] || kdir=/usr/src/linux-headers-$VM_KVER
[ -f "$kdir/Makefile" ] || vm_die "no headers for $VM_KVER (install linux-headers-amd64)"

# Kbuild writes its objects next to the sources (M= only), so it builds in a
# copy. The copy is refreshed, not replaced, so make rebuilds only what
# changed; build products in the source tree (someone's in-tree build) are not
# copied.
mkdir -p "$out"
tar -C "$src" -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
  --exclude='.*.cmd' --exclude=modules.order --exclude=Module.symvers --exclude='.tmp_versions' . |
  tar -C "$out" -xf -
make -s -C "$kdir" M="$out" modules >&2
shopt -s nullglob
kos=("$out"/*.ko)
[ ${#kos[@]} -gt 0 ] || vm_die "make produced no .ko in $out"
printf '%s\n' "${kos[@]}"
