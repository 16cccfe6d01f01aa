#!/bin/bash
# test/hw-check.sh: `make hw-check`, the one command a user with two RDMA hosts runs first.
# Run it on the client host; it reaches the server host through SSH, starts what it needs
# there (rdmabench's server, perftest's servers for parity), every process bounded by
# `timeout` and ended on exit. It checks, each check with a verdict line
#   hw-check: doctor client mlx5_0 ............ PASS (12 ok, 3 skipped) [4 s of 180]
# (PASS, WARN or FAIL, why, and the time it took against its bound):
#   doctor server, doctor client     rdmabench doctor on both hosts (the client's against the server)
#   counters write, counters read    a 3-second 64 KiB run each: NIC counters read on both
#                                    sides, agreeing with the traffic, no error counter moving
#   parity METRIC (8 lines)          test/parity.sh against perftest on the same link:
#                                    bandwidth and message rate timed, -D PARITY_S seconds
#                                    (2) in both tools after the same 1 s warm-up; the goal
#                                    for every metric PARITY_GOAL (0.97: rdmabench/perftest
#                                    >= 0.97 for bandwidth and rate, <= 1/0.97 = 1.03 for
#                                    latency, a margin of 3%), judged on the whole 95%
#                                    interval of the rounds' ratios
#   sweep write, sweep read          a short rdmabench sweep (SWEEP_BUDGET per operation)
#   report html                      the HTML report of the sweep and the counters runs
# and leaves one bundle, OUT and OUT.tar.gz, to send back: verdicts.txt, hw-check.log,
# doctor-*.json, counters-*.json, parity/ (table, rounds, logs), sweep.ndjson, tuned.*
# (the tuned report), report.html, server.log, hosts/{client,server}/ (host facts).
# Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 for a bad
# command line or a missing tool.
#
# Usage (environment; make hw-check passes its variables of the same names):
#   SERVER=host-a SERVER_DEV=mlx5_0 CLIENT_DEV=mlx5_0 test/hw-check.sh
#   SERVER       the server host's address for the test: its control connection, and the
#                address whose RoCE GID its device uses (a name or an IPv4 address)
#   SERVER_DEV, CLIENT_DEV   the RDMA device on each host
#   SERVER_IB_PORT, CLIENT_IB_PORT   the device's port on each host (-i for rdmabench and
#                perftest alike, and the port whose sysfs facts are kept; default 1)
#   SSH          the command prefix that runs a command line on the server host
#                (default: ssh -o BatchMode=yes $SERVER); "local": this host (the test bed)
#   OUT          the bundle's directory (default out/hw-check-DATE-TIME); must not exist
#   ROUNDS       parity rounds per tool and metric (default 5)
#   SWEEP_BUDGET the sweep's --budget per operation (default 60s)
#   SERVER_BIN   rdmabench on the server host (default: this host's bin/rdmabench, copied
#                there for the check and removed after)
#   SERVER_GID, CLIENT_GID   GID indexes (-x; default: rdmabench's choice, perftest's)
#   PORT         the rdmabench server's control port (default 18600). The other TCP ports
#                the server host listens on, fixed (open them in a firewall): 18650
#                (parity's rdmabench server) and 18701-18708 (perftest's servers, in turn,
#                a fresh one for each try)
#   PARITY_S, PARITY_GOAL   parity's timed runs in seconds (default 2) and its goal (0.97)
#   POST_API     rdmabench's --post-api in parity (default auto)
#   HW_CHECK_LIMIT  the most seconds the whole check runs (default 7200): the server
#                host's processes live no longer, and every check's bound is cut to it
#   test/hw-check.sh --bed   the same in the Soft-RoCE test bed: rxe0 (10.0.0.1) and rxe1
#                stand in for the two hosts (SSH=local); ROUNDS 3, SWEEP_BUDGET 40s; OUT
#                default out/hw-check-bed (replaced)
# The details, and how the bounds are derived: docs/testing.md#checking-real-hardware-make-hw-check.
set -uo pipefail

