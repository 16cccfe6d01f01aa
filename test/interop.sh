# test/interop.sh [ROUNDS [ONLY]]: rdmabench and perftest on the two ends of one link, in every
# pairing, for perftest's four tests (and the bandwidth tests' 64 B message rate): perftest to perftest (the reference), an rdmabench
# client against a plain perftest server (--perftest), and a plain perftest client
# against 'rdmabench server --perftest-port'. The three pairings rotate ROUNDS times per
# test in one boot of the test bed (two devices standing in for two hosts), then the
# median of each is printed with its ratio to perftest-to-perftest's. A benchmark, not a
# test: it prints, it does not judge (test/e2e/perftest_test.go checks that every pairing
# runs and counts). Run it with `make interop` (ONLY=rate: the tests whose name holds it).
set -u
ROUNDS=${1:-${ROUNDS:-3}}
ONLY=${2:-}
B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
# shellcheck source=rxevm/guest-lib.sh source-path=SCRIPTDIR
. "${VM_TOOL_DIR:-$(dirname "$0")/rxevm}/guest-lib.sh"
RDMABENCH_BIN=$B rxe_setup_pair || { echo "Soft-RoCE setup failed"; exit 1; }
OUT=$(mktemp -d)
echo "# interop: server $SRV_DEV (GID $SRV_GID), client $CLI_DEV (GID $CLI_GID), $ROUNDS rounds, perftest $(ib_write_bw --version 2>/dev/null | sed -n "s/^Version: //p")"
$B server -d "$SRV_DEV" -x "$SRV_GID" --bind "$SRV_IP" -p 18650 --perftest-port 18651 --timeout 30s > "$OUT/server.log" 2>&1 &
SPID=$!
wait_listen 18651 15 $SPID || { echo "rdmabench server did not start"; cat "$OUT/server.log"; exit 1; }
PT_DIR=$OUT PT_PORT=18700
column() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && NF >= c {v=$c} END {print v}' "$2"; }
value() {
  python3 -c '
import json, sys
try:
    print("%.6g" % float(eval(sys.argv[2], {}, json.load(open(sys.argv[1])))))
except Exception:
    pass' "$OUT/r.json" "$1"
}
# rp NAME ARGS: an rdmabench client against a plain perftest server (NAME) on SRV_DEV.
rp() {
  local name=$1 rb=$2 args=$3 expr=$4
  PT_PORT=$((PT_PORT + 1))
  timeout 150 "$name" -d "$SRV_DEV" -x "$SRV_GID" -p "$PT_PORT" $args > "$OUT/rp-srv.log" 2>&1 &
  local spid=$!
  wait_listen "$PT_PORT" 15 "$spid" || return 1
  rm -f "$OUT/r.json"
  timeout 150 $B $rb -d "$CLI_DEV" -x "$CLI_GID" $args --perftest "$SRV_IP:$PT_PORT" --json "$OUT/r.json" > "$OUT/rp-cli.log" 2>&1
  local rc=$?
  wait "$spid"
  [ $rc = 0 ] && value "$expr"
}
# pr NAME ARGS COL: a plain perftest client against the rdmabench server's perftest port.
pr() {
  timeout 150 "$1" -d "$CLI_DEV" -x "$CLI_GID" -p 18651 $2 "$SRV_IP" > "$OUT/pr-cli.log" 2>&1 && column "$3" "$OUT/pr-cli.log"
}
test_() { # NAME PERFTEST RDMABENCH ARGS COLUMN EXPR
  local name=$1 pt_=$2 rb=$3 args=$4 col=$5 expr=$6 i v
  case $name in *"$ONLY"*) ;; *) return 0 ;; esac
  : > "$OUT/$name.pp"; : > "$OUT/$name.rp"; : > "$OUT/$name.pr"
  for i in $(seq "$ROUNDS"); do
    for k in $(seq 0 2); do # rotate who goes first, so that drift favours no pairing
      case $(( (i + k) % 3 )) in
        0) v=; pt $pt_ $args 2>> "$OUT/pt.err" && v=$(column "$col" "$OUT/pt-cli.log"); echo "$v" >> "$OUT/$name.pp" ;;
        1) v=$(rp "$pt_" "$rb" "$args" "$expr"); echo "$v" >> "$OUT/$name.rp" ;;
        2) v=$(pr "$pt_" "$args" "$col"); echo "$v" >> "$OUT/$name.pr" ;;
      esac
    done
    echo "  $name round $i: perftest-perftest $(tail -1 "$OUT/$name.pp"), rdmabench->perftest $(tail -1 "$OUT/$name.rp"), perftest->rdmabench $(tail -1 "$OUT/$name.pr")"
  done
}
# perftest's columns: bandwidth "#bytes #iterations BW-peak BW-average[MB/sec] MsgRate",
# latency "#bytes #iterations t_min t_max t_typical ..." (t_typical: the median).
test_ write_bw_64K_MiBps ib_write_bw "write bw" "-s 65536 -n 2000" 4 "bw_mib_per_s"
test_ read_bw_64K_MiBps  ib_read_bw  "read bw"  "-s 65536 -n 2000" 4 "bw_mib_per_s"
test_ write_rate_64B_Mpps ib_write_bw "write bw" "-s 64 -n 20000" 5 "msg_rate_mpps"
test_ read_rate_64B_Mpps  ib_read_bw  "read bw"  "-s 64 -n 20000" 5 "msg_rate_mpps"
test_ write_lat_2B_p50_us ib_write_lat "write lat" "-s 2 -n 2000" 5 "lat_ns['p50']/1000"
test_ read_lat_2B_p50_us  ib_read_lat  "read lat"  "-s 2 -n 2000" 5 "lat_ns['p50']/1000"
kill $SPID 2>/dev/null
echo
python3 - "$OUT" <<'PY'
import statistics, sys, os
d = sys.argv[1]
def nums(f):
    out = []
    if not os.path.exists(f):  # a test ONLY left out
        return out
    for s in open(f).read().split():
        try:
            v = float(s)
        except ValueError:
            continue
        if v > 0 and v == v and v != float("inf"):
            out.append(v)
    return out
print(f"{'test':22} {'perftest->perftest':>19} {'rdmabench->perftest':>20} {'perftest->rdmabench':>20}")
for name in ["write_bw_64K_MiBps", "read_bw_64K_MiBps", "write_rate_64B_Mpps", "read_rate_64B_Mpps", "write_lat_2B_p50_us", "read_lat_2B_p50_us"]:
    cols = []
    ref = None
    for k in ["pp", "rp", "pr"]:
        xs = nums(os.path.join(d, f"{name}.{k}"))
        if not xs:
            cols.append("-"); continue
        m = statistics.median(xs)
        v = f"{m:.2f}" if m >= 1 else f"{m:.6g}"
        if k == "pp":
            ref = m
            cols.append(f"{v} (n={len(xs)})")
        else:
            cols.append(f"{v} x{m / ref:.4f} (n={len(xs)})" if ref else f"{v} (n={len(xs)})")
    print(f"{name:22} {cols[0]:>19} {cols[1]:>20} {cols[2]:>20}")
print("medians over the rounds; xR: the ratio to perftest->perftest in the same boot. Bandwidth: the")
print("client's MiB/s (perftest's 'BW average', rdmabench's bw_mib_per_s); rate: its Mpps; latency: the median one-way")
print("(write: half the round trip) or READ completion in us, as the client measured it.")
PY
