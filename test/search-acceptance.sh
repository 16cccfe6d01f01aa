# test/search-acceptance.sh OP: in one test-bed boot, the full grid and the default
# (descent) search of the rxe profile for OP, against the same server; prints both
# outcomes. Run: VM_RW=$PWD/out/acc test/rxevm/run test/search-acceptance.sh write
set -u
OP=${1:-write}
OUT=${OUT_DIR:-$PWD/out/acc}
. "$VM_TOOL_DIR/guest-lib.sh"
rxe_setup_pair || exit 1
B=./bin/rdmabench
$B server -d rxe0 --bind 10.0.0.1 -p 18690 2> "$OUT/server.log" &
sleep 2
for search in grid descent; do
  rm -f "$OUT/$search.ndjson"
  s=$(date +%s)
  $B sweep -d rxe1 -p 18690 10.0.0.1 --ops "$OP" --search $search --results "$OUT/$search.ndjson" --json "$OUT/$search.json" 2>"$OUT/$search.log" > "$OUT/$search.txt"
  echo "$search: exit $? in $(( $(date +%s) - s )) s"
  grep -E "^sweep: $OP" "$OUT/$search.log"
  python3 -c '
import json,sys
t=json.load(open(sys.argv[1])); o=t["ops"][sys.argv[2]]
print("  best %.4f Gb/s at %s (%d runs); chosen %.4f Gb/s at %s; noise %.1f%%" % (o["best"]["score"], o["best"]["point"], o["best"]["runs"], o["chosen"]["score"], o["chosen"]["point"], 100*o["noise"]))' "$OUT/$search.json" "$OP"
done
