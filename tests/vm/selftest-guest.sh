#!/bin/sh
# The guest half of selftest.sh, run by run-in-vm.sh: one line per check,
# exit status 1 if any failed. KVER, KO and PFMFSD come from selftest.sh.
# shellcheck disable=SC2317  # the checks are called through t
bad=0
t() {
  name=$1; shift
  if "$@" >/dev/null 2>&1; then echo "guest: ok: $name"; else echo "guest: FAILED: $name"; bad=1; fi
}
intel6() { grep -q 'vendor_id.*GenuineIntel' /proc/cpuinfo && grep -q 'cpu family.*: 6$' /proc/cpuinfo; }
module() { insmod "$KO" && dmesg | grep -q 'pfmfs_vm_hello: loaded' && rmmod pfmfs_vm_hello; }
fuse_mount() {
  mkdir -p /tmp/m && "$PFMFSD" --pmu=sim /tmp/m && grep -q backend=sim /tmp/m/pmu/info && fusermount3 -u /tmp/m
}

t "kernel $KVER" test "$(uname -r)" = "$KVER"
t "GenuineIntel, family 6" intel6
t "/dev/fuse" test -c /dev/fuse
t "tempfile.mkdtemp" python3 -c 'import tempfile; tempfile.mkdtemp()'
t "writable /etc: useradd" useradd -M -r -s /usr/sbin/nologin pfmfs-vm-selftest
t "the repository is the directory" test -f tests/vm/run-in-vm.sh
t "writable share" touch "$PFMFS_VM_SHARE/selftest"
t "insmod a module built on the host" module
if [ -n "$PFMFSD" ]; then t "pfmfsd mounts, pmu/info reads, unmounts" fuse_mount; fi
exit $bad
