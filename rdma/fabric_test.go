package rdma

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// gidPort is a RoCE port with an address on two netdevs; a connection whose control
// connection leaves from neither runs on GID 1, the one chosen without an address.
var gidPort = verbs.PortInfo{Port: 1, LinkLayer: "Ethernet", GIDs: []verbs.GIDEntry{
	{Index: 0, GID: "fe80::1", Type: "RoCE v2", Netdev: "eth0"},
	{Index: 1, GID: "10.0.0.1", Type: "RoCE v2", Netdev: "eth0"},
	{Index: 2, GID: "127.0.0.1", Type: "RoCE v2", Netdev: "lo"},
}}

// gidProv is a loopback device with gidPort's GID table: it picks a connection's GID
// from its control connection's local address as verbs does (verbs.GIDForAddr), and
// keeps the specs of its sessions and the access flags of its registrations.
type gidProv struct {
	provider.Provider
	mu     sync.Mutex
	specs  []verbs.Spec
	access []int
}

func (p *gidProv) GIDFor(local net.IP) (verbs.GIDEntry, string) {
	return verbs.GIDForAddr("loop0", gidPort, local, gidPort.GIDs[1])
}

func (p *gidProv) NewSession(s verbs.Spec) (provider.Session, error) {
	p.mu.Lock()
	p.specs = append(p.specs, s)
	p.mu.Unlock()
	return p.Provider.NewSession(s)
}

func (p *gidProv) Register(size, access int) (provider.Memory, error) {
	p.mu.Lock()
	p.access = append(p.access, access)
	p.mu.Unlock()
	return p.Provider.Register(size, access)
}

func (p *gidProv) last() (verbs.Spec, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.specs[len(p.specs)-1], p.access[len(p.access)-1]
}

// A dialled connection runs as rdmabench's clients do: on the GID of its control
// connection's local address, with relaxed ordering on the pools and in the plan
// (unless DisablePCIeRelaxed), and with Config's service level and traffic class in
// its own spec and the plan; its hello names the GID.
func TestDialAppliesTheGIDRelaxedOrderingSLAndTrafficClass(t *testing.T) {
	lo := NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	gp := &gidProv{Provider: lo.Device().p}
	dev := newDevice(gp)
	defer dev.Close()
	pool, err := dev.NewPool(4096, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.Dial(bg, addr, Config{Size: 4096, QPs: 2, SL: 3, TrafficClass: 96})
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := pool.Get()
	if err := c.Write(bg, buf, 0).Wait(bg); err != nil {
		t.Fatal(err)
	}
	c.Close()
	spec, access := gp.last()
	if len(spec.GIDs) != 1 || spec.GIDs[0] != gidPort.GIDs[2] {
		t.Errorf("a connection from 127.0.0.1 ran on GIDs %+v, want index 2 (127.0.0.1's)", spec.GIDs)
	}
	if !spec.RelaxedOrdering || spec.SL != 3 || spec.TrafficClass != 96 || access != verbs.AccessLocalWrite|verbs.AccessRelaxedOrdering {
		t.Errorf("spec relaxed %v, SL %d, traffic class %d; pool registered with %s", spec.RelaxedOrdering, spec.SL, spec.TrafficClass, verbs.AccessString(access))
	}

	// What the server is told, over TCP from 127.0.0.1, and then over a pipe, which
	// has no address: the GID without one, and why.
	var hello oob.Hello
	var plan result.Config
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	told := func(c *oob.Conn, h *oob.Hello, p *result.Config) { hello, plan = *h, *p; c.SendError(net.ErrClosed) }
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			fakeServe(t, nc, told)
		}
	}()
	dev.Dial(bg, ln.Addr().String(), Config{Size: 64, SL: 5, TrafficClass: 104})
	if g := hello.Device; g.GIDIndex != 2 || g.GID != "127.0.0.1" || g.GIDNote != "" {
		t.Errorf("the hello names GID %d (%s, note %q), want 2 (127.0.0.1)", g.GIDIndex, g.GID, g.GIDNote)
	}
	if !plan.PCIeRelaxedOrdering || plan.SL != 5 || plan.TrafficClass != 104 {
		t.Errorf("plan %+v: want relaxed ordering, SL 5 and traffic class 104", plan)
	}
	dev.DisablePCIeRelaxed()
	dev.Dial(bg, "pipe", Config{Size: 64, Dial: func(context.Context, string) (net.Conn, error) {
		a, b := net.Pipe()
		go fakeServe(t, b, told)
		return a, nil
	}})
	if g := hello.Device; g.GIDIndex != 1 || !strings.Contains(g.GIDNote, "local address is unknown") {
		t.Errorf("over a pipe the hello names GID %d (note %q), want 1 and why", g.GIDIndex, g.GIDNote)
	}
	if plan.PCIeRelaxedOrdering {
		t.Errorf("after DisablePCIeRelaxed the plan asks for relaxed ordering: %+v", plan)
	}
	if _, err := dev.NewPool(64, 1); err != nil {
		t.Fatal(err)
	}
	if _, access := gp.last(); access != verbs.AccessLocalWrite {
		t.Errorf("after DisablePCIeRelaxed a pool is registered with %s", verbs.AccessString(access))
	}
}
