package bench_test

import (
	"context"
	"io"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// gidEngine is the fake engine with a GID table: its devices pick a connection's GID
// from its local address as verbs does (verbs.GIDForAddr), loopback addresses standing
// for a netdev's.
type gidEngine struct{ *benchtest.Engine }

var gidPort = verbs.PortInfo{Port: 1, LinkLayer: "Ethernet", GIDs: []verbs.GIDEntry{
	{Index: 0, GID: "fe80::1", Type: "RoCE v2", Netdev: "lo"},
	{Index: 1, GID: "127.0.0.1", Type: "RoCE v2", Netdev: "lo"},
	{Index: 2, GID: "127.0.0.2", Type: "RoCE v2", Netdev: "lo"},
	{Index: 3, GID: "127.0.0.3", Type: "RoCE v2", Netdev: "lo"},
}}

func (e gidEngine) Open(l bench.Local) (bench.Device, error) {
	d, err := e.Engine.Open(l)
	if err != nil {
		return nil, err
	}
	return gidDevice{d}, nil
}

type gidDevice struct{ bench.Device }

func (gidDevice) GIDFor(local net.IP) (verbs.GIDEntry, string) {
	return verbs.GIDForAddr("fake", gidPort, local, gidPort.GIDs[1])
}

func listen(t *testing.T, addr string, sv *bench.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String()
}

func dialFrom(t *testing.T, from, to string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", to)
	if err != nil {
		t.Skipf("cannot dial %s from %s: %v", to, from, err)
	}
	return nc
}

// Each side runs each connection on the GID of its control connection's local address:
// the server on the address the client reached (per connection, not once at start),
// the client on its own end; the hellos, the results and the sessions say so.
func TestEachConnectionRunsOnTheGIDOfItsAddress(t *testing.T) {
	f := benchtest.NewFabric()
	srv := &benchtest.Engine{Fabric: f, Name: "fake1"}
	sv := &bench.Server{Engine: gidEngine{srv}, Ops: ops.All, MaxBuffer: 1 << 30, Timeout: 2 * time.Second, Log: log.New(io.Discard, "", 0)}
	if err := sv.Open(); err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	addr := listen(t, "0.0.0.0", sv)
	_, port, _ := net.SplitHostPort(addr)
	cli := &benchtest.Engine{Fabric: f, Name: "fake0"}
	for _, c := range []struct {
		from, to           string
		client, server     int
		clientNote, svNote string
	}{
		{"127.0.0.1", "127.0.0.3", 1, 3, "", ""},
		{"127.0.0.2", "127.0.0.3", 2, 3, "", ""},
		{"127.0.0.3", "127.0.0.2", 3, 2, "", ""},
		{"127.0.0.9", "127.0.0.1", 1, 1, "no RoCE v2 GID of fake port 1 holds 127.0.0.9", ""},
	} {
		before := len(srv.Sessions())
		dev, _ := gidEngine{cli}.Open(bench.Local{})
		cl, err := bench.NewClient(dialFrom(t, c.from, net.JoinHostPort(c.to, port)), dev, c.to, "", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.Run(context.Background(), write.Op, result.Config{Test: result.BW, Iterations: 20, MsgSizeBytes: 64})
		cl.Close()
		if err != nil {
			t.Fatalf("%s -> %s: %v", c.from, c.to, err)
		}
		if r.Client.GIDIndex != c.client || r.ServerDevice.GIDIndex != c.server {
			t.Errorf("%s -> %s: client GID %d, server GID %d; want %d and %d", c.from, c.to, r.Client.GIDIndex, r.ServerDevice.GIDIndex, c.client, c.server)
		}
		if r.ServerDevice.GID != c.to {
			t.Errorf("%s -> %s: the server's GID is %q, want the address reached", c.from, c.to, r.ServerDevice.GID)
		}
		if (c.clientNote == "") != (r.Client.GIDNote == "") || !strings.Contains(r.Client.GIDNote, c.clientNote) {
			t.Errorf("%s -> %s: client's GID note %q, want %q", c.from, c.to, r.Client.GIDNote, c.clientNote)
		}
		ss := srv.Sessions()[before:]
		if len(ss) != 1 || len(ss[0].Spec.GIDs) != 1 || ss[0].Spec.GIDs[0].Index != c.server {
			t.Errorf("%s -> %s: the server's session did not run on GID %d: %+v", c.from, c.to, c.server, ss)
		}
	}
}

// A fan's QP to each server runs on the GID of that server's connection.
func TestFanQPsRunOnTheirConnectionsGIDs(t *testing.T) {
	f := benchtest.NewFabric()
	var addrs []string
	var ncs []net.Conn
	for i, from := range []string{"127.0.0.2", "127.0.0.3"} {
		e := &benchtest.Engine{Fabric: f, Name: "fake" + string(rune('1'+i))}
		sv := &bench.Server{Engine: e, Ops: ops.All, MaxBuffer: 1 << 30, Timeout: 2 * time.Second, Log: log.New(io.Discard, "", 0)}
		if err := sv.Open(); err != nil {
			t.Fatal(err)
		}
		defer sv.Close()
		a := listen(t, "127.0.0.1", sv)
		addrs = append(addrs, a)
		ncs = append(ncs, dialFrom(t, from, a))
	}
	cli := &benchtest.Engine{Fabric: f, Name: "fake0"}
	dev, _ := gidEngine{cli}.Open(bench.Local{})
	fan, err := bench.NewFan(ncs, dev, addrs, "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer fan.Close()
	if _, err := fan.Run(context.Background(), write.Op, result.Config{Test: result.BW, Iterations: 20, MsgSizeBytes: 64, Sync: "stream"}); err != nil {
		t.Fatal(err)
	}
	ss := cli.Sessions()
	if len(ss) != 1 || len(ss[0].Spec.GIDs) != 2 || ss[0].Spec.GIDs[0].Index != 2 || ss[0].Spec.GIDs[1].Index != 3 {
		t.Fatalf("want QP 0 on GID 2 and QP 1 on GID 3, got %+v", ss)
	}
}
