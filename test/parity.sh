# test/parity.sh [ROUNDS [METRICS [POST_API [SKIP]]]]: rdmabench against perftest on the same device, each tool with
# its own defaults: both command lines name only the device, GID index, port, message
# size and iterations, so what is compared is what a user of either tool gets by default
# (rdmabench's defaults mirror perftest's: tx depth, CQ moderation, post list, inline
# size per device; the plan each tool ran is printed after the first round of a metric).
# The two tools alternate ROUNDS times per metric in one boot, then the median of the
# per-round ratios rdmabench/perftest is printed for each metric with its goal. A
# benchmark, not a test: it prints, it does not judge. A failed round leaves a gap.
# Run it with `make parity` (in the test bed), or directly on a host with a device:
# PARITY_DEV=mlx5_0 PARITY_IP=192.0.2.1 bash test/parity.sh
# or across two hosts, run on the client host (make hw-check does this):
# PARITY_SSH='ssh host-a' PARITY_DEV=mlx5_0 PARITY_CLI_DEV=mlx5_1 PARITY_IP=host-a bash test/parity.sh
# Knobs (environment):
#   PARITY_DEV, PARITY_IP   the server's device and its address (else: the test bed, one rxe)
#   PARITY_CLI_DEV          the client's device (default PARITY_DEV)
#   PARITY_SSH              the command prefix that runs a command line on the server host
#                           (test/remote-lib.sh: "ssh user@host", or "local"): both tools'
#                           servers run there, their clients here
#   PARITY_SRV_BIN          rdmabench on the server host (default: this one's path)
#   PARITY_SRV_GID, PARITY_CLI_GID  GID indexes (default: rdmabench's choice, perftest's)
#   PARITY_SRV_IB_PORT, PARITY_CLI_IB_PORT  the devices' ports, -i for both tools (default 1)
#   PARITY_DURATION=S       time the bandwidth and message-rate rows (make hw-check): each
#                           tool measures S seconds (-D) after the same warm-up of
#                           PARITY_MARGIN seconds (default 1) of the same traffic: perftest
#                           -D S+2M -f M (its margin, before and after what it counts),
#                           rdmabench -D S --warmup N, N the messages the link moves in M
#                           seconds, from a calibration run of rdmabench before the rounds.
#                           The latency rows stay -n 2000, rdmabench with --warmup 0, as
#                           perftest's latency tests do not warm up. Without it the rows are
#                           counted (-n) with each tool's default warm-up (make parity)
#   PARITY_TARGET=T         every metric's goal at T: rdmabench/perftest >= T for bandwidth
#                           and message rate, <= 1/T for latency (default: the goals below)
#   PARITY_OUT=DIR          keep every round and log in DIR, and the table as DIR/parity.txt
#                           and DIR/parity.tsv (one line a metric, with its verdict)
#   PT_TIMEOUT              the bound on each run of either tool (default 120 s)
# TCP ports: rdmabench's server 18650; perftest's servers 18701-18708 in turn (pt_port,
# test/rxevm/guest-lib.sh: PT_PORT_FIRST, PT_PORT_COUNT).
#   RDMABENCH_TOKEN         the token rdmabench's server requires and its client proves
set -u
ROUNDS=${1:-${ROUNDS:-5}}
# METRICS: an extended regular expression; only the metrics whose names match it run
# (e.g. "rate" for the two message-rate rows, with many rounds).
METRICS=${2:-${METRICS:-.}}
# POST_API: rdmabench's --post-api for every row (auto: perftest's choice for the device,
# ibv_post_send on rxe, as perftest there; wr: the extended QP API, ibv_wr_*).
POST_API=${3:-${POST_API:-auto}}
# SKIP: an extended regular expression; the metrics it matches do not run (make parity
# runs the latency rows on the bed's real clock and the others on its virtual one).
SKIP=${4:-${PARITY_SKIP:-}}
B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# guest-lib.sh: the test bed's set-up, the GID choice (rb_gid: rdmabench's own) and the
# perftest runner (pt); $0 is a copy in the test bed, hence VM_TOOL_DIR there.
# shellcheck source=rxevm/guest-lib.sh source-path=SCRIPTDIR
. "${VM_TOOL_DIR:-$HERE/rxevm}/guest-lib.sh"
PT=pt
SRV_IB_PORT=${PARITY_SRV_IB_PORT:-1} CLI_IB_PORT=${PARITY_CLI_IB_PORT:-1}
DUR=${PARITY_DURATION:-} MARGIN=${PARITY_MARGIN:-1}
if [ -n "$DUR" ] && ! [[ $DUR =~ ^[1-9][0-9]*$ && $MARGIN =~ ^[1-9][0-9]*$ ]]; then
  echo "parity: PARITY_DURATION $DUR and PARITY_MARGIN $MARGIN: want whole seconds, at least 1"; exit 1
