#!/bin/bash
# mkinitramfs.sh MODDIR OUT.cpio.gz: a ~1.5 MB initramfs with busybox-static, the
# virtio/9p modules needed to mount the host root, and init.sh as /init.
set -euo pipefail
MODDIR=${1:?modules dir (.../lib/modules/KV)}
OUT=${2:?output file}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -f "$MODDIR/modules.dep" ] || { echo "mkinitramfs: no $MODDIR/modules.dep" >&2; exit 1; }
[ -x /bin/busybox ] || { echo "mkinitramfs: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 1; }

declare -A SEEN=()
ORDER=()
add() { # relative .ko path from modules.dep; dependencies first
  local p=$1 line d
  [ -n "${SEEN[$p]:-}" ] && return 0
  SEEN[$p]=1
  line=$(grep -E "^${p//./\\.}:" "$MODDIR/modules.dep" | head -1)
  for d in ${line#*:}; do add "$d"; done
  ORDER+=("$p")
}
for m in virtio_pci 9pnet_virtio 9p virtio_console; do
  line=$(grep -E "^[^:]*/$m\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | head -1 || true)
  if [ -z "$line" ]; then
    grep -qE "/$m\.ko" "$MODDIR/modules.builtin" && continue
    echo "mkinitramfs: module $m not found" >&2; exit 1
  fi
  add "${line%%:*}"
done

W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/{bin,sbin,dev,proc,sys,newroot,mods,run}
cp /bin/busybox "$W/bin/busybox"
: > "$W/mods/order"
for p in "${ORDER[@]}"; do
  b=$(basename "$p")
  case "$b" in
    *.ko) cp "$MODDIR/$p" "$W/mods/$b" ;;
    *.ko.xz) xz -dc "$MODDIR/$p" > "$W/mods/${b%.xz}"; b=${b%.xz} ;;
    *.ko.zst) zstd -qdc "$MODDIR/$p" > "$W/mods/${b%.zst}"; b=${b%.zst} ;;
  esac
  echo "$b" >> "$W/mods/order"
done
cp "$HERE/init.sh" "$W/init"
# The kernel's module auto-loader runs /sbin/modprobe in the initramfs root (only our
# child chroots), so forward it into the real root.
printf '#!/bin/busybox sh\nexec /bin/busybox chroot /newroot /sbin/modprobe "$@"\n' > "$W/sbin/modprobe"
chmod 755 "$W/init" "$W/bin/busybox" "$W/sbin/modprobe"
(cd "$W" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