MODE=hw
case "${1:-}" in
  --bed) MODE=bed-host ;;
  --in-bed) MODE=bed-guest ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) echo "hw-check: unknown argument $1 (--bed, --help; the rest is environment: see --help)" >&2; exit 2 ;;
esac
[ -n "${RXE_VM:-}" ] || cd "$(dirname "$0")/.." || exit 2  # in the guest, cwd already is the repository

# tarball DIR: DIR.tar.gz beside DIR.
tarball() { tar -C "$(dirname "$1")" -czf "$1.tar.gz" "$(basename "$1")"; }

if [ $MODE = bed-host ]; then
  # The guest sees this host's root read-only; the bundle's directory is shared
  # read-write, and its tarball is made here, after the guest powered off.
  ROUNDS=${ROUNDS:-3} SWEEP_BUDGET=${SWEEP_BUDGET:-40s}
  OUT=${OUT:-out/hw-check-bed}
  # The last bed bundle is replaced; any other directory is left alone.
  if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ] && [ ! -e "$OUT/verdicts.tsv" ]; then
    echo "hw-check: $OUT exists and is not a hw-check bundle: give another OUT" >&2; exit 2
  fi
  rm -rf "$OUT" "$OUT.tar.gz" && mkdir -p "$OUT" || exit 2
  OUT=$(cd "$OUT" && pwd)
  VM_RW=$OUT VM_TIMEOUT=${VM_TIMEOUT:-1500} test/rxevm/run test/hw-check.sh --in-bed "$OUT" "$ROUNDS" "$SWEEP_BUDGET"
  rc=$?
  [ -s "$OUT/verdicts.txt" ] && tarball "$OUT" && echo "hw-check: bundle $OUT.tar.gz"
  exit $rc
fi

B=${RDMABENCH_BIN:-$PWD/bin/rdmabench}
# shellcheck source=remote-lib.sh source-path=SCRIPTDIR
. test/remote-lib.sh
if [ $MODE = bed-guest ]; then
  OUT=$2 ROUNDS=$3 SWEEP_BUDGET=$4
  # shellcheck source=rxevm/guest-lib.sh source-path=SCRIPTDIR
  . "$VM_TOOL_DIR/guest-lib.sh"
  # shellcheck disable=SC2119 # the default MTU
  RDMABENCH_BIN=$B rxe_setup_pair || { echo "hw-check: Soft-RoCE setup failed"; exit 1; }
  SERVER=$SRV_IP SERVER_DEV=$SRV_DEV CLIENT_DEV=$CLI_DEV SSH=local
else
  : "${SERVER:?hw-check: set SERVER (the server host), SERVER_DEV and CLIENT_DEV: test/hw-check.sh --help}"
  : "${SERVER_DEV:?hw-check: set SERVER_DEV, the RDMA device on the server host}"
  : "${CLIENT_DEV:?hw-check: set CLIENT_DEV, the RDMA device on this host}"
  SSH=${SSH:-ssh -o BatchMode=yes $SERVER}
  OUT=${OUT:-out/hw-check-$(date +%Y%m%d-%H%M%S)}
  if [ -e "$OUT" ]; then echo "hw-check: $OUT exists: give another OUT" >&2; exit 2; fi
  mkdir -p "$OUT" || exit 2
fi
ROUNDS=${ROUNDS:-5} SWEEP_BUDGET=${SWEEP_BUDGET:-60s} PORT=${PORT:-18600} POST_API=${POST_API:-auto}
SERVER_IB_PORT=${SERVER_IB_PORT:-1} CLIENT_IB_PORT=${CLIENT_IB_PORT:-1}
PARITY_S=${PARITY_S:-2} PARITY_GOAL=${PARITY_GOAL:-0.97}
HW_CHECK_LIMIT=${HW_CHECK_LIMIT:-7200}
for t in python3 timeout tar; do
  command -v $t > /dev/null || { echo "hw-check: $t is needed on this host" >&2; exit 2; }