fi
if [ -n "${PARITY_SSH:-}" ]; then
  # The servers on the server host, through the prefix (remote-lib.sh: srv_*, pt_far).
  RL=${VM_TOOL_DIR:+$VM_TOOL_DIR/..}
  # shellcheck source=remote-lib.sh source-path=SCRIPTDIR
  . "${RL:-$HERE}/remote-lib.sh"
  SRV_DEV=${PARITY_DEV:?set PARITY_DEV} CLI_DEV=${PARITY_CLI_DEV:-$PARITY_DEV} SRV_IP=${PARITY_IP:?set PARITY_IP}
  SRV_BIN=${PARITY_SRV_BIN:-$B}
  srv_init "$PARITY_SSH" || exit 1
  trap srv_cleanup EXIT
  trap 'exit 130' INT TERM
  SRV_GID=${PARITY_SRV_GID:-$(srv "$(_q "$SRV_BIN" devices --gid -d "$SRV_DEV" -i "$SRV_IB_PORT")" < /dev/null | awk '{print $3}')}
  [ -n "$SRV_GID" ] || { echo "parity: no GID on $SRV_DEV on the server host"; exit 1; }
  if [ -z "${PARITY_CLI_GID:-}" ]; then
    RDMABENCH_BIN=$B rb_gid "$CLI_DEV" "$CLI_IB_PORT" || { echo "parity: no GID on $CLI_DEV"; exit 1; }
  fi
  CLI_GID=${PARITY_CLI_GID:-$RB_GID_INDEX}
  PT=pt_far
elif [ -n "${PARITY_DEV:-}" ]; then
  SRV_DEV=$PARITY_DEV CLI_DEV=${PARITY_CLI_DEV:-$PARITY_DEV} SRV_IP=${PARITY_IP:?set PARITY_IP}
  RDMABENCH_BIN=$B rb_gid "$SRV_DEV" "$SRV_IB_PORT" || { echo "parity: no GID on $SRV_DEV"; exit 1; }
  SRV_GID=${PARITY_SRV_GID:-$RB_GID_INDEX}
  RDMABENCH_BIN=$B rb_gid "$CLI_DEV" "$CLI_IB_PORT" || { echo "parity: no GID on $CLI_DEV"; exit 1; }
  CLI_GID=${PARITY_CLI_GID:-$RB_GID_INDEX}
else
  RDMABENCH_BIN=$B rxe_setup_loop || { echo "Soft-RoCE setup failed"; exit 1; }
fi
IP=$SRV_IP
if [ -n "${PARITY_OUT:-}" ]; then
  OUT=$PARITY_OUT KEEP=1
  mkdir -p "$OUT" || exit 1
else
  OUT=$(mktemp -d) KEEP=0
fi
PT_TIMEOUT=${PT_TIMEOUT:-120}
where="on $SRV_DEV port $SRV_IB_PORT (GID $SRV_GID)"
[ "$CLI_DEV/$CLI_IB_PORT/$CLI_GID" = "$SRV_DEV/$SRV_IB_PORT/$SRV_GID" ] ||
  where="server $SRV_DEV port $SRV_IB_PORT (GID $SRV_GID), client $CLI_DEV port $CLI_IB_PORT (GID $CLI_GID)"
[ -z "$DUR" ] || where="$where, bandwidth and rate rows timed: $DUR s each after a $MARGIN s warm-up"
[ -z "${PARITY_SSH:-}" ] || where="$where, servers through '$PARITY_SSH'"
echo "# parity $where, rdmabench --post-api $POST_API, $ROUNDS rounds per tool, $(nproc) CPUs, kernel $(uname -r), perftest $(ib_write_bw --version 2>/dev/null | sed -n "s/^Version: //p")"
if [ -n "${PARITY_SSH:-}" ]; then
  tokf=()
  if [ -n "${RDMABENCH_TOKEN:-}" ]; then
    printf '%s\n' "$RDMABENCH_TOKEN" | srv_put token && tokf=(--token-file "$SRV_DIR/token")
  fi
  # Bounded by the longest the rounds can take: every run of both tools at its bound.
  srv_bg rb-server $((16 * ROUNDS * (PT_TRIES + 1) * PT_TIMEOUT + 60)) "$SRV_BIN" server -d "$SRV_DEV" -i "$SRV_IB_PORT" -x "$SRV_GID" -p 18650 "${tokf[@]}"
  srv_listening 18650 30 rb-server || { echo "parity: rdmabench server did not start:"; srv "cat $(_q "$SRV_DIR/rb-server.log")" < /dev/null; exit 1; }
