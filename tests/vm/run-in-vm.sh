#!/usr/bin/env bash
# Runs a command as root in a QEMU (TCG) guest that boots Debian's kernel on
# the host's own root filesystem, shared read-only over 9p; exits with the
# command's status. See "The QEMU harness" in docs/CONTRIBUTING.md.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tests/vm/run-in-vm.sh [--timeout SECONDS] [--mem MB] [--append 'KERNEL ARGS']
                             [--env NAME[=VALUE]]... [--rw DIR]... -- COMMAND [ARG]...

Boots the guest, runs COMMAND with its ARGs (as `sh` would run them, quoted)
as root in the repository's directory, powers off. Exit status: COMMAND's, or
  240 the harness could not start the VM   241 the VM did not boot
  242 the guest stopped before COMMAND ended (panic, oops in init, ...)
  243 the timeout (default 900 s; 0: none) ran out; QEMU was killed.
The host's / is read-only in the guest; /tmp, /run, /var/tmp, /dev/shm are
empty tmpfs (the host's files there are out of sight, but for a checkout
there, which is shared at its path, read-only); /etc, /var, /root,
/home are writable overlays whose changes are lost. $PFMFS_VM_WORK/share (default build/vm/share) and every --rw DIR
are writable host directories at the same paths. --env passes a variable
(NAME alone: its value here). Environment: PFMFS_VM_WORK (cache, logs),
PFMFS_VM_KERNEL (version or vmlinuz path), PFMFS_VM_CPU (QEMU -cpu),
PFMFS_VM_ACCEL (QEMU -accel, default tcg,thread=single), PFMFS_VM_SMP (2),
PFMFS_VM_NICE (QEMU's nice value as root, default -10).
EOF
}

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VM_DIE_STATUS=240

timeout_s=900
mem_mb=2048
append=
envs=()
rw_dirs=()
while [ $# -gt 0 ]; do
  case $1 in
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --mem) mem_mb=${2:?}; shift 2 ;;
    --append) append=${2?}; shift 2 ;;
    --env) envs+=("${2:?}"); shift 2 ;;
    --rw) rw_dirs+=("$(cd "${2:?}" && pwd)") || vm_die "--rw $2: no such directory"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; exit 240 ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; exit 240; }
[[ $timeout_s =~ ^[0-9]+$ && $mem_mb =~ ^[0-9]+$ ]] || vm_die "--timeout and --mem take whole numbers"
command -v qemu-system-x86_64 >/dev/null || vm_die "qemu-system-x86_64 is missing (tests/vm/install-deps.sh)"

# A checkout under a directory the guest replaces with an empty tmpfs (a CI
# clone in /tmp, say) is shared again at its own path, read-only like /.
repo_share=()
case $REPO_ROOT/ in
  /dev/*) vm_die "the repository is under /dev; check it out elsewhere" ;;
  /tmp/*|/run/*|/var/tmp/*) repo_share=("$REPO_ROOT") ;;
esac
vm_guest_kernel
mkdir -p "$VM_WORK/share" "$VM_WORK/runs"

# ---- the initramfs: busybox, /init and the modules to reach 9p, fuse, overlay

# 9p over virtio-pci for the shares, fuse for /dev/fuse, overlay for the
# writable /etc, /var, /root. Debian builds all of them as modules.
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p fuse overlay)

# Prints the modules' paths under /lib/modules/$VM_KVER, dependencies first,
# leaving out what the kernel has built in.
module_load_order() {
  local dir=/lib/modules/$VM_KVER line name
  declare -A deps=() path=() seen=()
  while IFS= read -r line; do
    name=${line%%:*}; name=${name##*/}; name=${name%%.ko*}; name=${name//-/_}
    path[$name]=${line%%:*}
    deps[$name]=${line#*:}
  done <"$dir/modules.dep"
  visit() {
    local m=$1 d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    if [ -z "${path[$m]:-}" ]; then
      grep -q "/${m//_/[_-]}\.ko" "$dir/modules.builtin" && return 0
      vm_die "module $m is neither in modules.dep nor built into $VM_KVER"
    fi
    for d in ${deps[$m]}; do
      d=${d##*/}; d=${d%%.ko*}; visit "${d//-/_}"
    done
    echo "${path[$m]}"
  }
  for name in "${GUEST_MODULES[@]}"; do visit "$name"; done
}

build_initramfs() {
  local out=$1 stage ko f
  stage=$(mktemp -d "$VM_WORK/initramfs.XXXXXX")
  mkdir -p "$stage"/{bin,dev,proc,sys,modules}
  cp /bin/busybox "$stage/bin/busybox"
  ln -s busybox "$stage/bin/sh"
  cp "$VM_DIR/guest-init.sh" "$stage/init"
  chmod 755 "$stage/init"
  : >"$stage/modules/load-order"
  for ko in $(module_load_order); do
    f=${ko##*/}
    # busybox insmod reads plain ELF only.
    case $f in
      *.ko) cp "/lib/modules/$VM_KVER/$ko" "$stage/modules/$f" ;;
      *.ko.xz) f=${f%.xz}; xz -dc "/lib/modules/$VM_KVER/$ko" >"$stage/modules/$f" ;;
      *.ko.zst) f=${f%.zst}; zstd -qdc "/lib/modules/$VM_KVER/$ko" >"$stage/modules/$f" ;;
      *.ko.gz) f=${f%.gz}; gzip -dc "/lib/modules/$VM_KVER/$ko" >"$stage/modules/$f" ;;
      *) vm_die "unexpected module file $ko" ;;
    esac
    echo "$f" >>"$stage/modules/load-order"
  done
  # Uncompressed: it is a few MB, and the guest unpacks it faster so.
  (cd "$stage" && find . | LC_ALL=C sort | busybox cpio -o -H newc -R 0:0 2>/dev/null) >"$out.tmp.$$"
  mv "$out.tmp.$$" "$out"
  rm -rf "$stage"
}

