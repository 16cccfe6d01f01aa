#!/bin/bash
# test/e2e/run.sh: run the e2e tests on a real verbs device.
#   - RDMABENCH_E2E_DEV (and RDMABENCH_E2E_IP, the IPv4 address of its netdev) set, or
#     this host has an ACTIVE RDMA device with an IPv4 GID: directly on this host, server
#     and client on that device (loopback; RDMABENCH_E2E_CLI_DEV adds a second device);
#   - otherwise in the Soft-RoCE test bed: one boot, two rxe devices on a veth pair,
#     tested in loopback (rxe0 <-> rxe0) and as two hosts (rxe1 -> rxe0), after a
#     check of the no-device path before Soft-RoCE is set up; on the bed's real clock,
#     then what holds a quiet NIC's bounds on its virtual clock (below).
# Expects bin/rdmabench and bin/e2e.test (make e2e builds them).
# test/e2e/run.sh [REGEXP] runs only the tests REGEXP matches (go test -run).
set -euo pipefail
cd "$(dirname "$0")/../.."
export RDMABENCH_BIN=$PWD/bin/rdmabench
T=$PWD/bin/e2e.test
[ -x "$RDMABENCH_BIN" ] && [ -x "$T" ] || { echo "e2e: build first (make e2e)" >&2; exit 2; }
# A host with an RDMA device of its own: use the first whose GID on port 1, as rdmabench
# (and perftest) would pick it (`rdmabench devices --gid`), is an IPv4 address.
if [ -z "${RDMABENCH_E2E_DEV:-}" ] && [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  for d in /sys/class/infiniband/*; do
    read -r dev _ _ gid _ < <("$RDMABENCH_BIN" devices --gid -d "${d##*/}" 2>/dev/null) || continue
    if [[ $gid != *:* ]]; then RDMABENCH_E2E_DEV=$dev RDMABENCH_E2E_IP=$gid; break; fi
  done
  [ -n "${RDMABENCH_E2E_DEV:-}" ] && echo "e2e: on this host's $RDMABENCH_E2E_DEV ($RDMABENCH_E2E_IP)"
fi
if [ -n "${RDMABENCH_E2E_DEV:-}" ]; then
  export E2E_SRV_DEV=$RDMABENCH_E2E_DEV E2E_SRV_IP=${RDMABENCH_E2E_IP:?set RDMABENCH_E2E_IP too} E2E_CLI_DEV=${RDMABENCH_E2E_CLI_DEV:-}
  exec "$T" -test.v -test.count=1 -test.timeout=15m ${1:+-test.run "$1"}
fi
# Two boots: the real clock (two vCPUs) for every test but VIRTUAL, then the virtual
# clock (instruction-counted time, one vCPU) for VIRTUAL: the tests whose bounds are a
# quiet NIC's there. The virtual bed has one vCPU, so a WRITE ping-pong, whose two sides
# both spin, waits for the guest's scheduler tick each way (a one-way p50 of 4 ms): what
# needs two spinning processes stays on the real clock. With REGEXP, each boot runs the
# tests it matches of its own.
VIRTUAL='^(TestClocksAgree|TestSweepStreamsAndResumes)$'
log=$(mktemp)
trap 'rm -f "$log"' EXIT
env VM_CLOCK=real VM_TIMEOUT=${VM_TIMEOUT:-1200} test/rxevm/run test/e2e/guest.sh "${1:-}" "$VIRTUAL" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
env VM_CLOCK=virtual VM_TIMEOUT=${VM_TIMEOUT:-1200} test/rxevm/run test/e2e/guest.sh "$VIRTUAL" "" "${1:-}" 2>&1 | tee -a "$log"
r2=${PIPESTATUS[0]}
[ "$rc" != 0 ] || rc=$r2
echo "e2e: $(grep -c -- '--- PASS' "$log") passed, $(grep -c -- '--- FAIL' "$log") failed, $(grep -c -- '--- SKIP' "$log") skipped (exit $rc)"
exit "$rc"