else
  $B server -d "$SRV_DEV" -i "$SRV_IB_PORT" -x "$SRV_GID" --bind "$IP" -p 18650 > "$OUT/server.log" 2>&1 &
  SPID=$!
  for i in $(seq 50); do (exec 3<>/dev/tcp/$IP/18650) 2>/dev/null && break; sleep 0.2; done
fi

# Each perftest run is guest-lib's pt: server and client here, the client's output in
# $OUT/pt-cli.log, failures in $OUT/pt.err; each try takes the next TCP port of 18701-18708.
# With PARITY_SSH it is remote-lib's pt_far, the same with its server on the server host.
PT_DIR=$OUT
# column N: the value in column N of perftest's last result row (empty if none)
column() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && NF >= c {v=$c} END {print v}' "$OUT/pt-cli.log"; }
# value EXPR: a number from the last rdmabench JSON result (empty if it is missing or null)
value() {
  python3 -c '
import json, sys
try:
    v = eval(sys.argv[2], {}, json.load(open(sys.argv[1])))
    print(float(v))
except Exception:
    pass' "$OUT/r.json" "$1"
}
# plans: the parameters each tool ran with, as each reports them
plans() {
  echo "    perftest: $(grep -E '^ (TX depth|Post List|CQ Moderation|Max inline data|Outstand reads) ' "$OUT/pt-cli.log" | tr -s ' ' | paste -sd, -)"
  echo "    rdmabench: $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); c = r["config"]
print("depth %s, post list %s, cq-mod %s, inline %s (used: %s), max_rd_atom %s, post api %s, warm-up %s, clock %s %s" % (
    c["sq_depth"], c["post_list"], c["cq_mod"], c["inline_bytes"], r["inline_used"], r["max_rd_atom"], c.get("post_api", "-"),
    r["warmup_iterations_done"], r["clock"], r.get("clock_note", "")))' "$OUT/r.json" 2>/dev/null)"
}

# rb ARGS...: one rdmabench client run, its result in $OUT/r.json
rb() {
  rm -f "$OUT/r.json"
  timeout -k 5 "$PT_TIMEOUT" $B "$@" --post-api "$POST_API" -d "$CLI_DEV" -i "$CLI_IB_PORT" -x "$CLI_GID" -p 18650 "$IP" \
    --json "$OUT/r.json" > /dev/null 2>>"$OUT/rb.err"
}

metric() { # NAME PERFTEST_ARGS RDMABENCH_ARGS PERFTEST_COLUMN RDMABENCH_EXPR
  local name=$1 ptargs=$2 rb=$3 col=$4 expr=$5 i p r shown= n
  echo "$name" | grep -Eq -- "$METRICS" || return 0
  [ -z "$SKIP" ] || ! echo "$name" | grep -Eq -- "$SKIP" || return 0
  : > "$OUT/$name.p"; : > "$OUT/$name.r"
  if [[ -n $DUR && " $rb " == *" -D "* ]]; then
    # The warm-up perftest's margin gives, MARGIN seconds of this traffic, counted in
    # messages from a one-second run without one (at least one queue's worth, 128).
    n=''
    # shellcheck disable=SC2086 # rb's arguments are words
    if rb ${rb/ -D $DUR/ -D 1} --warmup 0; then n=$(value "iterations_done / (duration_ns / 1e9)"); fi
    n=${n%.*}
    [ -n "$n" ] && [ "$n" -ge 128 ] 2>/dev/null || n=128
    n=$((n * MARGIN))
    rb="$rb --warmup $n"
    echo "  $name: rdmabench warms up with $n messages ($MARGIN s at the rate of a 1 s run), perftest with -f $MARGIN"
  fi
  for i in $(seq "$ROUNDS"); do
    p= r=
    # Who goes first alternates, so that drift in the emulator favours neither tool.
    if [ $((i % 2)) = 1 ]; then
      $PT $ptargs 2>> "$OUT/pt.err" && p=$(column "$col")
    fi
    # shellcheck disable=SC2086 # rb's arguments are words
    if rb $rb; then
      r=$(value "$expr")
    fi
    if [ $((i % 2)) = 0 ]; then
      $PT $ptargs 2>> "$OUT/pt.err" && p=$(column "$col")
    fi
    echo "$p" >> "$OUT/$name.p"; echo "$r" >> "$OUT/$name.r"
    echo "  $name round $i: perftest ${p:--}, rdmabench ${r:--}"
    if [ -z "$shown" ] && [ -n "$p" ] && [ -s "$OUT/r.json" ]; then plans; shown=1; fi
  done
}
# perftest's columns: bandwidth tests "#bytes #iterations BW-peak BW-average[MB/sec]
# MsgRate[Mpps]", latency tests "#bytes #iterations t_min t_max t_typical ..." (t_typical
# is the median). -F lets perftest's latency report go on where it finds conflicting CPU
# frequencies (common in VMs) instead of giving up; it changes nothing that is measured.
if [ -n "$DUR" ]; then  # PARITY_DURATION: timed rows (make hw-check), the same warm-up
  pd="-D $((DUR + 2 * MARGIN)) -f $MARGIN"
  metric write_bw_64K_MiBps  "ib_write_bw -s 65536 $pd" "write bw -s 64K -D $DUR" 4 "bw_mib_per_s"
  metric read_bw_64K_MiBps   "ib_read_bw -s 65536 $pd"  "read bw -s 64K -D $DUR"  4 "bw_mib_per_s"
  metric write_rate_64B_Mpps "ib_write_bw -s 64 $pd"    "write bw -s 64 -D $DUR"  5 "msg_rate_mpps"
  metric read_rate_64B_Mpps  "ib_read_bw -s 64 $pd"     "read bw -s 64 -D $DUR"   5 "msg_rate_mpps"
  nw="--warmup 0"
