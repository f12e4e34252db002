#!/usr/bin/env bash
# Checks the QEMU harness itself: the guest's kernel, CPU vendor, /dev/fuse,
# writable /tmp and /etc, a module built by build-module.sh loads, a FUSE
# mount of pfmfsd works (when PFMFSD names one), statuses and the timeout.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
vm_guest_kernel
run=$VM_DIR/run-in-vm.sh
fail=0
check() { # NAME EXPECTED-STATUS ACTUAL-STATUS
  if [ "$2" = "$3" ]; then echo "selftest: ok: $1"; else echo "selftest: FAILED: $1 (status $3, wanted $2)"; fail=1; fi
}

# A hello-world module, built here like helper-kmod/ is.
hello=$VM_WORK/selftest/hello
mkdir -p "$hello"
echo 'obj-m := pfmfs_vm_hello.o' >"$hello/Kbuild"
cat >"$hello/pfmfs_vm_hello.c" <<'EOF'
#include <linux/init.h>
#include <linux/module.h>
static int __init hello_init(void) { pr_info("pfmfs_vm_hello: loaded\n"); return 0; }
static void __exit hello_exit(void) { }
module_init(hello_init);
module_exit(hello_exit);
MODULE_LICENSE("GPL");
EOF
ko=$("$VM_DIR/build-module.sh" -o "$VM_WORK/selftest/hello-build" "$hello" 2>/dev/null)

pfmfsd=${PFMFSD:-}
[ -n "$pfmfsd" ] || echo "selftest: PFMFSD is not set: no FUSE mount check"

# One boot for every check inside the guest.
set +e
"$run" --env KVER="$VM_KVER" --env KO="$ko" --env PFMFSD="$pfmfsd" -- sh tests/vm/selftest-guest.sh
status=$?
set -e
check "checks in the guest" 0 "$status"
[ -f "$VM_WORK/share/selftest" ] && ! id pfmfs-vm-selftest >/dev/null 2>&1
check "the share reaches the host, /etc does not" 0 $?
rm -f "$VM_WORK/share/selftest"

set +e
"$run" -- sh -c 'exit 7' >/dev/null 2>&1
check "the command's exit status" 7 $?
"$run" --timeout 15 -- sleep 600 >/dev/null 2>&1
check "the timeout stops a command that hangs" 243 $?
set -e
exit $fail