# The initramfs has no libc: its busybox must be static.
[[ $(ldd /bin/busybox 2>&1 || true) == *"not a dynamic"* ]] ||
  vm_die "/bin/busybox is not statically linked (install busybox-static)"
initrd=$VM_WORK/initramfs-$VM_KVER.cpio
key=$( { echo "$VM_KVER"; cat "$VM_DIR/guest-init.sh"; declare -f module_load_order build_initramfs
         echo "${GUEST_MODULES[*]}"; ls -l --time-style=+%s /bin/busybox "/lib/modules/$VM_KVER/modules.dep"; } |
       sha256sum | cut -c1-16)
if [ "$(cat "$initrd.key" 2>/dev/null)" != "$key" ] || [ ! -s "$initrd" ]; then
  echo "run-in-vm: building $initrd" >&2
  build_initramfs "$initrd"
  echo "$key" >"$initrd.key"
fi

# ---- this run's control share: the command, its environment, its status

run=$(mktemp -d "$VM_WORK/runs/run.XXXXXX")
log=$run/console.log
nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
qpidfile=$run/qemu.pid
cleanup() {
  # QEMU may outlive us if we are killed; stop it by its pid, if it is ours.
  local pid
  pid=$(cat "$qpidfile" 2>/dev/null) || pid=
  if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$run"; then
    kill "$pid" 2>/dev/null || true
  fi
  [ -f "$log" ] && cp "$log" "$VM_WORK/console.log"
  rm -rf "$run"
}
trap cleanup EXIT
trap 'echo "run-in-vm: interrupted, QEMU stopped" >&2; exit 130' INT
trap 'echo "run-in-vm: terminated, QEMU stopped" >&2; exit 143' TERM

q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
  echo "NONCE=$nonce"
} >"$run/vm.conf"
{
  for d in "${repo_share[@]}"; do echo "pfmfs_repo $d"; done
  i=0
  for d in "$VM_WORK/share" "${rw_dirs[@]}"; do echo "pfmfs_rw$i $d"; i=$((i + 1)); done
} >"$run/rw-shares"
{
  echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  echo "export HOME=/root USER=root LOGNAME=root SHELL=/bin/sh TERM=dumb LANG=C.UTF-8"
  # The root is read-only: Python need not try to write __pycache__.
  echo "export PYTHONDONTWRITEBYTECODE=1 PFMFS_VM=1 PFMFS_VM_SHARE=$(q "$VM_WORK/share")"
  for e in "${envs[@]}"; do
    case $e in
      *=*) echo "export ${e%%=*}=$(q "${e#*=}")" ;;
      *) [ -n "${!e+x}" ] && echo "export $e=$(q "${!e}")" ;;
    esac
  done
  echo "cd $(q "$REPO_ROOT") || exit 125"
  for a in "$@"; do printf '%s ' "$(q "$a")"; done
  echo
} >"$run/cmd.sh"

# ---- the VM

