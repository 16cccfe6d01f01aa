#!/bin/bash
# kernel.sh: make sure a Debian kernel with rdma_rxe is unpacked in the test bed's cache
# and print its directory (which holds boot/vmlinuz-KV and lib/modules/KV).
#
# The kernel is fetched with `apt-get download` and unpacked with `dpkg -x`: it is never
# installed into /boot, so the host is left alone and nothing runs update-initramfs.
# Cache: $RDMABENCH_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench).
set -euo pipefail
CACHE=${RDMABENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench}
KROOT=$CACHE/kernel
if [ -f "$KROOT/.done" ]; then echo "$KROOT"; exit 0; fi
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[ -n "$pkg" ] || { echo "kernel.sh: apt does not know linux-image-amd64; run 'apt-get update' first" >&2; exit 1; }
rm -rf "$KROOT" "$CACHE/kernel.tmp"; mkdir -p "$CACHE/kernel.tmp"
(cd "$CACHE/kernel.tmp" && apt-get download "$pkg" >/dev/null 2>&1) \
  || { echo "kernel.sh: apt-get download $pkg failed" >&2; exit 1; }
dpkg -x "$CACHE"/kernel.tmp/*.deb "$CACHE/kernel.tmp/root"
kv=${pkg#linux-image-}
depmod -b "$CACHE/kernel.tmp/root" "$kv"
find "$CACHE/kernel.tmp/root/lib/modules/$kv" -name 'rdma_rxe.ko*' | grep -q . \
  || { echo "kernel.sh: $pkg has no rdma_rxe module" >&2; exit 1; }
mv "$CACHE/kernel.tmp/root" "$KROOT"
rm -rf "$CACHE/kernel.tmp"
echo "$kv" > "$KROOT/.done"
echo "$KROOT"
