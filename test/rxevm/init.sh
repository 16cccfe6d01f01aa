#!/bin/busybox sh
# /init of the test bed's initramfs (PID 1 in the guest), busybox only.
# Mounts the host root (9p, read-only) under a writable overlay (tmpfs upper), binds the
# cached kernel modules onto /lib/modules/KV, chroots and runs /run/vmshare/guest.sh with
# its output on /dev/hvc0 (the host's stdout), records the exit code, powers off.
BB=/bin/busybox
$BB mount -t proc proc /proc
$BB mount -t sysfs sysfs /sys
$BB mount -t devtmpfs devtmpfs /dev
log() { echo "[vm-init] $*" > /dev/console; }
MODS= SHELLMODE=0 RWDIR=
for a in $($BB cat /proc/cmdline); do
  case "$a" in
    rxe.mods=*) MODS=${a#rxe.mods=} ;;
    rxe.shell=1) SHELLMODE=1 ;;
    rxe.rw=*) RWDIR=${a#rxe.rw=} ;;
  esac
done
R=/newroot
die() {
  log "FATAL: $*"
  for c in /dev/hvc0 $R/dev/hvc0; do [ -c $c ] && echo "[vm-init] FATAL: $*" > $c; done
  $BB poweroff -f
}
for m in $($BB cat /mods/order); do $BB insmod /mods/$m || log "insmod $m failed"; done
i=0
while [ ! -e /dev/hvc0 ] && [ $i -lt 100 ]; do $BB usleep 50000; i=$((i+1)); done
KV=$($BB uname -r)
$BB mkdir -p /lower /rw
$BB mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /lower \
  || die "mount 9p hostroot failed"
$BB insmod /lower$MODS/kernel/fs/overlayfs/overlay.ko || die "insmod overlay from $MODS failed"
$BB mount -t tmpfs -o mode=755,size=70% tmpfs /rw
$BB mkdir -p /rw/upper /rw/work
$BB mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work $R \
  || die "overlay root mount failed"
$BB mkdir -p $R/lib/modules/$KV
$BB mount --bind /lower$MODS $R/lib/modules/$KV || die "bind modules failed"
$BB mount -t tmpfs -o mode=755 tmpfs $R/run
$BB mkdir -p $R/run/vmshare $R/run/lock
$BB mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 xfer $R/run/vmshare \
  || die "mount 9p xfer failed"
if [ -n "$RWDIR" ]; then
  $BB mkdir -p $R$RWDIR
  $BB mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rw $R$RWDIR || die "mount 9p rw share failed"
fi
$BB mount --move /proc $R/proc
$BB mount --move /sys $R/sys
$BB mount --move /dev $R/dev
$BB mkdir -p $R/dev/pts $R/dev/shm
# devtmpfs has no /dev/fd & co; bash's process substitution needs them.
$BB ln -sf /proc/self/fd $R/dev/fd
$BB ln -sf /proc/self/fd/0 $R/dev/stdin
$BB ln -sf /proc/self/fd/1 $R/dev/stdout
$BB ln -sf /proc/self/fd/2 $R/dev/stderr
$BB mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
$BB mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
$BB hostname rxevm
$BB ip link set lo up 2>/dev/null
OUT=$R/dev/hvc0   # /dev now lives in the new root
echo "[vm-init] guest ready: kernel=$KV uptime=$($BB cut -d' ' -f1 $R/proc/uptime)s" > $OUT
export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin
export TERM=dumb LANG=C.UTF-8 RXE_VM=1
if [ $SHELLMODE = 1 ]; then
  $BB chroot $R /bin/bash --rcfile /run/vmshare/rc -i \
    < $R/dev/console > $R/dev/console 2>&1
else
  $BB chroot $R /bin/bash -c '. /run/vmshare/env; exec /bin/bash /run/vmshare/guest.sh "$@"' \
    < $R/dev/null > $OUT 2>&1
fi
echo "$?" > $R/run/vmshare/exitcode
$BB sync
$BB poweroff -f
