# test/search-acceptance.sh OP [BUDGET]: in one test-bed boot, the full grid and the default
# (descent) search of the rxe profile for OP, against the same server, both without a
# budget (the grid is measured whole; descent re-measures until its comparisons decide).
# Prints both outcomes and the acceptance: descent's best (its median over the final
# rounds) within 2% of the grid's best (likewise), with at most 25% of the grid's
# points; and, for information, descent's point as the grid's own run valued it. Exit 1
# when it fails. Results in out/acc/OP (grid and descent: .ndjson, .json, .log, .txt).
# Run: make search-acceptance [ACC_OPS=write] [ACC_BUDGET=9m], or
# mkdir -p out/acc && VM_RW=$PWD/out/acc VM_TIMEOUT=3600 test/rxevm/run test/search-acceptance.sh write [9m]
set -u
OP=${1:-write}
BUDGET=${2:-0}  # per search; 0: none (the grid's final rounds then run until they decide or reach their round limit)
OUT=${OUT_DIR:-$PWD/out/acc}/$OP
mkdir -p "$OUT" || exit 1
. "$VM_TOOL_DIR/guest-lib.sh"
rxe_setup_pair || exit 1
B=./bin/rdmabench
$B server -d rxe0 --bind 10.0.0.1 -p 18690 2> "$OUT/server.log" &
SPID=$!
trap 'kill $SPID 2>/dev/null' EXIT
for i in $(seq 100); do (exec 3<>/dev/tcp/10.0.0.1/18690) 2>/dev/null && break; sleep 0.1; done
for search in grid descent; do
  rm -f "$OUT/$search.ndjson"
  s=$(date +%s)
  $B sweep -d rxe1 -p 18690 10.0.0.1 --ops "$OP" --search $search --budget "$BUDGET" \
    --records "$OUT/$search.ndjson" --json "$OUT/$search.json" 2>"$OUT/$search.log" > "$OUT/$search.txt"
  echo "$search: exit $? in $(( $(date +%s) - s )) s"
  grep -E "^sweep: $OP" "$OUT/$search.log"
done
python3 - "$OUT/grid.json" "$OUT/descent.json" "$OP" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["ops"][sys.argv[3]]
d = json.load(open(sys.argv[2]))["ops"][sys.argv[3]]
key = lambda p: tuple(p[k] for k in ("msg_size_bytes", "sq_depth", "buf_offset_bytes", "cq_mod", "post_list"))
for name, o in (("grid", g), ("descent", d)):
    print("%s: best %.4f Gb/s at %s (%d runs); chosen %.4f Gb/s at %s (%d runs, decided %s); %d/%d points, %d runs; noise %.1f%%" % (
        name, o["best"]["median"], key(o["best"]["point"]), o["best"]["runs"], o["chosen"]["median"], key(o["chosen"]["point"]),
        o["chosen"]["runs"], o["decided"], o["points_measured"], o["grid_points"], o["runs"] + o["runs_reused"], 100 * o["noise"]))
bw = {key(p["point"]): p["bw_gbit_per_s"] for p in g["points"] if p["runs"] > 0}
dval = bw.get(key(d["best"]["point"]), 0)
ratio = d["best"]["median"] / g["best"]["median"]
frac = d["points_measured"] / g["grid_points"]
ok = ratio >= 0.98 and frac <= 0.25
print("info: the grid measured descent's best %s at %.4f Gb/s (all its runs), its own best %s at %.4f" % (
    key(d["best"]["point"]), dval, key(g["best"]["point"]), bw.get(key(g["best"]["point"]), 0)))
print("acceptance: descent's best is %.1f%% of the grid's best (%.4f vs %.4f Gb/s, final-round medians), with %.0f%% of the points: %s" % (
    100 * ratio, d["best"]["median"], g["best"]["median"], 100 * frac, "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
