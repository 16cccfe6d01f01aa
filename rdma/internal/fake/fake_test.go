package fake

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/verbs"
)

// pair is a client session connected to a server session whose buffer allows remote
// WRITE and READ, and a registered local buffer on the client.
func pair(t *testing.T, depth int) (*Fabric, provider.Session, provider.Session, provider.Memory) {
	t.Helper()
	f := New()
	cd, sd := f.Device("c"), f.Device("s")
	srv, err := sd.NewSession(verbs.Spec{NumQP: 1, SQDepth: 1, BufSize: 4096, RemoteWrite: true, RemoteRead: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := cd.NewSession(verbs.Spec{NumQP: 1, SQDepth: depth, BufSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Connect(cli.Local(), 0); err != nil {
		t.Fatal(err)
	}
	if err := cli.Connect(srv.Local(), 0); err != nil {
		t.Fatal(err)
	}
	mem, err := cd.Register(4096, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	return f, cli, srv, mem
}

func write(cli provider.Session, mem provider.Memory, srv provider.Session, i int, id uint64, off uint64, n uint32, sig bool) {
	w := verbs.WR{WRID: id, LAddr: mem.Addr() + off, LKey: mem.LKey(), Len: n, RAddr: srv.Local().Addr + off, RKey: srv.Local().RKey}
	if sig {
		w.Flags = verbs.WRSignaled
	}
	cli.WRs()[i] = w
}

func TestSendQueueBoundAndRetire(t *testing.T) {
	f, cli, srv, mem := pair(t, 4)
	for i := range 4 {
		write(cli, mem, srv, i, uint64(i), 0, 8, i == 3)
	}
	if n, err := cli.Post(0, 4); n != 4 || err != nil {
		t.Fatalf("post: %d, %v", n, err)
	}
	write(cli, mem, srv, 0, 4, 0, 8, true)
	if n, err := cli.Post(0, 1); n != 0 || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("post into a full queue: %d, %v; want ENOMEM", n, err)
	}
	// The one completion retires all four WRs.
	if n, _ := cli.Poll(); n != 1 || cli.WCs()[0].WRID != 3 || cli.WCs()[0].Status != verbs.WCSuccess {
		t.Fatalf("poll: %d %+v", n, cli.WCs()[0])
	}
	if n, err := cli.Post(0, 1); n != 1 || err != nil {
		t.Fatalf("post after the completion: %d, %v", n, err)
	}
	if v := f.Violations(); len(v) != 0 {
		t.Fatal(v)
	}
}

func TestUnsignalledOnlyIsAViolation(t *testing.T) {
	f, cli, srv, mem := pair(t, 2)
	write(cli, mem, srv, 0, 0, 0, 8, false)
	write(cli, mem, srv, 1, 1, 0, 8, false)
	cli.Post(0, 2)
	if v := f.Violations(); len(v) != 1 {
		t.Fatalf("violations %v, want one", v)
	}
}

func TestBytesMove(t *testing.T) {
	_, cli, srv, mem := pair(t, 4)
	copy(mem.Bytes(), "abcdefgh")
	write(cli, mem, srv, 0, 1, 0, 8, true)
	cli.Post(0, 1)
	if string(srv.Bytes()[:8]) != "abcdefgh" {
		t.Fatalf("WRITE: the server holds %q", srv.Bytes()[:8])
	}
	cli.Poll()
	write(cli, mem, srv, 0, 2, 0, 8, true)
	cli.WRs()[0].Opcode = verbs.WRRead
	cli.WRs()[0].LAddr += 100
	cli.Post(0, 1)
	if string(mem.Bytes()[100:108]) != "abcdefgh" {
		t.Fatalf("READ: %q", mem.Bytes()[100:108])
	}
}

func TestErrorsFlushTheQP(t *testing.T) {
	f, cli, srv, mem := pair(t, 8)
	f.FailNth(2, verbs.WCRetryExcErr)
	for i := range 4 {
		write(cli, mem, srv, i, uint64(i), 0, 8, i == 3)
	}
	cli.Post(0, 4)
	n, _ := cli.Poll()
	wcs := cli.WCs()[:n]
	// WR 1 fails (unsignalled, it completes all the same), 2 and 3 are flushed.
	want := []struct {
		id     uint64
		status uint32
	}{{1, verbs.WCRetryExcErr}, {2, verbs.WCWRFlushErr}, {3, verbs.WCWRFlushErr}}
	if len(wcs) != len(want) {
		t.Fatalf("completions %+v", wcs)
	}
	for i, w := range want {
		if wcs[i].WRID != w.id || wcs[i].Status != w.status {
			t.Fatalf("completion %d: %+v, want %+v", i, wcs[i], w)
		}
	}
	if wcs[0].VendorErr != VendorErr {
		t.Fatalf("vendor error 0x%x", wcs[0].VendorErr)
	}
}

func TestAccessChecked(t *testing.T) {
	f := New()
	cd, sd := f.Device("c"), f.Device("s")
	srv, _ := sd.NewSession(verbs.Spec{NumQP: 1, SQDepth: 1, BufSize: 64, RemoteRead: true}) // no remote write
	cli, _ := cd.NewSession(verbs.Spec{NumQP: 1, SQDepth: 4, BufSize: 1})
	srv.Connect(cli.Local(), 0)
	cli.Connect(srv.Local(), 0)
	mem, _ := cd.Register(64, verbs.AccessLocalWrite)
	foreign, _ := sd.Register(64, verbs.AccessLocalWrite)
	write(cli, mem, srv, 0, 1, 0, 8, true)
	cli.Post(0, 1)
	if n, _ := cli.Poll(); n != 1 || cli.WCs()[0].Status != verbs.WCRemAccessErr {
		t.Fatalf("WRITE without remote write access: %+v", cli.WCs()[0])
	}
	cli2, _ := cd.NewSession(verbs.Spec{NumQP: 1, SQDepth: 4, BufSize: 1})
	cli2.Connect(srv.Local(), 0)
	write(cli2, foreign, srv, 0, 1, 0, 8, true)
	cli2.WRs()[0].Opcode = verbs.WRRead
	cli2.Post(0, 1)
	if n, _ := cli2.Poll(); n != 1 || cli2.WCs()[0].Status != verbs.WCLocProtErr {
		t.Fatalf("local memory of another device: %+v", cli2.WCs()[0])
	}
}

func TestHoldRelease(t *testing.T) {
	f, cli, srv, mem := pair(t, 4)
	f.Hold()
	copy(mem.Bytes(), "x")
	write(cli, mem, srv, 0, 1, 0, 1, true)
	cli.Post(0, 1)
	if n, _ := cli.Poll(); n != 0 || srv.Bytes()[0] != 0 {
		t.Fatal("a held fabric moved bytes or completed a WR")
	}
	f.Release()
	if n, _ := cli.Poll(); n != 1 || srv.Bytes()[0] != 'x' {
		t.Fatal("Release did not execute the stalled WR")
	}
}

// Fail moves a QP to the error state: its stalled WRs, signalled or not, and any posted
// later complete flushed, each with a completion, and move no bytes.
func TestFailFlushes(t *testing.T) {
	f, cli, srv, mem := pair(t, 8)
	copy(mem.Bytes(), "abc")
	write(cli, mem, srv, 0, 1, 0, 1, true)
	cli.Post(0, 1)
	f.Hold()
	write(cli, mem, srv, 0, 2, 1, 1, false)
	write(cli, mem, srv, 1, 3, 2, 1, true)
	cli.Post(0, 2)
	if err := cli.Fail(0); err != nil {
		t.Fatal(err)
	}
	write(cli, mem, srv, 0, 4, 0, 1, false)
	cli.Post(0, 1)
	f.Release()
	n, _ := cli.Poll()
	wcs := cli.WCs()[:n]
	want := []struct {
		id     uint64
		status uint32
	}{{1, verbs.WCSuccess}, {2, verbs.WCWRFlushErr}, {3, verbs.WCWRFlushErr}, {4, verbs.WCWRFlushErr}}
	if len(wcs) != len(want) {
		t.Fatalf("completions %+v", wcs)
	}
	for i, w := range want {
		if wcs[i].WRID != w.id || wcs[i].Status != w.status {
			t.Fatalf("completion %d: %+v, want %+v", i, wcs[i], w)
		}
	}
	if string(srv.Bytes()[:3]) != "a\x00\x00" {
		t.Fatalf("flushed WRs moved bytes: %q", srv.Bytes()[:3])
	}
}

// A WR of length 0 names no memory and succeeds (a zero-length WRITE).
func TestZeroLength(t *testing.T) {
	f, cli, srv, mem := pair(t, 4)
	write(cli, mem, srv, 0, 1, 0, 8, false)
	cli.WRs()[1] = verbs.WR{WRID: 2, RAddr: srv.Local().Addr, RKey: srv.Local().RKey, Flags: verbs.WRSignaled}
	if n, err := cli.Post(0, 2); n != 2 || err != nil {
		t.Fatalf("post: %d, %v", n, err)
	}
	if n, _ := cli.Poll(); n != 1 || cli.WCs()[0].WRID != 2 || cli.WCs()[0].Status != verbs.WCSuccess {
		t.Fatalf("poll: %d %+v", n, cli.WCs()[0])
	}
	if v := f.Violations(); len(v) != 0 {
		t.Fatal(v)
	}
}