done
[ -x "$B" ] || { echo "hw-check: no $B: run make build" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
xs=(-i "$SERVER_IB_PORT") xc=(-i "$CLIENT_IB_PORT")
[ -z "${SERVER_GID:-}" ] || xs+=(-x "$SERVER_GID")
[ -z "${CLIENT_GID:-}" ] || xc+=(-x "$CLIENT_GID")
# One token for this check: the server requires it (the file there), clients prove it.
RDMABENCH_TOKEN=$(head -c 24 /dev/urandom | base64)
export RDMABENCH_TOKEN
T0=$EPOCHSECONDS

# judge KIND ARGS...: the verdicts, from what each check wrote (python3: JSON).
# Prints "VERDICT<TAB>REASON" (parity: "METRIC<TAB>VERDICT<TAB>REASON" per line).
judge() {
  python3 - "$@" <<'PY'
import json, math, re, sys
kind, args = sys.argv[1], sys.argv[2:]
def out(*cells): print("\t".join(cells))
def load(f):
    try:
        return json.load(open(f))
    except (OSError, ValueError) as e:
        return None
if kind == "seconds":  # a Go duration (60s, 1m30s, 2m) in whole seconds
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3}
    parts = re.findall(r"([0-9.]+)(h|ms|m|s)", args[0])
    if not parts or "".join(a + b for a, b in parts) != args[0]:
        sys.exit(1)
    print(math.ceil(sum(float(a) * units[b] for a, b in parts)))
elif kind == "doctor":  # FILE RC
    d = load(args[0])
    if not isinstance(d, dict) or "checks" not in d:
        out("FAIL", f"doctor wrote no report (exit {args[1]})"); sys.exit()
    by = {v: [c for c in d["checks"] if c["verdict"] == v] for v in ("ok", "warn", "fail", "skip")}
    if by["fail"]:
        c = by["fail"][0]
        out("FAIL", f"failed: {', '.join(c['name'] for c in by['fail'])} ({c['name']}: {c['found'][:160]})")
    elif by["warn"]:
        out("WARN", f"{len(by['warn'])} warnings: {', '.join(c['name'] for c in by['warn'])}")
    else:
        out("PASS", f"{len(by['ok'])} ok, {len(by['skip'])} skipped")
elif kind == "counters":  # FILE RC: a bandwidth run's result, its counters on both sides
    r = load(args[0])
    if not isinstance(r, dict) or r.get("error") or not r.get("iterations_done"):
        why = (r or {}).get("error") if isinstance(r, dict) else None
        out("FAIL", f"the run failed (exit {args[1]}): {why or 'no result written'}"[:200]); sys.exit()
    c, flags = r.get("counters") or {}, r.get("counters_flags") or []
    notes = c.get("notes") or []
    bw = f"{r['bw_gbit_per_s']:.3g} Gb/s"
    missing = [s for s in ("local", "remote") if not c.get(s)]
    moved = [s for s in ("local", "remote") if c.get(s) and any(x.get("delta") for x in c[s].get("counters") or [])]
    sanity = [f for f in flags if f["class"] == "sanity"]
    # What taints: errors, and pause frames the data's sender received (taints: true);
    # congestion (CNPs, ECN marks) and other pauses are reported, not tainting.
    errs = [f for f in flags if f["class"] != "sanity" and f.get("taints")]
    pauses = [f for f in flags if f["class"] == "pause" and not f.get("taints")]
    congestion = [f for f in flags if f["class"] == "congestion"]
    def name(f):
        side = {"local": "client ", "remote": "server "}.get(f.get("side"), "")
        return f"{side}{f['counter']} +{f['delta']}" if f.get("delta") is not None else f"{side}{f['counter']} {f['status']}"
    compared = [n[len("sanity: "):] for n in notes if n.startswith("sanity: ")]
    if sanity:
        out("FAIL", f"{bw}; the counters disagree with the traffic: " + "; ".join(f"{f['counter']} off by {f['delta']}" for f in sanity))
    elif missing:
        why = "; ".join(notes) or "no counters"
        out("WARN", f"{bw}; no counters read on the {' and '.join('client' if s == 'local' else 'server' for s in missing)} side: {why}"[:240])
    elif errs:
        out("WARN", f"{bw}; TAINTED: " + ", ".join(name(f) for f in errs[:6]) + ("" if len(errs) <= 6 else f" and {len(errs) - 6} more"))
    elif pauses:
        out("WARN", f"{bw}; paused (flow-controlled, not tainting): " + ", ".join(name(f) for f in pauses[:6]))
    elif len(moved) < 2:
        out("WARN", f"{bw}; no counter moved on the {'client' if 'local' not in moved else 'server'} side")
    elif not compared:
        out("WARN", f"{bw}; clean, but no counter this NIC's profile knows was compared with the traffic")
    else:
        cong = "; congestion: " + ", ".join(name(f) for f in congestion[:4]) if congestion else ""
        out("PASS", f"{bw}; clean; " + "; ".join(compared) + cong)
elif kind == "calibrate":  # WALL_S FILE...: seconds a 2000 x 64 KiB run takes here, setup included
    est = []
    wall = float(args[0]) / max(len(args) - 1, 1)
    for f in args[1:]:
        r = load(f)
        if isinstance(r, dict) and r.get("bytes") and r.get("duration_ns"):
            s = r["duration_ns"] / 1e9
            est.append(max(wall - s, 0) + 2000 * 65536 / (r["bytes"] / s))
    if not est:
        sys.exit(1)
    print(math.ceil(max(est)))
elif kind == "parity":  # TSV
    try:
        rows = [l.rstrip("\n").split("\t") for l in open(args[0])][1:]
    except OSError:
        sys.exit(1)
    for m, pm, rm, ratio, lo, hi, rom, goal, verdict, n in rows:
        if not n or n == "0":
            out(m, "FAIL", verdict); continue
        what = f"rdmabench/perftest {float(ratio):.3f} [{float(lo):.3f}, {float(hi):.3f}], goal {goal}, {n} rounds"
        if verdict == "ok":
            out(m, "PASS", what)
        elif verdict == "SHORT":
            out(m, "FAIL", f"SHORT: {what}")
        else:
            out(m, "WARN", f"{verdict}: {what}")
elif kind == "sweep":  # FILE OP RC
    t = load(args[0])
    op = (t or {}).get("ops", {}).get(args[1]) if isinstance(t, dict) else None
    if not op:
        out("FAIL", f"no {args[1]} in the tuned report (sweep exit {args[2]})"); sys.exit()
    ch = op.get("chosen")
    if not ch or not ch.get("runs"):
        out("FAIL", f"nothing measured (sweep exit {args[2]})"); sys.exit()
    p = ch["point"]
    def size(b):
        return f"{b >> 20}M" if b >= 1 << 20 and b % (1 << 20) == 0 else f"{b >> 10}K" if b >= 1024 and b % 1024 == 0 else str(b)
    pt = f"{size(p['msg_size_bytes'])}/{p['sq_depth']}/{p['buf_offset_bytes']}/{p['cq_mod']}/{p['post_list']}"
    link = (t.get("client") or {}).get("rate_gbit_per_s") or 0
    bw = ch.get("bw_gbit_per_s") or 0
    frac = f", {100 * bw / link:.0f}% of the {link:g} Gb/s port" if link else ""
    res = op.get("resolution")
    dec = ("decided" if op.get("decided") else "undecided") + (f" at +-{100 * res:.0f}%" if res else "")
    what = f"chosen {pt} (size/depth/off/mod/pl): {bw:.3g} Gb/s{frac}; {op.get('runs', 0)} runs, {dec}"
    if op.get("interrupted"):
        out("WARN", f"interrupted; {what}")
    elif ch.get("runs_tainted", 0) * 2 > ch["runs"]:
        out("WARN", f"{ch['runs_tainted']} of its {ch['runs']} runs TAINTED; {what}")
    elif link and bw < 0.5 * link:
        out("WARN", f"below half the port's rate: {what}")
    else:
        out("PASS", what)
PY
}

