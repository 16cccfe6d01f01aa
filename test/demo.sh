#!/bin/bash
# test/demo.sh: the main job. A WRITE/READ sweep with the tuned-parameter report, on
# Soft-RoCE in the test bed when this host has no RDMA device (server on rxe0, client
# on rxe1: two devices joined by a veth pair, acting as two hosts), or on this host's
# device when RDMABENCH_DEV (and RDMABENCH_IP, its netdev's IPv4 address) are set.
# Leaves in $DEMO_OUT (default out/demo):
#   sweep.ndjson  every measured point (result schema), tuned.json, tuned.csv, tuned.txt,
#   report.html   the HTML report (curves, heat maps, latency, the tuned table)
# Extra arguments go to `rdmabench sweep` (e.g. --search grid, or --budget 10m). The
# default here, 210 s of guest time per operation, is what keeps the demo within 12 minutes
# of wall time in the virtual-clock test bed and still decides: there a guest second of
# Soft-RoCE work took 1.39 and 1.53 wall seconds in two demos on an otherwise idle 2-core
# host (2026-12-04: 240 s per operation, 11 min 41 s and 12 min 50 s), so 420 s of guest
# time takes 10-11 minutes; with 180 s (9 min 43 s) READ's final rounds ran out of budget
# before a late chosen point's neighbours had a second round (2 of its 4 cells decided).
# The demo asks for +-2%: the tuning article's table gives values, not margins, and a
# cell decided at +-2% answers it; a finer one (what the budget buys, often +-0.5% on
# the virtual bed) leaves undecided every comparison a rare slow run touched.
set -euo pipefail
[ -n "${RXE_VM:-}" ] || cd "$(dirname "$0")/.."  # in the guest, cwd already is the repository
if [ -n "${RXE_VM:-}" ]; then
  OUT=$1; shift  # the host passes its output directory, shared read-write (VM_RW)
else
  OUT=$(mkdir -p "${DEMO_OUT:-out/demo}" && cd "${DEMO_OUT:-out/demo}" && pwd)
  rm -f "$OUT"/sweep.ndjson "$OUT"/tuned.* "$OUT"/report.html
  if [ -z "${RDMABENCH_DEV:-}" ]; then
    exec env VM_RW="$OUT" VM_TIMEOUT=${VM_TIMEOUT:-1500} test/rxevm/run test/demo.sh "$OUT" "$@"
  fi
fi
B=$PWD/bin/rdmabench
if [ -n "${RXE_VM:-}" ]; then
  . "$VM_TOOL_DIR/guest-lib.sh"
  rxe_setup_pair || { echo "demo: Soft-RoCE setup failed"; exit 1; }
  RDMABENCH_DEV=$SRV_DEV RDMABENCH_IP=$SRV_IP CLIENT_DEV=$CLI_DEV
  echo "demo: Soft-RoCE server $SRV_DEV ($SRV_IP), client $CLI_DEV"
fi
$B server -d "$RDMABENCH_DEV" --bind "$RDMABENCH_IP" -p 18690 2> "$OUT/server.log" &
SPID=$!
trap 'kill $SPID 2>/dev/null' EXIT
for i in $(seq 100); do (exec 3<>"/dev/tcp/$RDMABENCH_IP/18690") 2>/dev/null && break; sleep 0.1; done
start=$(date +%s)
$B sweep -d "${CLIENT_DEV:-$RDMABENCH_DEV}" -p 18690 "$RDMABENCH_IP" \
  --records "$OUT/sweep.ndjson" --json "$OUT/tuned.json" --csv "$OUT/tuned.csv" --html "$OUT/report.html" --budget 210s --resolution 0.02 "$@" \
  2> >(cat >&2) | tee "$OUT/tuned.txt"   # stderr through a pipe: progress as plain lines
echo "demo: $(( $(date +%s) - start )) s; $(wc -l < "$OUT/sweep.ndjson") measurements in $OUT/sweep.ndjson; report in $OUT/tuned.{txt,json,csv} and $OUT/report.html"
