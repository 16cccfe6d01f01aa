# test/parity.sh [ROUNDS]: rdmabench against perftest on the same device with the same
# parameters (perftest's defaults: tx depth 128, CQ moderation 100, no post list),
# alternating the two tools ROUNDS times per metric in one boot, then the median ratio
# rdmabench/perftest for each metric. A benchmark, not a test: it prints, it does not
# judge. Run it with `make parity` (in the test bed), or directly on a host with a
# device: PARITY_DEV=mlx5_0 PARITY_IP=192.0.2.1 bash test/parity.sh
set -u
ROUNDS=${1:-${ROUNDS:-5}}
B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
if [ -n "${PARITY_DEV:-}" ]; then
  DEV=$PARITY_DEV IP=${PARITY_IP:?set PARITY_IP}
else
  . "$VM_TOOL_DIR/guest-lib.sh"
  rxe_setup_loop || { echo "Soft-RoCE setup failed"; exit 1; }
  DEV=$SRV_DEV IP=$SRV_IP
fi
GID=$($B devices --json | python3 -c '
import json, sys, ipaddress
for d in json.load(sys.stdin):
    if d["name"] == sys.argv[1]:
        for g in d["ports"][0]["gids"]:
            if g["type"] == "RoCE v2" and ipaddress.ip_address(g["gid"]).version == 4:
                print(g["index"]); sys.exit()
print(0)' "$DEV")
OUT=$(mktemp -d)
echo "# parity on $DEV (GID $GID), $ROUNDS rounds per tool, $(nproc) CPUs, kernel $(uname -r)"
$B server -d "$DEV" -x "$GID" --bind "$IP" -p 18650 > "$OUT/server.log" 2>&1 &
SPID=$!
for i in $(seq 50); do (exec 3<>/dev/tcp/$IP/18650) 2>/dev/null && break; sleep 0.2; done
port=18700

# perf NAME ARGS: one perftest run, with retries of perftest's clock-calibration failure
perf() {
  local name=$1; shift
  local try
  for try in 1 2 3; do
    port=$((port + 1))
    timeout 120 $name -d "$DEV" -x "$GID" -p $port "$@" > "$OUT/ps.log" 2>&1 &
    local sp=$!
    sleep 1
    timeout 120 $name -d "$DEV" -x "$GID" -p $port "$@" "$IP" > "$OUT/pc.log" 2>&1
    local rc=$?
    wait $sp
    if [ $rc = 0 ] && ! grep -qE 'inf|Correlation' "$OUT/pc.log"; then cat "$OUT/pc.log"; return 0; fi
  done
  echo "perftest $name failed:" >&2; cat "$OUT/pc.log" >&2; return 1
}
# value FIELD: pull a number out of the last rdmabench JSON result
value() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, r))' "$OUT/r.json" "$1"; }

metric() { # NAME PERFTEST_ARGS -- RDMABENCH_ARGS -- PERFTEST_COLUMN RDMABENCH_EXPR
  local name=$1 pt=$2 rb=$3 col=$4 expr=$5 i p r
  : > "$OUT/$name.p"; : > "$OUT/$name.r"
  for i in $(seq "$ROUNDS"); do
    # Who goes first alternates, so that drift in the emulator favours neither tool.
    if [ $((i % 2)) = 1 ]; then
      p=$(perf $pt | awk -v c="$col" '$1 ~ /^[0-9]+$/ && NF >= c {v=$c} END {print v}')
    fi
    $B $rb -d "$DEV" -x "$GID" -p 18650 "$IP" --json "$OUT/r.json" > /dev/null 2>>"$OUT/rb.err" \
      && r=$(value "$expr") || r=
    if [ $((i % 2)) = 0 ]; then
      p=$(perf $pt | awk -v c="$col" '$1 ~ /^[0-9]+$/ && NF >= c {v=$c} END {print v}')
    fi
    echo "$p" >> "$OUT/$name.p"; echo "$r" >> "$OUT/$name.r"
    echo "  $name round $i: perftest $p, rdmabench $r"
  done
}
metric write_bw_64K_MiBps "ib_write_bw -s 65536 -n 2000"  "write bw -s 64K -n 2000 --warmup 0" 4 "bw_mib_per_s"
metric read_bw_64K_MiBps  "ib_read_bw -s 65536 -n 2000"   "read bw -s 64K -n 2000 --warmup 0"  4 "bw_mib_per_s"
metric write_rate_64B_Mpps "ib_write_bw -s 64 -n 20000"   "write bw -s 64 -n 20000 --warmup 0" 5 "msg_rate_mpps"
metric write_lat_2B_p50_us "ib_write_lat -F -s 2 -n 2000" "write lat -s 2 -n 2000 -t 1 -Q 1 --inline 220"   5 "lat_ns['p50']/1000"
metric read_lat_2B_p50_us  "ib_read_lat -F -s 2 -n 2000"  "read lat -s 2 -n 2000"   5 "lat_ns['p50']/1000"
kill $SPID 2>/dev/null
echo
python3 - "$OUT" <<'PY'
import statistics, sys, os
d = sys.argv[1]
# The rounds are paired (the two tools run back to back, order alternating), so the
# ratio of each round cancels the emulator's drift between rounds; its median is the
# headline. The ratio of the two medians is printed beside it.
print(f"{'metric':22} {'perftest':>10} {'rdmabench':>10} {'median of':>10} {'ratio of':>9}  goal")
print(f"{'':22} {'median':>10} {'median':>10} {'ratios':>10} {'medians':>9}")
for name in ["write_bw_64K_MiBps", "read_bw_64K_MiBps", "write_rate_64B_Mpps", "write_lat_2B_p50_us", "read_lat_2B_p50_us"]:
    rows = zip(open(os.path.join(d, name + ".p")).read().split("\n"), open(os.path.join(d, name + ".r")).read().split("\n"))
    pairs = [(float(p), float(r)) for p, r in rows if p and r]
    if not pairs:
        print(f"{name:22} no complete round"); continue
    mp, mr = statistics.median(p for p, _ in pairs), statistics.median(r for _, r in pairs)
    ratio = statistics.median(r / p for p, r in pairs)
    lat = "lat" in name
    ok = ratio <= 1.05 if lat else ratio >= 0.95
    print(f"{name:22} {mp:10.4f} {mr:10.4f} {ratio:10.3f} {mr/mp:9.3f}  {'<= 1.05' if lat else '>= 0.95'} {'ok' if ok else 'SHORT'} ({len(pairs)} rounds)")
PY
[ -s "$OUT/rb.err" ] && { echo "rdmabench errors:"; cat "$OUT/rb.err"; }
rm -rf "$OUT"
