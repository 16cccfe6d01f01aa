# Runs inside the test bed (test/rxevm/run), cwd = the repository.
. "$VM_TOOL_DIR/guest-lib.sh"
export RDMABENCH_BIN=$PWD/bin/rdmabench
echo "=== e2e: no RDMA device yet"
E2E_NO_DEVICE=1 ./bin/e2e.test -test.v -test.count=1 -test.run 'TestNoDevice' || exit 1
rxe_setup_pair || { echo "e2e: Soft-RoCE setup failed"; exit 1; }
echo "=== e2e: Soft-RoCE rxe0 (vethA, $SRV_IP) and rxe1 (vethB), loopback and two-device shapes"
export E2E_SRV_DEV=rxe0 E2E_CLI_DEV=rxe1 E2E_SRV_IP=$SRV_IP
./bin/e2e.test -test.v -test.count=1 -test.timeout=15m ${1:+-test.run "$1"}