else
metric write_bw_64K_MiBps   "ib_write_bw -s 65536 -n 2000"  "write bw -s 64K -n 2000"  4 "bw_mib_per_s"
metric read_bw_64K_MiBps    "ib_read_bw -s 65536 -n 2000"   "read bw -s 64K -n 2000"   4 "bw_mib_per_s"
# Duration mode: perftest counts the completions inside an alarm window that opens at the
# first post when -D is under 4 (its warm-up margin is D/4 whole seconds); on rxe the first
# completions come only after the first queue's worth has gone through, so `-D 1` at depth
# 128 x 64 KiB counts 0.74 s of the link's work in 1 s (23.0 against 30.5 MiB/s on the
# virtual bed; -D 4 or -t 16: 30.5 and 30.0). -D 4 compares like with like: perftest's
# margin excludes the fill; rdmabench's whole window runs from its first post to its last
# completion (all it posted). -u 20 on both: rxe retransmits spuriously at 14.
metric write_bw_64K_D4_MiBps "ib_write_bw -s 65536 -D 4 -u 20" "write bw -s 64K -D 4 -u 20" 4 "bw_mib_per_s"
metric write_rate_64B_Mpps  "ib_write_bw -s 64 -n 20000"    "write bw -s 64 -n 20000"  5 "msg_rate_mpps"
metric read_rate_64B_Mpps   "ib_read_bw -s 64 -n 20000"     "read bw -s 64 -n 20000"   5 "msg_rate_mpps"
# The same with rdmabench stamping as perftest does, with the TSC (see the latency rows'
# _tsc below): on a host whose kernel does not vouch for the TSC, each of rdmabench's
# stamps (one a post, one a poll that reaps) is a clock_gettime, which costs at 64 B.
metric write_rate_64B_Mpps_tsc "ib_write_bw -s 64 -n 20000" "write bw -s 64 -n 20000 --clock tsc" 5 "msg_rate_mpps"
metric read_rate_64B_Mpps_tsc  "ib_read_bw -s 64 -n 20000"  "read bw -s 64 -n 20000 --clock tsc"  5 "msg_rate_mpps"
nw=
fi
metric write_lat_2B_p50_us  "ib_write_lat -F -s 2 -n 2000"  "write lat -s 2 -n 2000 $nw"   5 "lat_ns['p50']/1000"
metric read_lat_2B_p50_us   "ib_read_lat -F -s 2 -n 2000"   "read lat -s 2 -n 2000 $nw"    5 "lat_ns['p50']/1000"
# perftest stamps with the TSC whatever the kernel thinks of it; rdmabench does only where
# the CPU and the kernel vouch for it (elsewhere, e.g. in the test bed, each stamp is a
# clock_gettime that can cost a microsecond). These two rows use the same tick source as
# perftest, so that they compare the instruments' own cost.
metric write_lat_2B_p50_us_tsc "ib_write_lat -F -s 2 -n 2000" "write lat -s 2 -n 2000 --clock tsc $nw" 5 "lat_ns['p50']/1000"
metric read_lat_2B_p50_us_tsc  "ib_read_lat -F -s 2 -n 2000"  "read lat -s 2 -n 2000 --clock tsc $nw"  5 "lat_ns['p50']/1000"
if [ -n "${PARITY_SSH:-}" ]; then
  srv_stop rb-server
  [ "$KEEP" = 0 ] || srv "cat $(_q "$SRV_DIR/rb-server.log")" < /dev/null > "$OUT/server.log" 2>&1
