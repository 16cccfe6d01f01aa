#!/bin/bash
# test/bed-noise.sh [ROUNDS]: how noisy and how slow the Soft-RoCE test bed is on this host,
# the figures the README's sweep section and the demo's resolution rest on. In one boot:
#   - perftest `ib_write_bw -s 65536 -D 3` with the veths' receive on one CPU (RPS, as the
#     bed sets it up) and on the sending CPU (the kernel's default), alternating;
#   - `rdmabench write bw -u 20` at 16 KiB and 64 KiB for 0.4, 1 and 2 s, each ROUNDS times,
#     alternating: per configuration the mean MB/s, the standard deviation of log
#     throughput (one run's noise) and the wall time of a run, setup included.
# Run it with `make bed-noise` (ROUNDS=8 by default). A benchmark: it prints, it does not judge.
set -uo pipefail
ROUNDS=${1:-8}
if [ -z "${RXE_VM:-}" ]; then
  cd "$(dirname "$0")/.."
  exec test/rxevm/run test/bed-noise.sh "$ROUNDS"
fi
. "$VM_TOOL_DIR/guest-lib.sh"
rxe_setup_pair || { echo "bed-noise: Soft-RoCE setup failed"; exit 1; }
B=$PWD/bin/rdmabench
rps() { local d; for d in vethA vethB; do echo "$1" > "/sys/class/net/$d/queues/rx-0/rps_cpus"; done; }
for ((r = 1; r <= ROUNDS && r <= 4; r++)); do
  for m in 1 0; do
    rps "$m"
    if pt ib_write_bw -s 65536 -D 3 2>/dev/null; then
      echo "perftest rps=$m $(awk '$1 == 65536 {print $4}' "$PT_DIR/pt-cli.log")"
    fi
  done
done
rps 1
$B server -d "$SRV_DEV" --bind "$SRV_IP" -p 18690 2> /tmp/bed-noise-server.log &
wait_listen 18690 15 $! || { echo "bed-noise: the server did not listen"; exit 1; }
for ((r = 1; r <= ROUNDS; r++)); do
  for d in 0.4 1 2; do
    for s in 16K 64K; do
      t0=$(date +%s%N)
      $B write bw -d "$CLI_DEV" -p 18690 "$SRV_IP" -s $s -D $d -u 20 --json /tmp/bed-noise.json > /dev/null 2>&1 || continue
      t1=$(date +%s%N)
      bw=$(sed -n 's/^  "bw_gbit_per_s": \([0-9.e+-]*\),*$/\1/p' /tmp/bed-noise.json)
      echo "rdmabench s=$s D=$d $bw $(( (t1 - t0) / 1000000 ))"
    done
  done
done | tee /tmp/bed-noise.txt >/dev/null
echo "perftest ib_write_bw -s 65536 -D 3 (MB/s above: rps=1 one receiving CPU, rps=0 the sender's)"
awk '{ k = $2 " " $3; n[k]++; x = log($4 * 125); s[k] += x; ss[k] += x * x; w[k] += $5; m[k] += $4 * 125 }
  END { printf "%-22s %5s %8s %10s %8s\n", "rdmabench write bw -u 20", "runs", "MB/s", "sd(log)", "wall s"
    for (k in n) { v = n[k] > 1 ? (ss[k] - s[k] * s[k] / n[k]) / (n[k] - 1) : 0
      printf "%-22s %5d %8.1f %10.3f %8.2f\n", k, n[k], m[k] / n[k], sqrt(v > 0 ? v : 0), w[k] / n[k] / 1000 } }' /tmp/bed-noise.txt | sort
