# test/scenarios.sh: the article's scenarios measured in one boot of the test bed (make
# scenarios) or on a host with devices (SCEN_SRV_DEV, SCEN_CLI_DEV, SCEN_IP set):
#   C2  registration cost in the data path: sweep --mr pool,per-io with TCP in the same
#       rounds, WRITE and READ, and a registration cache next to them;
#   C5  fan-out / fan-in: three servers on the server's device, a broadcast WRITE and a
#       gather READ in rounds, the READ with a landing region per server and one shared,
#       and streams of both at two run lengths and two queue depths (fairness verdict).
# It prints the tables rdmabench prints; it does not judge. Traffic stays on the test
# bed's own addresses (or SCEN_IP's host).
set -u
B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
# shellcheck source=rxevm/guest-lib.sh source-path=SCRIPTDIR
. "${VM_TOOL_DIR:-$(dirname "$0")/rxevm}/guest-lib.sh"
if [ -n "${SCEN_SRV_DEV:-}" ]; then
  SRV_DEV=$SCEN_SRV_DEV CLI_DEV=${SCEN_CLI_DEV:-$SCEN_SRV_DEV} SRV_IP=${SCEN_IP:?set SCEN_IP}
else
  RDMABENCH_BIN=$B rxe_setup_pair || { echo "Soft-RoCE setup failed"; exit 1; }
fi
OUT=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
SERVERS=
for p in 18801 18802 18803; do
  $B server -d "$SRV_DEV" --bind "$SRV_IP" -p $p --timeout 10s > "$OUT/server-$p.log" 2>&1 &
  PIDS+=($!)
  wait_listen $p 15 $! || { echo "server on $p did not start"; cat "$OUT/server-$p.log"; exit 1; }
  SERVERS=${SERVERS:+$SERVERS,}$SRV_IP:$p
done
echo "# scenarios: client $CLI_DEV, servers $SERVERS on $SRV_DEV, $(nproc) CPUs, kernel $(uname -r)"
rc=0
step() { echo; echo "\$ rdmabench $*"; "$B" "$@" || { echo "(exit $?)"; rc=1; }; }

echo; echo "## C2: a registration per IO against a pre-registered pool, and TCP"
step sweep -d "$CLI_DEV" -p 18801 "$SRV_IP" --ops write,read --mr pool,per-io --sizes 4K,64K,256K \
  --repeat 3 --point-duration 0.3 --baseline tcp --records "$OUT/c2.ndjson" --json "$OUT/c2.json"
step write bw -d "$CLI_DEV" -p 18801 "$SRV_IP" -s 4K -n 2000 -t 16 --mr cache

echo; echo "## C5: broadcast WRITE and gather READ to three servers, in rounds"
step write bw -d "$CLI_DEV" "$SERVERS" -s 64K -n 300 --sync rounds --verify
step read bw -d "$CLI_DEV" "$SERVERS" -s 64K -n 300 --sync rounds --landing per-peer
step read bw -d "$CLI_DEV" "$SERVERS" -s 64K -n 300 --sync rounds --landing shared
echo; echo "## C5: streams to the three servers: how evenly they are served, as the run's edges shrink"
for args in "-D 2" "-D 6" "-D 2 -t 32" "-D 6 -t 32"; do
  for op in write read; do
    # shellcheck disable=SC2086 # $args is several flags
    step $op bw -d "$CLI_DEV" "$SERVERS" -s 64K $args
  done
done
exit $rc
