package bench_test

// Host facts (package host) in results: each side's come with its device's identity, and
// the servers' cross the wire in their hellos.

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/result"
)

// factsEngine opens its engine's devices with host facts read from a fixture tree, as
// verbs' Identity reads them from "/".
type factsEngine struct {
	bench.Engine
	root, dev string
}

func (e factsEngine) Open(l bench.Local) (bench.Device, error) {
	d, err := e.Engine.Open(l)
	if err != nil {
		return nil, err
	}
	return factsDevice{d, host.Read(e.root, e.dev)}, nil
}

type factsDevice struct {
	bench.Device
	facts host.Facts
}

func (d factsDevice) Identity() result.Device {
	id := d.Device.Identity()
	f := d.facts
	id.HostFacts = &f
	return id
}

func withFacts(root, dev string) func(*bench.Server) {
	return func(sv *bench.Server) { sv.Engine = factsEngine{sv.Engine, root, dev} }
}

func TestResultsCarryBothHostsFacts(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, withFacts("../host/testdata/bnxt_re", "bnxt_re0"))
	dev, err := factsEngine{r.Client, "../host/testdata/cx6-gen3", "mlx5_0"}.Open(bench.Local{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := bench.NewClient(r.DialConn(), dev, "fake-server:18600", "", 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096},
		{Op: "read", Test: result.Lat, Iterations: 100},
	} {
		res, err := run(t, c, cfg)
		if err != nil {
			t.Fatalf("%s %s: %v", cfg.Op, cfg.Test, err)
		}
		cf, sf := res.Client.HostFacts, res.ServerDevice.HostFacts
		if cf == nil || sf == nil {
			t.Fatalf("%s %s: host facts: client %v, server %v", cfg.Op, cfg.Test, cf, sf)
		}
		if cf.Device != "mlx5_0" || cf.PCIeLink.Generation != 3 || sf.Device != "bnxt_re0" || sf.PCIeLink.Generation != 5 ||
			sf.NUMANode == nil || *sf.NUMANode != 0 || sf.RDMACoreVersion != "48.0" {
			t.Errorf("%s %s: client %+v, server %+v", cfg.Op, cfg.Test, *cf, *sf)
		}
	}
}

// A fan's servers each say theirs, in its peer's device; the result's server device is
// the first's.
func TestFanPeersCarryTheirHostsFacts(t *testing.T) {
	fixtures := []struct{ root, dev string }{{"../host/testdata/bnxt_re", "bnxt_re0"}, {"../host/testdata/irdma", "irdma0"}}
	n := 0 // NewRigs configures the servers in order
	rs := benchtest.NewRigs(t, len(fixtures), ops.All, func(sv *bench.Server) {
		withFacts(fixtures[n].root, fixtures[n].dev)(sv)
		n++
	})
	dev, err := factsEngine{rs[0].Client, "../host/testdata/cx6-gen3", "mlx5_0"}.Open(bench.Local{})
	if err != nil {
		t.Fatal(err)
	}
	var ncs []net.Conn
	var addrs []string
	for i, r := range rs {
		ncs, addrs = append(ncs, r.DialConn()), append(addrs, fmt.Sprintf("fake-server-%d:18600", i+1))
	}
	f, err := bench.NewFan(ncs, dev, addrs, "", 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	res, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10, MsgSizeBytes: 4096})
	if err != nil || res.Fan == nil || len(res.Fan.Peers) != len(fixtures) {
		t.Fatalf("run: %v, fan %+v", err, res.Fan)
	}
	if f := res.Client.HostFacts; f == nil || f.Device != "mlx5_0" {
		t.Errorf("client facts %+v", f)
	}
	if f := res.ServerDevice.HostFacts; f == nil || f.Device != "bnxt_re0" {
		t.Errorf("server facts %+v", f)
	}
	for i, p := range res.Fan.Peers {
		if f := p.Device.HostFacts; f == nil || f.Device != fixtures[i].dev {
			t.Errorf("peer %d facts %+v", i, f)
		}
	}
}
