# test/hunt.sh [BUDGET]: `make hunt`, rdmabench hunt against Soft-RoCE in the test bed: two
# rxe devices on a veth pair standing in for two hosts (rxe1 -> rxe0), the rxe profile's
# space, BUDGET (default 11m) of hunting, then every finding's rdmabench reproducer run
# again, three times, as a user would paste it, with what it printed. Traffic goes only
# between the bed's own addresses (10.0.0.1, 10.0.0.2). A search, not a test: it prints
# what it found; the hunt package's planted-anomaly tests are the tests. Run it directly on
# two hosts with `rdmabench hunt` itself.
set -u
BUDGET=${1:-${HUNT_BUDGET:-11m}}
B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
# shellcheck source=rxevm/guest-lib.sh source-path=SCRIPTDIR
. "${VM_TOOL_DIR:-$(dirname "$0")/rxevm}/guest-lib.sh"
RDMABENCH_BIN=$B rxe_setup_pair || { echo "Soft-RoCE setup failed"; exit 1; }
OUT=${HUNT_OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "# hunt: server $SRV_DEV (GID $SRV_GID), client $CLI_DEV (GID $CLI_GID), budget $BUDGET, kernel $(uname -r)"
# A server sends traffic of its own (-b) only to clients that prove a token: one for
# both sides, from the environment, so that the reproducers below run as printed.
export RDMABENCH_TOKEN=hunt-$$-$RANDOM
$B server -d "$SRV_DEV" -x "$SRV_GID" --bind "$SRV_IP" > "$OUT/server.log" 2>&1 &
SPID=$!
wait_listen 18600 15 $SPID || { echo "rdmabench server did not start"; cat "$OUT/server.log"; exit 1; }
# A second server on the same device and address, another port: the fan-out to two
# servers (peers=2) is searched too, one QP to each.
$B server -d "$SRV_DEV" -x "$SRV_GID" --bind "$SRV_IP" -p 18601 > "$OUT/server2.log" 2>&1 &
SPID2=$!
wait_listen 18601 15 $SPID2 || { echo "the second rdmabench server did not start"; cat "$OUT/server2.log"; exit 1; }
# The bed runs at 7-13 MB/s: runs of 1 s, and sizes and depths whose queues a run of
# that length drains (larger ones only measure their queues' ramp, which the hunt does
# not judge); veths of 1500 bytes give an active MTU of 1024. QP timeouts 14 and 20,
# --mr modes, offsets, post lists, moderations and -b as the rxe profile has them. The
# two QPs' shares of a qps=2 run are judged for fairness (unfair, key qps), and so are
# the two servers' of a fan-out (key peers).
SPACE=${HUNT_SPACE:-size=4K,16K,64K; sq_depth=8,32,128; qps=1,2; mtu=1024}
$B hunt -d "$CLI_DEV" -x "$CLI_GID" "$SRV_IP" "$SRV_IP:18601" --budget "$BUDGET" --point-duration "${HUNT_POINT_S:-1}" --space "$SPACE" \
  --records "$OUT/hunt.ndjson" --json "$OUT/hunt.json"
rc=$?
[ -s "$OUT/hunt.json" ] || { echo "hunt: no outcome written (exit $rc)"; exit "$rc"; }
echo
echo "# records: $(wc -l < "$OUT/hunt.ndjson") lines; each finding's reproducer, run again three times:"
python3 - "$OUT/hunt.json" > "$OUT/repro.txt" <<'PY'
import json, sys
for f in json.load(open(sys.argv[1])).get("findings") or []:
    print(f["class"] + "\t" + f["reproducer"] + "\t" + (f.get("perftest") or "-"))
PY
while IFS=$'\t' read -r class repro perftest; do
  echo
  echo "## $class"
  echo "\$ $repro"
  echo "  (perftest: $perftest)"
  for i in 1 2 3; do
    # The reproducer names the server as the hunt did; its first word is rdmabench.
    eval "$B ${repro#rdmabench } --format plain" 2>&1 | tail -4 | sed "s/^/  run $i: /"
  done
done < "$OUT/repro.txt"
kill $SPID $SPID2 2>/dev/null
exit $rc
