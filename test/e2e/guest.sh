# Runs inside the test bed (test/rxevm/run), cwd = the repository.
. "$VM_TOOL_DIR/guest-lib.sh"
export RDMABENCH_BIN=$PWD/bin/rdmabench
# guest.sh [RUN [SKIP [ALSO]]]: go test's -run and -skip expressions (empty: all, none);
# ALSO, a second -run expression the tests must match too (empty: none).
RUN=${1:-} SKIP=${2:-} ALSO=${3:-}
NODEV=1
[ -z "$RUN" ] || [[ TestNoDevice =~ $RUN ]] || NODEV=0
[ -z "$ALSO" ] || [[ TestNoDevice =~ $ALSO ]] || NODEV=0
if [ $NODEV = 1 ]; then
  echo "=== e2e: no RDMA device yet"
  E2E_NO_DEVICE=1 ./bin/e2e.test -test.v -test.count=1 -test.run 'TestNoDevice' || exit 1
fi
rxe_setup_pair || { echo "e2e: Soft-RoCE setup failed"; exit 1; }
echo "=== e2e: Soft-RoCE rxe0 (vethA, $SRV_IP) and rxe1 (vethB), loopback and two-device shapes"
export E2E_SRV_DEV=rxe0 E2E_CLI_DEV=rxe1 E2E_SRV_IP=$SRV_IP
echo "=== e2e: $(grep -o 'rdmabench.clock=[a-z]*' /proc/cmdline), $(nproc) CPUs${RUN:+, -run $RUN}${SKIP:+, -skip $SKIP}"
if [ -n "$ALSO" ]; then  # the tests of RUN that ALSO matches: those of RUN it does not, skipped
  ALL=$(./bin/e2e.test -test.list "${RUN:-.}")
  KEEP=$(grep -E "$ALSO" <<< "$ALL" | paste -sd'|')
  [ -n "$KEEP" ] || { echo "=== e2e: no test of $RUN matches $ALSO"; exit 0; }
  RUN="^($KEEP)\$"
fi
./bin/e2e.test -test.v -test.count=1 -test.timeout=15m ${RUN:+-test.run "$RUN"} ${SKIP:+-test.skip "$SKIP"}