else
  kill $SPID 2>/dev/null
fi
echo
python3 - "$OUT" "${PARITY_TARGET:-}" <<'PY' | tee "$OUT/parity.txt"
import random, statistics, sys, os
d = sys.argv[1]
# The rounds are paired (the two tools run back to back, order alternating), so the
# ratio of each round cancels the emulator's drift between rounds; its median is the
# headline. The ratio of the two medians is printed beside it.
goals = {  # metric kind: (goal, is met by ratio)
    "bw": (">= 0.95", lambda x: x >= 0.95),
    "rate": (">= 1.00", lambda x: x >= 1.00),
    "lat": ("<= 1.05", lambda x: x <= 1.05),
}
if sys.argv[2]:  # PARITY_TARGET: one goal for every metric
    t = float(sys.argv[2])
    goals = {"bw": (f">= {t:.2f}", lambda x: x >= t), "rate": (f">= {t:.2f}", lambda x: x >= t),
             "lat": (f"<= {1 / t:.2f}", lambda x: x <= 1 / t)}
tsv = open(os.path.join(d, "parity.tsv"), "w")
tsv.write("metric\tperftest_median\trdmabench_median\tmedian_of_ratios\tci_low\tci_high\tratio_of_medians\tgoal\tverdict\trounds\n")
def ci(xs, n=4000):
    """95% bootstrap interval of the median of xs (rounds resampled with replacement)."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]
def num(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if v > 0 and v == v and v != float("inf") else None
print(f"{'metric':26} {'perftest':>10} {'rdmabench':>10} {'median of':>10} {'95% interval':>14} {'ratio of':>9}  goal")
print(f"{'':26} {'median':>10} {'median':>10} {'ratios':>10} {'(bootstrap)':>14} {'medians':>9}")
for name in ["write_bw_64K_MiBps", "read_bw_64K_MiBps", "write_bw_64K_D4_MiBps", "write_rate_64B_Mpps", "read_rate_64B_Mpps",
             "write_rate_64B_Mpps_tsc", "read_rate_64B_Mpps_tsc",
             "write_lat_2B_p50_us", "read_lat_2B_p50_us", "write_lat_2B_p50_us_tsc", "read_lat_2B_p50_us_tsc"]:
    try:
        ps = open(os.path.join(d, name + ".p")).read().split("\n")
        rs = open(os.path.join(d, name + ".r")).read().split("\n")
    except OSError:
        continue  # not among the metrics asked for
    pairs = [(p, r) for p, r in ((num(p), num(r)) for p, r in zip(ps, rs)) if p and r]
    if not pairs:
        print(f"{name:22} no complete round")
        tsv.write(f"{name}\t\t\t\t\t\t\t\tno complete round\t0\n"); continue
    mp, mr = statistics.median(p for p, _ in pairs), statistics.median(r for _, r in pairs)
    ratios = [r / p for p, r in pairs]
    ratio = statistics.median(ratios)
    lo, hi = ci(ratios)
    goal, met = goals[name.split("_")[1]]
    # The verdict needs the whole 95% interval on one side of the goal; where it
    # straddles the goal, the noise does not allow one.
    verdict = "ok" if met(lo) and met(hi) else "SHORT" if not met(lo) and not met(hi) else "cannot tell"
    if len(pairs) < 5:  # a bootstrap of fewer rounds is no interval at all
        verdict = "cannot tell: fewer than 5 rounds"
    print(f"{name:26} {mp:10.6g} {mr:10.6g} {ratio:10.3f} [{lo:5.3f}, {hi:5.3f}] {mr/mp:9.3f}  {goal} {verdict} ({len(pairs)} rounds)")
    tsv.write(f"{name}\t{mp:.6g}\t{mr:.6g}\t{ratio:.4f}\t{lo:.4f}\t{hi:.4f}\t{mr/mp:.4f}\t{goal}\t{verdict}\t{len(pairs)}\n")
PY
[ -s "$OUT/rb.err" ] && { echo "rdmabench errors:"; cat "$OUT/rb.err"; }
[ -s "$OUT/pt.err" ] && { echo "perftest errors:"; cat "$OUT/pt.err"; }
[ "$KEEP" = 1 ] || rm -rf "$OUT"
