package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob/perftest"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// PerftestServer serves plain perftest clients (ib_write_bw, ib_read_bw, ib_write_lat,
// ib_read_lat HOST) on perftest's port, one at a time, as a perftest server does.
//
// perftest 6.06's client does not say which test it runs: the server tells from the
// exchange itself (perftest.Server, the exchange's state machine, says how). This side
// holds the resources: the QPs the exchange asks for, the buffer it asks about, the
// socket and its deadlines.
//
// ib_write_lat's server sends first and must know the message size: LatSize
// (perftest's -s; its default 2 B). It plays as many rounds as the client answers.
// The bandwidth tests and read_lat leave the server passive: it logs the client's
// report, its own counters do not apply.
type PerftestServer struct {
	Engine    Engine
	Local     Local
	Timeout   time.Duration // each exchange; the silence a loop tolerates
	MaxTest   time.Duration // how long a client's run may take
	MaxBuffer int64         // bytes of buffer for all of a client's QPs
	LatSize   int           // ib_write_lat's -s (default 2)
	Log       *log.Logger
	// What perftest's server takes on its command line and never exchanges: its own
	// MRs' relaxed ordering (on unless DisablePCIeRelaxed, perftest's
	// --disable_pcie_relaxed), and its QPs' service level (-S) and traffic class
	// (--tclass) at RTR. ib_write_lat's server turns relaxed ordering off itself; this
	// one registers before it can tell a write_lat client, so it keeps the setting and
	// says so in its log.
	DisablePCIeRelaxed bool
	SL, TrafficClass   int
}

// perftestRegion is each QP's buffer: what perftest -a's largest message needs.
const perftestRegion = 8 << 20

// Serve accepts perftest clients on l until ctx ends.
func (ps *PerftestServer) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer l.Close()
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			ps.Log.Printf("perftest port: %v", err) // e.g. out of file descriptors: try again
			if !sleepCtx(ctx, time.Second) {
				return nil
			}
			continue
		}
		from := nc.RemoteAddr().String()
		what, err := ps.serve(ctx, nc)
		if err != nil {
			ps.Log.Printf("perftest client %s: %s: %v", from, what, err) // text: local (errors are cleaned where peer bytes enter them)
			continue
		}
		ps.Log.Printf("perftest client %s: %s", from, what) // text: local
	}
}

type ptQP struct {
	s         Session
	mine, rem perftest.Dest
}

// serve runs one client's conversation and says what it was.
func (ps *PerftestServer) serve(ctx context.Context, nc net.Conn) (what string, err error) {
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	pc := &perftest.Conn{NC: nc, Timeout: ps.Timeout, Ctx: ctx}
	dev, err := ps.Engine.Open(ps.Local)
	if err != nil {
		return "setup", err
	}
	defer dev.Close()
	dev = bindGID(dev, nc.LocalAddr()) // the GID of the address the client reached
	me := dev.Identity()
	gid := me.LinkLayer == "Ethernet" || ps.Local.GIDIndex >= 0
	w := perftestWire{pc: pc, gid: gid}
	if err := w.setup(me.ActiveMTU); err != nil {
		return "setup", err
	}
	var qps []*ptQP
	defer func() {
		for _, q := range qps {
			q.s.Close()
		}
	}()
	region := max(w.cycle, perftestRegion, 2*max(ps.LatSize, 2))
	x := perftest.NewServer(gid, pc.Peer())
	for {
		st := x.Next()
		var err error
		switch st.Kind {
		case perftest.StepRead:
			var b []byte
			if b, err = ps.read(pc, st); err == nil {
				err = x.Feed(b) // the machine's errors name what was wrong
				break
			}
			err = x.Fail(err)
		case perftest.StepSend:
			if err = pc.Write(st.What, st.Msg); err != nil {
				err = x.Fail(err)
			}
		case perftest.StepNewQP:
			var q *ptQP
			if q, err = ps.addQP(dev, me, w, st.Dest, len(qps), region); err != nil {
				err = x.Fail(err)
				break
			}
			qps = append(qps, q)
			err = x.Added(q.mine)
		case perftest.StepWritten:
			// Nothing written: the client waits for the server's first message.
			err = x.Written(qps[0].s.Check(perftestPattern, 0, patternedBytes) >= 0)
		case perftest.StepWriteLat:
			what, err := ps.writeLat(ctx, pc, qps[0])
			if !ps.DisablePCIeRelaxed {
				what += "; served with PCIe relaxed ordering on, which ib_write_lat's own server turns off: give this server --perftest-disable-pcie-relaxed to match it"
			}
			return what, err
		case perftest.StepDone:
			pc.Done()
			return ptWhat(x), nil
		case perftest.StepFailed:
			err = x.Err()
		}
		if err != nil {
			return ptWhat(x), err
		}
	}
}

