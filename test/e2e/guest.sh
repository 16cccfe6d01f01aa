# Runs inside the test bed (test/rxevm/run), cwd = the repository.
. "$VM_TOOL_DIR/guest-lib.sh"
export RDMABENCH_BIN=$PWD/bin/rdmabench
# guest.sh [RUN [SKIP]]: go test's -run and -skip expressions (empty: all, none).
RUN=${1:-} SKIP=${2:-}
if [ -z "$RUN" ] || [[ TestNoDevice =~ $RUN ]]; then
  echo "=== e2e: no RDMA device yet"
  E2E_NO_DEVICE=1 ./bin/e2e.test -test.v -test.count=1 -test.run 'TestNoDevice' || exit 1
fi
rxe_setup_pair || { echo "e2e: Soft-RoCE setup failed"; exit 1; }
echo "=== e2e: Soft-RoCE rxe0 (vethA, $SRV_IP) and rxe1 (vethB), loopback and two-device shapes"
export E2E_SRV_DEV=rxe0 E2E_CLI_DEV=rxe1 E2E_SRV_IP=$SRV_IP
echo "=== e2e: $(grep -o 'rdmabench.clock=[a-z]*' /proc/cmdline), $(nproc) CPUs${RUN:+, -run $RUN}${SKIP:+, -skip $SKIP}"
./bin/e2e.test -test.v -test.count=1 -test.timeout=15m ${RUN:+-test.run "$RUN"} ${SKIP:+-test.skip "$SKIP"}
