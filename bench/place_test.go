package bench_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/result"
)

func nicOn(node int, cpus string) result.Device {
	return result.Device{HostFacts: &host.Facts{NUMANode: &node, LocalCPUs: cpus}}
}

// Where the loops run: --cpu as given (each CPU one this process may use), else the
// NIC's node's CPUs that it may use, else nowhere in particular; the buffer on the
// NIC's node whenever it is known.
func TestPlace(t *testing.T) {
	allowed := []int{0, 1, 2, 3, 8, 9}
	for _, c := range []struct {
		name, list string
		dev        result.Device
		cpus       []int
		node       int // -1: none
		how, err   string
	}{
		{name: "nothing known", how: bench.PinNone, node: -1},
		{name: "node -1", dev: nicOn(-1, "0-3"), how: bench.PinNone, node: -1},
		{name: "the NIC's node", dev: nicOn(1, "8-11"), cpus: []int{8, 9}, node: 1, how: bench.PinNICNode},
		{name: "a node of none of ours", dev: nicOn(1, "12-15"), node: 1, how: bench.PinNone},
		{name: "--cpu", list: "1,3", dev: nicOn(1, "8-11"), cpus: []int{1, 3}, node: 1, how: bench.PinCPUList},
		{name: "--cpu, node unknown", list: "2", cpus: []int{2}, node: -1, how: bench.PinCPUList},
		{name: "--cpu outside", list: "1,5", err: "CPU 5 is not one this process may run on"},
		{name: "--cpu garbage", list: "x", err: "--cpu"},
	} {
		p, err := bench.Place(c.list, c.dev, allowed)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
			}
			continue
		}
		node := -1
		if p.MemNode != nil {
			node = *p.MemNode
		}
		if err != nil || !reflect.DeepEqual(p.CPUs, c.cpus) || node != c.node || p.How != c.how {
			t.Errorf("%s: %+v node %d, %v; want CPUs %v node %d %s", c.name, p, node, err, c.cpus, c.node, c.how)
		}
	}
}

// --threads: the result says what each loop thread drove and moved, and the shares add
// up; --cpu is where they ran, kept on the client (the server never sees it).
func TestPipeThreads(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	cfg := result.Config{Op: "write", Test: result.BW, Verify: true, Iterations: 200, MsgSizeBytes: 4096, NumQPs: 5, Threads: 2, CPUList: "0"}
	res, err := run(t, c, cfg)
	if err != nil || res.Error != "" {
		t.Fatalf("%v (%s)", err, res.Error)
	}
	th := res.Threads
	if th == nil || len(th.Threads) != 2 || th.Pinning != bench.PinCPUList {
		t.Fatalf("threads %+v", th)
	}
	var msgs uint64
	var share float64
	for i, x := range th.Threads {
		msgs += x.Messages
		share += x.Share
		if x.CPUs != "0" {
			t.Errorf("thread %d pinned to %q, want 0 (one CPU for two threads: shared)", i, x.CPUs)
		}
	}
	if want := [][]int{{0, 1, 2}, {3, 4}}; !reflect.DeepEqual([][]int{th.Threads[0].QPs, th.Threads[1].QPs}, want) {
		t.Errorf("QPs %v %v, want %v", th.Threads[0].QPs, th.Threads[1].QPs, want)
	}
	if msgs != res.Iterations || msgs != 1000 || share < 0.999 || share > 1.001 {
		t.Errorf("threads moved %d (shares %.3f), the run %d", msgs, share, res.Iterations)
	}
	if res.Verify == nil || !res.Verify.OK {
		t.Errorf("verify %+v", res.Verify)
	}
	res.Clock = "tsc" // the fake's "fake" is no clock the schema knows
	if err := result.Validate(mustJSON(t, res)); err != nil {
		t.Errorf("schema: %v", err)
	}
	for _, s := range r.Server.Sessions() {
		if s.Spec.Threads != 2 || s.Spec.CPUs != nil {
			t.Errorf("server session: threads %d, CPUs %v (the client's --cpu)", s.Spec.Threads, s.Spec.CPUs)
		}
	}
	for _, bad := range []result.Config{
		{Op: "write", Test: result.BW, NumQPs: 1, Threads: 2},
		{Op: "write", Test: result.Lat, Threads: 2},
		{Op: "write", Test: result.BW, NumQPs: 2, Threads: 2, CompletionEvents: true},
	} {
		if res, err := run(t, c, bad); err == nil {
			t.Errorf("%+v accepted: %+v", bad, res.Threads)
		}
	}
}

// A device whose NUMA node is known places every run, whatever its loop: the rounds,
// the registration loop and the latency loops say so in a result the schema takes
// (a run of one loop thread is one thread).
func TestPlacedRunsValidate(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	dev, err := factsEngine{r.Client, "../host/testdata/cx6-gen3", "mlx5_0"}.Open(bench.Local{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := bench.NewClient(r.DialConn(), dev, "fake-server:18600", "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096, MR: "per-io", CQMod: 1},
		{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096},
		{Op: "read", Test: result.Lat, Iterations: 100},
		{Op: "write", Test: result.Lat, Iterations: 100, CPUList: "0"},
	} {
		res, err := run(t, c, cfg)
		if err != nil || res.Error != "" {
			t.Fatalf("%+v: %v (%s)", cfg, err, res.Error)
		}
		th := res.Threads
		if th == nil || len(th.Threads) != 1 || th.MemoryNode == nil || *th.MemoryNode != 1 || th.Threads[0].Messages != res.Iterations {
			t.Errorf("%s %s mr %q: threads %+v", cfg.Op, cfg.Test, cfg.MR, th)
		}
		res.Clock = "tsc"
		if err := result.Validate(mustJSON(t, res)); err != nil {
			t.Errorf("%s %s mr %q: %v", cfg.Op, cfg.Test, cfg.MR, err)
		}
	}
}
