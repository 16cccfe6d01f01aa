#!/bin/bash
# test/soak.sh [CLIENTS] [GARBAGE]: one rdmabench server on Soft-RoCE, CLIENTS (200)
# sequential clients cycling through the four tests, and GARBAGE (20) garbage
# connections open at a time all along. At the end the server must hold the fds
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
# GARBAGE connections open at any time: each sends junk, waits for the server to answer
# or close, and is replaced after a pause (one small process, so that the bed's two
# CPUs stay with the clients and the server).
python3 - "$SRV_IP" 18690 "$GARBAGE" "$T/stop" > "$T/garbage" 2>&1 <<'PY' &
import os, socket, sys, time
host, port, n, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
junk = [b"GET / HTTP/1.0\r\n\r\n", b"\xff" * 64, b"RDMB\x00\x03\x7f\xff\xff\xff", b"RDMB\x00\x03\x00\x00\x00\x10{\"type\":\"error\"}"]
count, k = 0, 0
while not os.path.exists(stop) and count < 100000:
    socks = []
    for i in range(n):
        try:
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(junk[k % len(junk)]); k += 1
            socks.append(s)
        except OSError:
            pass
    for s in socks:
        try:
            s.settimeout(6); s.recv(4096)
        except OSError:
            pass
        s.close(); count += 1
    time.sleep(0.5)
print(count)
PY
GPID=$!
start=$(date +%s) fails=0
for i in $(seq "$CLIENTS"); do
  case $((i % 4)) in
    0) a="write bw -s 4K -n 200" ;; 1) a="read bw -s 4K -n 200" ;;
    2) a="write lat -n 200" ;; 3) a="read lat -n 200" ;;
  esac
  if ! $B $a -d "$CLI_DEV" -p 18690 "$SRV_IP" --json /dev/null > "$T/c.out" 2>&1; then
    fails=$((fails + 1)); echo "soak: client $i ($a) failed:"; tail -3 "$T/c.out"
    echo "soak: the server's last words:"; grep -v 'handshake' "$T/server.log" | tail -4
  fi
done
touch "$T/stop"; wait $GPID
sleep 1
garbage=$(tail -1 "$T/garbage")
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
