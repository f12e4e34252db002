# shellcheck shell=bash
# Shared by the QEMU harness scripts (sourced, not run): where the repository
# and the work directory are, which Debian kernel the guest boots, and the
# Debian packages the harness needs.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$VM_DIR/../.." && pwd)
VM_WORK=${PFMFS_VM_WORK:-$REPO_ROOT/build/vm}
case $VM_WORK in /*) ;; *) VM_WORK=$PWD/$VM_WORK ;; esac

# Everything the harness runs on the host. The guest runs the host's own
# root filesystem, so what the tests need in the guest (python3, fuse3, ...)
# comes from scripts/install-deps.sh. linux-headers-amd64 pulls in gcc-12 for
# Kbuild, but not make.
VM_PACKAGES=(qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static make coreutils)

vm_die() {
  echo "${0##*/}: $*" >&2
  exit "${VM_DIE_STATUS:-1}"
}

# Sets VM_KVER and VM_VMLINUZ: PFMFS_VM_KERNEL (a version such as
# 6.1.0-56-amd64 or a path to a vmlinuz-VERSION), else the newest
# /boot/vmlinuz-*-amd64 whose modules are installed. Never `uname -r`: the
# host may run a kernel that is not a Debian package.
vm_guest_kernel() {
  local k=${PFMFS_VM_KERNEL:-} v
  if [ -z "$k" ]; then
    for v in $(find /boot -maxdepth 1 -name "vmlinuz-*-amd64" -printf "%f\n" | sed -n 's/^vmlinuz-\(.*-amd64\)$/\1/p' | sort -rV); do
      if [ -d "/lib/modules/$v/kernel" ]; then k=$v; break; fi
    done
    [ -n "$k" ] || vm_die "no /boot/vmlinuz-*-amd64 with modules in /lib/modules (install linux-image-amd64)"
  fi
  case $k in
    */*) VM_VMLINUZ=$k; VM_KVER=${k##*/vmlinuz-} ;;
    *) VM_VMLINUZ=/boot/vmlinuz-$k; VM_KVER=$k ;;
  esac
  [ -r "$VM_VMLINUZ" ] || vm_die "guest kernel $VM_VMLINUZ is missing or unreadable"
  [ -d "/lib/modules/$VM_KVER/kernel" ] || vm_die "no modules for $VM_KVER in /lib/modules/$VM_KVER"
}
