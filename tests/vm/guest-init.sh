#!/bin/sh
# /init of the test VM's initramfs, run by busybox sh as PID 1 (see
# run-in-vm.sh). Stage 1 loads the 9p/fuse/overlay modules and builds the new
# root from the host's read-only / over 9p; stage 2, in that root, runs the
# command from the control share, records its exit status and powers off.
# Host and guest talk only through the control share /run/pfmfs-vm.

CTL=/run/pfmfs-vm           # the control share, at this path in the new root
BB=/run/pfmfs-vm-bin/busybox  # this busybox, copied to the new root's /run
# 9p over virtio: 512000 is the largest msize 6.1's virtio transport takes.
P9=trans=virtio,version=9p2000.L,msize=512000

say() { echo "pfmfs-vm: $*"; }

# Stops the VM without an exit-status record: the host then reports that the
# guest failed before the command ran, and this line says why.
die() {
  say "init failed: $*"
  bb=/bin/busybox
  [ -x "$BB" ] && bb=$BB
  for c in /ctl "$CTL"; do [ -d "$c" ] && echo "$*" >"$c/init-failed"; done 2>/dev/null
  "$bb" sync
  "$bb" poweroff -f
  echo o >/proc/sysrq-trigger
  "$bb" sleep 60
}

stage1() {
  export PATH=/bin
  /bin/busybox --install -s /bin
  mount -t devtmpfs dev /dev
  # The kernel found no /dev/console in the initramfs (none is needed to
  # build it), so init's output goes nowhere until it is reopened here.
  exec </dev/console >/dev/console 2>&1
  say "booted, stage 1"
  mount -t proc proc /proc
  mount -t sysfs sys /sys

  # In dependency order, as run-in-vm.sh resolved them from modules.dep.
  while read -r ko; do
    insmod "/modules/$ko" || die "insmod $ko"
  done </modules/load-order

  mkdir -p /ctl /newroot
  mount_9p pfmfs_ctl /ctl "$P9" || die "cannot mount the control share"
  . /ctl/vm.conf   # NONCE
  # cache=loose: the root is read-only and nothing in the guest changes it;
  # caching pages and dentries makes every exec and import much cheaper.
  mount_9p pfmfs_root /newroot "ro,$P9,cache=loose" || die "cannot mount the host's root"

  # What must be writable for programs, tests and tools: empty tmpfs where
  # the host's contents do not matter, overlays on a tmpfs where they do
  # (/etc for useradd, /var/lib, HOME=/root for caches). Nothing goes back to
  # the host.
  mount -t tmpfs -o mode=755,size=50% run /newroot/run || die "tmpfs /run"
  mkdir -p "/newroot$CTL" /newroot/run/pfmfs-vm-bin /newroot/run/pfmfs-vm-ovl
  mount -t tmpfs -o mode=1777,size=50% tmp /newroot/tmp || die "tmpfs /tmp"
  for d in etc var root home; do
    [ -d "/newroot/$d" ] || continue
    up=/newroot/run/pfmfs-vm-ovl/$d
    mkdir -p "$up/upper" "$up/work"
    mount -t overlay -o "lowerdir=/newroot/$d,upperdir=$up/upper,workdir=$up/work" \
      "ovl-$d" "/newroot/$d" || die "overlay on /$d"
  done
  [ -d /newroot/var/tmp ] && mount -t tmpfs -o mode=1777,size=50% vartmp /newroot/var/tmp

  # The checkout if it lies under a tmpfs (read-only), then the writable
  # shares, each at its host path; one under /tmp (say) needs its mount
  # point made in the guest's tmpfs.
  while read -r tag path; do
    mkdir -p "/newroot$path" 2>/dev/null
    mount_9p "$tag" "/newroot$path" "$P9" || die "cannot mount $path ($tag)"
  done </ctl/rw-shares

  mount --move /dev /newroot/dev
  mkdir -p /newroot/dev/pts /newroot/dev/shm
  mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
  mount -t tmpfs -o mode=1777 shm /newroot/dev/shm
  mount --move /proc /newroot/proc
  mount --move /sys /newroot/sys
  mount -t fusectl fusectl /newroot/sys/fs/fuse/connections 2>/dev/null
  mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
  mount --move /ctl "/newroot$CTL"
  cp /bin/busybox "/newroot$BB"
  cp /init /newroot/run/pfmfs-vm-bin/init
  # switch_root empties the initramfs and execs stage 2 in the new root.
  exec switch_root /newroot "$BB" sh /run/pfmfs-vm-bin/init stage2
}

# mount_9p TAG DIR OPTIONS: the device may still be probing after insmod,
# so a few tries, a tenth of a second apart.
mount_9p() {
  i=0
  until mount -t 9p -o "$3" "$1" "$2" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 50 ] || { mount -t 9p -o "$3" "$1" "$2"; return 1; }
    sleep 0.1
  done
}

stage2() {
  . "$CTL/vm.conf"
  # run-in-vm.sh wrote cmd.sh: the environment, the directory, the command.
  say "running the command"
  "$BB" env -i /bin/sh "$CTL/cmd.sh" </dev/null
  status=$?
  echo "$status" >"$CTL/status"
  echo "PFMFS-VM-EXIT $NONCE $status"
  "$BB" sync
  # The marker line must leave the serial port before the power goes.
  "$BB" sleep 0.3
  "$BB" poweroff -f
}

case ${1:-} in
  stage2) stage2 ;;
  *) stage1 ;;
esac
die "init fell through"