# verdict CHECK VERDICT REASON START BOUND: the check's line, and its row in verdicts.tsv.
FAILED=0
verdict() {
  local took=$((EPOCHSECONDS - $4)) dots
  dots=$(printf '%*s' $((34 - ${#1})) '' | tr ' ' .)
  [ "$2" = FAIL ] && FAILED=1
  printf 'hw-check: %s %s %s (%s) [%s s of %s]\n' "$1" "$dots" "$2" "$3" "$took" "$5" | tee -a "$OUT/verdicts.txt"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$took" "$5" >> "$OUT/verdicts.tsv"
}

# bound S: S, cut to what is left of HW_CHECK_LIMIT (at least 1).
bound() { local left=$((T0 + HW_CHECK_LIMIT - EPOCHSECONDS)); echo $((left < $1 ? (left > 1 ? left : 1) : $1)); }

# The host facts: what each host says about itself, its NIC, its software and counters.
# sh -s BIN DEV DIR PORT on either host; every command is optional (a file says why not).
# shellcheck disable=SC2016 # expanded there
FACTS='B=$1 D=$2 O=$3 P=$4
mkdir -p "$O" && cd "$O" || exit 1
run() { f=$1; shift; timeout 30 "$@" > "$f" 2>&1 || echo "(exit $?: $*)" >> "$f"; }
run version.txt "$B" version
run devices.json "$B" devices --json
run gid.txt "$B" devices --gid -d "$D" -i "$P"
run counters-before.ndjson "$B" counters -d "$D" -i "$P" --json
run uname.txt uname -a
run os-release.txt cat /etc/os-release
run cmdline.txt cat /proc/cmdline
run lscpu.txt lscpu
run memlock.txt sh -c "ulimit -l; ulimit -Hl"
run ibv_devinfo.txt ibv_devinfo -v -d "$D"
run rdma-link.txt rdma link show
run ip-addr.txt ip -d addr show
run perftest.txt ib_write_bw --version
S=/sys/class/infiniband/$D
for f in $S/fw_ver $S/hca_type $S/board_id $S/node_guid $S/ports/$P/rate $S/ports/$P/state $S/ports/$P/link_layer \
  $S/device/vendor $S/device/device $S/device/numa_node $S/device/local_cpulist \
  $S/device/current_link_speed $S/device/current_link_width $S/device/max_link_speed $S/device/max_link_width; do
  [ -r "$f" ] && echo "$f: $(cat "$f" 2>/dev/null)"
done > sysfs.txt
cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null | sort | uniq -c > governors.txt
pci=$(basename "$(readlink -f "$S/device")")
case $pci in *:*) run lspci.txt lspci -vv -s "$pci" ;; esac
nd=$(rdma link show "$D/$P" 2>/dev/null | sed -n "s/.* netdev \([^ ]*\).*/\1/p")
[ -z "$nd" ] || { run ethtool-i.txt ethtool -i "$nd"; run ethtool.txt ethtool "$nd"; run ethtool-S.txt ethtool -S "$nd"; }
exit 0'

facts() { # WHEN: before or after
  if [ "$1" = before ]; then
    printf '%s\n' "$FACTS" | sh -s -- "$B" "$CLIENT_DEV" "$OUT/hosts/client" "$CLIENT_IB_PORT" > /dev/null 2>&1
    printf '%s\n' "$FACTS" | SRV_TIMEOUT=$(bound 300) srv "sh -s -- $(_q "$SRV_BIN" "$SERVER_DEV" "$SRV_DIR/facts" "$SERVER_IB_PORT")" > /dev/null 2>&1
  else
    timeout 30 "$B" counters -d "$CLIENT_DEV" -i "$CLIENT_IB_PORT" --json > "$OUT/hosts/client/counters-after.ndjson" 2>&1
    srv "$(_q "$SRV_BIN") counters -d $(_q "$SERVER_DEV") -i $(_q "$SERVER_IB_PORT") --json > $(_q "$SRV_DIR/facts/counters-after.ndjson") 2>&1" < /dev/null
    mkdir -p "$OUT/hosts/server"
    srv "cd $(_q "$SRV_DIR/facts") && tar -cf - ." < /dev/null | tar -xf - -C "$OUT/hosts/server"
  fi
}

# shellcheck disable=SC2317 # the EXIT trap's
cleanup() {
  trap '' PIPE INT TERM
  if [ -n "$SRV_DIR" ]; then
    srv "cat $(_q "$SRV_DIR/rb-server.log")" < /dev/null > "$OUT/server.log" 2>&1
    srv_cleanup
  fi
}

check_doctor_server() {
  local t=$EPOCHSECONDS b rc v
  b=$(bound 120)  # doctor without a server reads sysfs and opens the device: seconds
  SRV_TIMEOUT=$b srv "$(_q "$SRV_BIN" doctor -d "$SERVER_DEV" "${xs[@]}" --json)" < /dev/null > "$OUT/doctor-server.json" 2> "$OUT/doctor-server.err"
  rc=$?
  v=$(judge doctor "$OUT/doctor-server.json" $rc)
  verdict "doctor server $SERVER_DEV" "${v%%$'\t'*}" "${v#*$'\t'}" "$t" "$b"
}

check_doctor_client() {
  local t=$EPOCHSECONDS b rc v
  # doctor's --timeout (10 s) bounds the connection and each handshake step, and its two
  # runs of 100 messages take well under a second on a link that works: 180 s in all.
  b=$(bound 180)
  timeout -k 5 "$b" "$B" doctor -d "$CLIENT_DEV" "${xc[@]}" -p "$PORT" --json "$SERVER" > "$OUT/doctor-client.json" 2> "$OUT/doctor-client.err"
  rc=$?
  v=$(judge doctor "$OUT/doctor-client.json" $rc)
  verdict "doctor client $CLIENT_DEV" "${v%%$'\t'*}" "${v#*$'\t'}" "$t" "$b"
}

# check_counters OP: a 3 s bandwidth run, NIC counters read on both sides around it. Its
# wall time and what it moved set the later checks' bounds (RUN_BOUND).
COUNTERS_S=3 WALL=0
check_counters() {
  local t=$EPOCHSECONDS b rc v t1
  b=$(bound $((COUNTERS_S + 4 * 30 + 60)))  # the run, rdmabench's --timeout (30 s) per handshake step, the device
  timeout -k 5 "$b" "$B" "$1" bw -d "$CLIENT_DEV" "${xc[@]}" -p "$PORT" "$SERVER" -s 64K -D $COUNTERS_S --counters all \
    --json "$OUT/counters-$1.json" --format plain > "$OUT/counters-$1.txt" 2>&1
  rc=$?
  t1=$EPOCHSECONDS
  WALL=$((WALL + t1 - t))
  v=$(judge counters "$OUT/counters-$1.json" $rc)
  verdict "counters $1" "${v%%$'\t'*}" "${v#*$'\t'}" "$t" "$b"
}

check_parity() {
  local t=$EPOCHSECONDS b rc m v miss=''
  mkdir -p "$OUT/parity"
  for v in ib_write_bw ib_read_bw ib_write_lat ib_read_lat; do
    command -v $v > /dev/null || miss="$miss $v"
  done
  [ -n "$miss" ] && { verdict parity FAIL "perftest is not installed here (missing:$miss): apt install perftest" "$t" 0; return; }
  if ! srv "command -v ib_write_bw ib_read_bw ib_write_lat ib_read_lat" < /dev/null > /dev/null 2>&1; then
    verdict parity FAIL "perftest is not installed on the server host: apt install perftest" "$t" 0; return
  fi
  # Every run of either tool is bounded by RUN_BOUND, each perftest run tried up to 3
  # times: 8 metrics x ROUNDS x (3 + 1) runs at most, and a calibration run for each of
  # the 4 timed metrics (its warm-up).
  b=$(bound $(((8 * ROUNDS * 4 + 4) * RUN_BOUND + 120)))
  PARITY_SSH=$SSH PARITY_DEV=$SERVER_DEV PARITY_CLI_DEV=$CLIENT_DEV PARITY_IP=$SERVER PARITY_SRV_BIN=$SRV_BIN \
    PARITY_SRV_GID=${SERVER_GID:-} PARITY_CLI_GID=${CLIENT_GID:-} PARITY_TARGET=$PARITY_GOAL PARITY_OUT=$OUT/parity \
    PARITY_SRV_IB_PORT=$SERVER_IB_PORT PARITY_CLI_IB_PORT=$CLIENT_IB_PORT PARITY_DURATION=$PARITY_S PARITY_MARGIN=1 \
    PT_TIMEOUT=$RUN_BOUND RDMABENCH_BIN=$B timeout -k 10 "$b" bash test/parity.sh "$ROUNDS" . "$POST_API" 2>&1 | tee "$OUT/parity/parity.log"
  rc=${PIPESTATUS[0]}
  if ! judge parity "$OUT/parity/parity.tsv" > "$OUT/parity/verdicts.tsv"; then
    verdict parity FAIL "parity wrote no table (exit $rc): see parity/parity.log" "$t" "$b"; return
  fi
  while IFS=$'\t' read -r m v r; do
    verdict "parity $m" "$v" "$r" "$t" "$b"
  done < "$OUT/parity/verdicts.tsv"
}

check_sweep() {
  local t=$EPOCHSECONDS b rc op v s
  s=$(judge seconds "$SWEEP_BUDGET") || { verdict sweep FAIL "SWEEP_BUDGET $SWEEP_BUDGET is not a duration (60s, 2m)" "$t" 0; return; }
  # The sweep keeps to its budget per operation (no run starts once it is spent); the
  # run under way then, and the set-up, each take at most RUN_BOUND.
  b=$(bound $((2 * (s + 2 * RUN_BOUND) + 60)))
  timeout -k 10 "$b" "$B" sweep -d "$CLIENT_DEV" "${xc[@]}" -p "$PORT" "$SERVER" --ops write,read --budget "$SWEEP_BUDGET" \
    --records "$OUT/sweep.ndjson" --json "$OUT/tuned.json" --csv "$OUT/tuned.csv" --format table > "$OUT/tuned.txt"
  rc=$?
  cat "$OUT/tuned.txt"
  for op in write read; do
    v=$(judge sweep "$OUT/tuned.json" $op $rc)
    verdict "sweep $op" "${v%%$'\t'*}" "${v#*$'\t'}" "$t" "$b"
  done
}

check_report() {
  local t=$EPOCHSECONDS b f in=()
  for f in sweep.ndjson tuned.json counters-write.json counters-read.json; do
    [ -s "$OUT/$f" ] && in+=("$OUT/$f")
  done
  b=$(bound 120)
  if [ ${#in[@]} = 0 ]; then
    verdict "report html" FAIL "no results to draw" "$t" "$b"
  elif timeout -k 5 "$b" "$B" report html "${in[@]}" -o "$OUT/report.html" --title "hw-check: $(hostname) $CLIENT_DEV -> $SERVER $SERVER_DEV" > "$OUT/report-html.log" 2>&1; then
    verdict "report html" PASS "report.html of ${#in[@]} inputs, $(wc -c < "$OUT/report.html") bytes" "$t" "$b"
  else
    verdict "report html" FAIL "$(tail -1 "$OUT/report-html.log")" "$t" "$b"
  fi
}

main() {
  local t
  echo "# hw-check: client $(hostname) $CLIENT_DEV -> server $SERVER $SERVER_DEV through '$SSH'; $($B version 2>&1 | head -1); bundle $OUT"
  t=$EPOCHSECONDS
  if ! srv_init "$SSH"; then
    verdict "server host" FAIL "'$SSH' did not run a command there (keys, BatchMode, the host's name?)" "$t" "$SRV_TIMEOUT"
    return 1
  fi
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  if [ -n "${SERVER_BIN:-}" ]; then
    SRV_BIN=$SERVER_BIN
  else  # the same binary on both hosts: this one, copied there
    SRV_BIN=$SRV_DIR/rdmabench
    SRV_TIMEOUT=$(bound 300) srv "cat > $(_q "$SRV_BIN") && chmod 700 $(_q "$SRV_BIN")" < "$B"
  fi
  if ! srv "$(_q "$SRV_BIN") version" < /dev/null > /dev/null 2>&1; then
    verdict "server host" FAIL "$SRV_BIN does not run there: $(srv "$(_q "$SRV_BIN") version" < /dev/null 2>&1 | tail -1); set SERVER_BIN to an rdmabench built there" "$t" "$SRV_TIMEOUT"
    return 1
  fi
  printf '%s\n' "$RDMABENCH_TOKEN" | srv_put token
  facts before
  check_doctor_server
  t=$EPOCHSECONDS
  srv_bg rb-server "$(bound "$HW_CHECK_LIMIT")" "$SRV_BIN" server -d "$SERVER_DEV" "${xs[@]}" -p "$PORT" --token-file "$SRV_DIR/token"
  if ! srv_listening "$PORT" 30 rb-server; then  # it listens within a second where it can
    verdict "rdmabench server" FAIL "it ended, or did not listen on port $PORT within 30 s: $(srv "tail -1 $(_q "$SRV_DIR/rb-server.log")" < /dev/null)" "$t" 30
    facts after
    return 1
  fi
  check_doctor_client
  check_counters write
  check_counters read
  # RUN_BOUND: ten times what the two runs above say a 2000 x 64 KiB run takes here, set-up
  # included (parity's longest runs), at least 30 s; 120 s (perftest's default bound in
  # guest-lib.sh) when they measured nothing.
  RUN_BOUND=$(judge calibrate "$WALL" "$OUT/counters-write.json" "$OUT/counters-read.json") && RUN_BOUND=$((RUN_BOUND * 10))
  [ -n "$RUN_BOUND" ] && [ "$RUN_BOUND" -gt 0 ] 2>/dev/null || RUN_BOUND=120
  [ "$RUN_BOUND" -ge $((PARITY_S + 30)) ] || RUN_BOUND=$((PARITY_S + 30))  # parity's timed runs: PARITY_S + 2 s, and set-up
  echo "# runs bounded at $RUN_BOUND s each (ten times what the counters runs measured)"
  check_parity
  check_sweep
  check_report
  facts after
}

echo "# hw-check started $(date -u +%FT%TZ)" > "$OUT/verdicts.txt"
: > "$OUT/verdicts.tsv"
# The log is everything printed; tee ignores Ctrl-C, so the cleanup's lines reach it.
( main; exit $((FAILED || $?)) ) 2>&1 | ( trap '' INT; exec tee "$OUT/hw-check.log" )
rc=${PIPESTATUS[0]}
[ "$rc" != 0 ] || ! grep -q $'\tFAIL\t' "$OUT/verdicts.tsv" || rc=1
n=$(grep -c . "$OUT/verdicts.tsv")
echo "hw-check: $n checks, $(grep -c $'\tFAIL\t' "$OUT/verdicts.tsv") failed, $(grep -c $'\tWARN\t' "$OUT/verdicts.tsv") warnings, $((EPOCHSECONDS - T0)) s" | tee -a "$OUT/verdicts.txt" "$OUT/hw-check.log"
if [ $MODE = hw ]; then
  tarball "$OUT" && echo "hw-check: bundle $OUT.tar.gz: send it back (docs/testing.md: Checking real hardware)"
fi
exit "$rc"
