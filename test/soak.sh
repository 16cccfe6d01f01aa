#!/bin/bash
# test/soak.sh [CLIENTS] [GARBAGE]: one rdmabench server on Soft-RoCE, CLIENTS (200)
# sequential clients cycling through the four tests, and GARBAGE (20) connections at a
# time hammering the port with junk all along. At the end the server must hold the fds
# it held after start-up and `rdma resource show` must count what it counted then; every
# client must have succeeded. Runs in the test bed (`make soak`); traffic stays on the
# bed's own addresses.
set -u
CLIENTS=${1:-200} GARBAGE=${2:-20}
. "$VM_TOOL_DIR/guest-lib.sh"
rxe_setup_pair || { echo "soak: Soft-RoCE setup failed"; exit 1; }
B=$PWD/bin/rdmabench
T=$(mktemp -d)
$B server -d "$SRV_DEV" --bind "$SRV_IP" -p 18690 --timeout 5s 2> "$T/server.log" &
SPID=$!
for i in $(seq 100); do (exec 3<>"/dev/tcp/$SRV_IP/18690") 2>/dev/null && break; sleep 0.1; done
sleep 0.5
fds() { ls /proc/$SPID/fd | wc -l; }
res() { rdma resource show | sed 's/^[0-9]*: //'; }
base_fds=$(fds) base_res=$(res)
echo "soak: server $SPID: $base_fds fds; resources: $(echo $base_res)"
junk=$(printf 'GET / HTTP/1.0\r\n\r\n\x00\xffRDMB\x00\x02\x7f\xff\xff\xff')
for g in $(seq "$GARBAGE"); do
  ( n=0
    while [ ! -e "$T/stop" ] && [ $n -lt 100000 ]; do
      { exec 3<>"/dev/tcp/$SRV_IP/18690"; } 2>/dev/null && { printf '%s' "$junk" >&3 2>/dev/null; exec 3>&-; }
      n=$((n + 1)); sleep 0.02
    done; echo $n > "$T/g$g" ) &
done
start=$(date +%s) fails=0
for i in $(seq "$CLIENTS"); do
  case $((i % 4)) in
    0) a="write bw -s 4K -n 200" ;; 1) a="read bw -s 4K -n 200" ;;
    2) a="write lat -n 200" ;; 3) a="read lat -n 200" ;;
  esac
  if ! $B $a -d "$CLI_DEV" -p 18690 "$SRV_IP" --json /dev/null > "$T/c.out" 2>&1; then
    fails=$((fails + 1)); echo "soak: client $i ($a) failed:"; tail -3 "$T/c.out"
  fi
done
touch "$T/stop"; wait $(jobs -p | grep -v "^$SPID$") 2>/dev/null
sleep 1
garbage=$(cat "$T"/g* | awk '{s += $1} END {print s}')
end_fds=$(fds) end_res=$(res)
echo "soak: $CLIENTS clients ($fails failed) and $garbage garbage connections in $(( $(date +%s) - start )) s"
echo "soak: server fds $base_fds -> $end_fds; resources: $(echo $end_res)"
kill $SPID; wait $SPID 2>/dev/null
rc=0
[ "$fails" = 0 ] || { echo "soak: FAIL: $fails clients failed"; rc=1; }
[ "$base_fds" = "$end_fds" ] || { echo "soak: FAIL: the server's fds went from $base_fds to $end_fds"; rc=1; }
[ "$base_res" = "$end_res" ] || { echo "soak: FAIL: RDMA resources changed:"; echo "$base_res"; echo "$end_res"; rc=1; }
[ $rc = 0 ] && echo "soak: PASS"
rm -rf "$T"
exit $rc