// read reads what the exchange asks for: its steps take --timeout, what comes after a
// client's run up to --max-test-time.
func (ps *PerftestServer) read(pc *perftest.Conn, st perftest.Step) ([]byte, error) {
	if st.Long {
		pc.Timeout = ps.MaxTest
		defer func() { pc.Timeout = ps.Timeout }()
	}
	return pc.Read(st.What, st.N)
}

// ptWhat is what the client ran, with its report once read.
func ptWhat(x *perftest.Server) string {
	what := x.Test()
	if rep, ok := x.Report(); ok {
		what = fmt.Sprintf("%s: the client reported %d B x %d: %s, %.6f Mpps (its numbers)", what, rep.Size, rep.Iters, reportedBW(rep), rep.MsgRate)
	}
	return what
}

// addQP is the client's QP n's session (n before it), within --max-buffer.
func (ps *PerftestServer) addQP(dev Device, me result.Device, w perftestWire, d perftest.Dest, n, region int) (*ptQP, error) {
	if int64(n+1)*int64(region) > ps.MaxBuffer {
		return nil, fmt.Errorf("%d QPs of %d bytes each (perftest -a's largest message) exceed --max-buffer %d: raise it, or run the client with fewer QPs (-q)", n+1, region, ps.MaxBuffer)
	}
	return ps.newQP(dev, me, w, d, region)
}

// perftestPattern is what the start of the server's buffers holds until a client
// writes: patterned bytes, where a WRITE bandwidth client's first message lands whatever
// its size (slot 0 of its cycle).
const (
	perftestPattern = 0x5a5a5a00
	patternedBytes  = 4096
)

// newQP is one QP's session, connected to the client's key message d.
func (ps *PerftestServer) newQP(dev Device, me result.Device, w perftestWire, d perftest.Dest, region int) (*ptQP, error) {
	s, err := dev.NewSession(verbs.Spec{NumQP: 1, SQDepth: 1, BufSize: region, RemoteWrite: true, RemoteRead: true,
		RelaxedOrdering: !ps.DisablePCIeRelaxed, SL: ps.SL, TrafficClass: ps.TrafficClass})
	if err != nil {
		return nil, err
	}
	s.Fill(perftestPattern, 0, patternedBytes)
	ep := s.Local()
	// The READs this side takes outstanding: no more than the client offers (perftest's
	// client sets its max_rd_atomic to what this side announces).
	mine := perftest.Dest{LID: ep.LID, OutReads: max(1, min(ep.RdAtom, d.OutReads)), QPN: ep.QPNs[0], PSN: ep.PSNs[0], RKey: ep.RKey, VAddr: ep.Addr}
	copy(mine.GID[:], net.ParseIP(ep.GID).To16())
	if w.gid && mine.V4Mapped() != d.V4Mapped() {
		s.Close()
		return nil, errors.New("found incompatibility issue with GID types (perftest's words): pick GIDs of one kind with -x on both sides")
	}
	remote := qp.Endpoint{
		QPNs: []uint32{d.QPN}, PSNs: []uint32{d.PSN}, LID: d.LID, GID: d.IP().String(), GIDIndex: -1,
		GIDType: ep.GIDType, LinkLayer: ep.LinkLayer, MTU: w.mtu, RdAtom: max(1, d.OutReads),
		Addr: d.VAddr, RKey: d.RKey, Len: uint64(region),
	}
	if err := s.Connect(remote, w.mtu); err != nil {
		s.Close()
		return nil, err
	}
	return &ptQP{s: s, mine: mine, rem: d}, nil
}