# qemu-system's option syntax doubles commas inside values.
esc() { printf '%s' "${1//,/,,}"; }
# A 9p share: TAG HOSTDIR [readonly=on]. multidevs=remap: / spans several
# host filesystems, whose inode numbers would otherwise collide in the guest.
virtfs() { echo "local,path=$(esc "$2"),mount_tag=$1,security_model=none,multidevs=remap${3:+,$3}"; }
# thread=single: one host thread runs both vCPUs in turn. Multi-threaded TCG
# pays for every cross-CPU TLB flush and wake-up with a stop of all vCPUs; on
# a 2-core host that made the mount tests 4 times slower.
qemu=(qemu-system-x86_64 -accel "${PFMFS_VM_ACCEL:-tcg,thread=single}" -machine pc
  -smp "${PFMFS_VM_SMP:-2}" -m "$mem_mb"
  # Intel family 6: the helper module expects the P6/arch-perfmon MSRs.
  # model 94 is a Skylake client; TCG has no PMU and CPUID 0xA stays empty.
  -cpu "${PFMFS_VM_CPU:-qemu64,vendor=GenuineIntel,family=6,model=94,stepping=3,-svm}"
  -nodefaults -no-user-config -display none -serial stdio -no-reboot
  -pidfile "$qpidfile" -sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny
  -kernel "$VM_VMLINUZ" -initrd "$initrd"
  # panic=-1: a panic reboots, and -no-reboot makes that QEMU's exit.
  # loglevel=5 keeps warnings, oopses and their traces, drops the info chatter.
  # mitigations=off: page-table isolation alone made syscalls 10 times dearer
  # under TCG, and a throwaway test VM has nothing to protect.
  # tsc=reliable: on a loaded host the clocksource watchdog found the TSC
  # "unstable" against the HPET (both emulated, both late by turns) and moved
  # timekeeping to the HPET while the scheduler's clock stayed on the TSC;
  # the test PMU counts by the first and CPU time is read from the second, so
  # counts and CPU time parted (1.83e9 cycles counted in 402 ms of CPU time).
  -append "console=ttyS0 nmi_watchdog=0 panic=-1 loglevel=5 mitigations=off tsc=reliable $append")
qemu+=(-virtfs "$(virtfs pfmfs_root / readonly=on)" -virtfs "$(virtfs pfmfs_ctl "$run")")
for d in "${repo_share[@]}"; do qemu+=(-virtfs "$(virtfs pfmfs_repo "$d" readonly=on)"); done
i=0
for d in "$VM_WORK/share" "${rw_dirs[@]}"; do
  qemu+=(-virtfs "$(virtfs "pfmfs_rw$i" "$d")")
  i=$((i + 1))
done

# Ahead of the host's other work (as root): the guest's CPUs are one host
# thread, and where the host stops it in the middle of a guest context
# switch, the guest's scheduler counts that time to a thread that the test
# PMU, loaded a moment later, does not. Beside a build or busy loops at the
# same priority that happened tens of times a second, and the module's tests
# of counts against CPU time failed (kmod busy_sleep, shared_cpu). At -10
# QEMU gets its core nearly whole beside three others.
nice=()
if [ "$(id -u)" -eq 0 ] && [ "${PFMFS_VM_NICE:--10}" != 0 ]; then nice=(nice -n "${PFMFS_VM_NICE:--10}"); fi

start=$(date +%s)
# In the background, so that our INT/TERM traps run at once (cleanup then
# stops QEMU) instead of after the pipeline. --foreground keeps QEMU in our
# process group, for a CI runner that kills the group.
{
  st=0
  timeout --foreground --kill-after=10 "$timeout_s" "${nice[@]}" "${qemu[@]}" </dev/null 2>&1 || st=$?
  { echo $st >"$run/qemu-status"; } 2>/dev/null  # gone if we were interrupted
} | sed -u 's/\r$//' | tee "$log" &
wait $! || true
qemu_status=$(cat "$run/qemu-status" 2>/dev/null || echo 1)
elapsed=$(( $(date +%s) - start ))

status=$(cat "$run/status" 2>/dev/null) ||
  status=$(sed -n "s/^PFMFS-VM-EXIT $nonce \([0-9]*\)$/\1/p" "$log" | tail -n1)
if [ -n "$status" ]; then
  [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ] &&
    echo "run-in-vm: the command ended, but the VM did not power off within ${timeout_s} s" >&2
  echo "run-in-vm: command exited with status $status after ${elapsed} s in the VM" >&2
  exit "$status"
fi
if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
  echo "run-in-vm: timeout: no exit status within ${timeout_s} s; QEMU killed (log: $VM_WORK/console.log)" >&2
  exit 243
fi
if [ -f "$run/init-failed" ]; then
  echo "run-in-vm: the guest's init failed: $(cat "$run/init-failed") (log: $VM_WORK/console.log)" >&2
  exit 242
fi
if ! grep -q '^pfmfs-vm: booted' "$log"; then
  echo "run-in-vm: the VM did not boot to /init (QEMU status $qemu_status; log: $VM_WORK/console.log)" >&2
  exit 241
fi
echo "run-in-vm: the guest stopped before the command ended (panic?) (log: $VM_WORK/console.log)" >&2
exit 242