// reportedBW is a perftest client's average bandwidth in its unit (MB/s of 2^20 bytes,
// or Gb/s with its --report_gbits, which its report does not name: see
// perftest.BWReport.Unit) and in rdmabench's Gb/s of 10^9 bits.
func reportedBW(rep perftest.BWReport) string {
	switch g, ok := rep.AvgGbps(); {
	case !ok:
		return fmt.Sprintf("%.2f MB/s or Gb/s (its report does not say which)", rep.BWAvg)
	case rep.Unit() == "MB/s":
		return fmt.Sprintf("%.2f MB/s (2^20 B) = %.3f Gb/s", rep.BWAvg, g)
	default:
		return fmt.Sprintf("%.3f Gb/s (--report_gbits)", g)
	}
}

// writeLat plays ib_write_lat's server: it sends first and times each round trip, for
// as many rounds as the client answers (the client's -n; the client leaves when it has
// played them, which ends the loop).
func (ps *PerftestServer) writeLat(ctx context.Context, pc *perftest.Conn, q *ptQP) (string, error) {
	size := max(ps.LatSize, 2)
	// The buffer started with a pattern (to tell a WRITE client's run), which may hold
	// the first round's byte where the client's message ends: a pattern's first byte
	// is its seed's low byte, so this writes 0 there.
	q.s.Fill(0, size-1, 1)
	// The client closes the connection when its rounds are over: that ends the loop.
	// The watcher stops the loop only while it runs, and is over before the session
	// can be closed.
	gone, watched := make(chan struct{}), make(chan struct{})
	var running atomic.Bool
	running.Store(true)
	go func() {
		defer close(watched)
		b := make([]byte, 64)
		pc.NC.SetReadDeadline(time.Now().Add(ps.MaxTest))
		n, err := pc.NC.Read(b)
		switch {
		case !running.Load():
		case n > 0: // a write_lat client says nothing: this is another test
			q.s.Stop()
		case errors.Is(err, io.EOF):
			close(gone)
			q.s.Stop()
		default: // --max-test-time, or shutdown
			q.s.Stop()
		}
	}()
	stop := context.AfterFunc(ctx, q.s.Stop)
	res, err := q.s.PingPong(verbs.PingPongParams{
		Initiator: true, Size: size, Iters: 1 << 40, SQDepth: 1, CQMod: 1, Timeout: ps.Timeout, OneWay: true, Perftest: true,
	})
	running.Store(false)
	stop()
	pc.NC.SetReadDeadline(time.Now())
	<-watched
	select {
	case <-gone:
		err = nil // the last message went to a client that had left
	default:
	}
	lat, _, lerr := result.NewLatency(res.Lat.Hist, res.Lat.Moments)
	what := fmt.Sprintf("write_lat, %d B: %d rounds; one-way latency (half the round trip) mean %.2f us, min %.2f us, max %.2f us (this side's measurement)",
		size, res.Done, lat.Mean/1e3, float64(lat.Min)/1e3, float64(lat.Max)/1e3)
	if res.Done == 0 {
		return "write_lat", errors.Join(errors.New("no round was answered: does the client use -s "+fmt.Sprint(size)+" (the server's --perftest-size)?"), err)
	}
	return text.Clean(what, 300), errors.Join(err, lerr)
}
