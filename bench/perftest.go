package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/oob/perftest"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// A perftest peer: rdmabench as the client of a plain perftest server (ib_write_bw,
// ib_read_bw, ib_write_lat, ib_read_lat), speaking its exchange (package
// oob/perftest) instead of rdmabench's. perftest's server neither knows nor says what
// rdmabench measures: this side's result is its own (histogram, counters, schema),
// with the peer's counters absent; the perftest server prints its usual table from
// the report this side sends it.
//
// perftest 6.06 negotiates nothing: both sides must be started with the same test and
// the same -q, -s, -n (or -D) and -a, as two perftests must. What can be told from the
// exchange is refused with perftest's reason: a peer older than 5.70, GIDs of
// different types, a different number of QPs; a peer that stops answering is a
// timeout naming the flags to compare.

// PerftestCycleBuffer is the cycle buffer rdmabench offers (perftest's default: the
// page size); both sides use the larger of the two.
const PerftestCycleBuffer = 4096

// PerftestClient runs tests against a perftest server.
type PerftestClient struct {
	Engine  Engine
	Addr    string // host:port of the perftest server
	Local   Local
	Timeout time.Duration // each exchange, and the loops' silence bound
	Gbits   bool          // --report_gbits: the report in Gb/s
}

// Run runs op's test (cfg.Test) against the perftest server, once per size in sizes
// (perftest's -a: several sizes in one connection; nil: cfg's size), and returns a
// result per size run. Cancelling ctx stops the measurement in progress and keeps
// what it measured.
func (p PerftestClient) Run(ctx context.Context, op Op, cfg result.Config, sizes []int) (rs []result.Result, err error) {
	op.Defaults(&cfg)
	if len(sizes) == 0 {
		sizes = []int{cfg.MsgSizeBytes}
	}
	if err := CheckPerftest(cfg, len(sizes)); err != nil {
		return nil, err
	}
	for _, size := range sizes {
		c := cfg
		c.MsgSizeBytes = size
		if err := op.Validate(c); err != nil {
			return nil, err
		}
	}
	dev, err := p.Engine.Open(p.Local)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	nc, err := dialTCP(ctx, p.Addr, p.Timeout)
	if err != nil {
		return nil, fmt.Errorf("perftest server %s: %w", p.Addr, err)
	}
	dev = bindGID(dev, nc.LocalAddr()) // the GID of this side's address
	me := dev.Identity()
	op.ResolveInline(&cfg, me)
	plan.ResolvePostAPI(&cfg, me)
	pc := &perftest.Conn{NC: nc, Client: true, Timeout: p.Timeout, Ctx: ctx}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	w := perftestWire{pc: pc, op: op, test: cfg.Test, gid: me.LinkLayer == "Ethernet" || p.Local.GIDIndex >= 0, gbits: p.Gbits}
	if err := w.setup(me.ActiveMTU); err != nil {
		return nil, err
	}
	s, err := w.connect(dev, cfg, sizes)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stopLoop := context.AfterFunc(ctx, s.Stop)
	defer stopLoop()
	clock, note := dev.Clock()
	var last result.Result
	for _, size := range sizes {
		c := cfg
		c.MsgSizeBytes = size
		r := result.Result{
			SchemaVersion: result.SchemaVersion, ToolVersion: result.Version, Time: time.Now().UTC(),
			Server: p.Addr, Client: me, ServerDevice: perftestPeerDevice(pc, me), Config: c,
			PathMTU: s.PathMTU(), MaxRdAtom: s.RdAtom(), Clock: clock, ClockNote: note,
		}
		r.InlineUsed = InlineUsed(c, s)
		merr := w.measure(ctx, dev, s, c, &r, p.Timeout)
		if ctx.Err() != nil {
			r.Interrupted = true
		}
		if merr == nil {
			merr = measured(r)
		}
		if merr != nil {
			r.Error = merr.Error()
			rs = append(rs, r)
			// The peer is mid-test: it cannot be told, so the connection ends here.
			return rs, merr
		}
		rs, last = append(rs, r), r
		if r.Interrupted {
			break
		}
	}
	// The closing exchange runs even after an interrupt (bounded by Timeout), so that
	// the perftest server ends as after any run and prints what was measured.
	pc.Ctx = nil
	pc.NC.SetDeadline(time.Time{})
	if err := w.end(last); err != nil {
		return rs, err
	}
	return rs, nil
}

// CheckPerftest refuses the combinations a perftest peer cannot run, or that its
// exchange does not carry (sizes: how many sizes, -a's).
func CheckPerftest(c result.Config, sizes int) error {
	var what string
	switch {
	case c.Bidirectional:
		what = "-b (perftest's bidirectional exchange is not spoken)"
	case c.Peers > 0:
		what = "several servers"
	case c.MR != "" && c.MR != "pool":
		what = "--mr " + c.MR
	case c.Verify:
		what = "--verify (a perftest peer does not check what it received)"
	case c.Baseline != "":
		what = "--baseline"
	case c.Test == result.Lat && c.NumQPs > 1:
		what = "-q with a latency test (perftest's latency tests run one QP)"
	case c.Test == result.Lat && c.DurationS > 0:
		what = "--duration with a latency test (perftest counts its rounds by time there, which this side cannot follow)"
	case sizes > 1 && c.DurationS > 0:
		what = "-a with --duration"
	case c.DurationS == 0 && c.Iterations > 0 && c.Iterations < 5:
		what = fmt.Sprintf("-n %d (perftest takes 5 or more)", c.Iterations)
	default:
		return nil
	}
	return fmt.Errorf("--perftest: %s: run rdmabench on both sides for this", what)
}

// perftestPeerDevice is what is known of a perftest peer's device: nothing but what
// its exchange says, which is its version. The link layer and GID type are this
// side's, which the peer's must match for the QPs to connect.
func perftestPeerDevice(pc *perftest.Conn, me result.Device) result.Device {
	return result.Device{Model: "perftest " + pc.PeerVersion + " peer (its device is not reported)", LinkLayer: me.LinkLayer, GIDIndex: -1}
}

type perftestWire struct {
	pc        *perftest.Conn
	op        Op
	test      result.Test
	gid       bool
	gbits     bool
	cycle     int
	cacheLine int
	mtu       int
	mine      []perftest.Dest
	rem       []perftest.Dest
}

// setup runs the exchange's opening: versions, sys data, MTU.
func (w *perftestWire) setup(activeMTU int) error {
	if err := w.pc.Versions(); err != nil {
		return err
	}
	var err error
	w.cycle, w.cacheLine, err = w.pc.SysData(PerftestCycleBuffer, cacheLine())
	if err != nil {
		return err
	}
	if activeMTU == 0 {
		activeMTU = 1024
	}
	w.mtu, err = w.pc.MTU(activeMTU)
	return err
}

// cacheLine is this host's cache line size, as perftest reads it (sysfs), else 64.
func cacheLine() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 16 && n <= 1024 {
			return n
		}
	}
	return 64
}

// perftestSlots is perftest's layout of a bandwidth test's messages in its buffer:
// messages up to half the cycle buffer step through it a cache line (or the size
// rounded up to one) apart; larger ones reuse one slot (increase_rem_addr).
func perftestSlots(size, cycle, line int) verbs.Layout {
	inc := line
	if size > line {
		inc = (size + line - 1) / line * line
	}
	if size <= cycle/2 {
		n := max(1, cycle/inc)
		return verbs.Layout{LSlots: n, RSlots: n, Stride: inc}
	}
	return verbs.Layout{LSlots: 1, RSlots: 1, Stride: size}
}

// connect creates this side's session, exchanges the key messages as perftest's
// tests do (latency tests open with one more) and connects the QPs.
func (w *perftestWire) connect(dev Device, cfg result.Config, sizes []int) (Session, error) {
	spec := w.spec(cfg, sizes)
	s, err := dev.NewSession(spec)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Session, error) { s.Close(); return nil, err }
	ep := s.Local()
	for q := range ep.QPNs {
		d := perftest.Dest{LID: ep.LID, OutReads: 1, QPN: ep.QPNs[q], PSN: ep.PSNs[q], RKey: ep.RKey, VAddr: ep.Addr}
		if w.op.Name == string(verbs.Read) {
			d.OutReads = ep.RdAtom
			if cfg.OutsNum > 0 {
				d.OutReads = min(d.OutReads, cfg.OutsNum)
			}
		}
		copy(d.GID[:], net.ParseIP(ep.GID).To16())
		w.mine = append(w.mine, d)
	}
	if w.test == result.Lat {
		if _, err := w.pc.Keys("keys", w.mine[0], w.gid); err != nil {
			return fail(err)
		}
	}
	seen := map[uint32]bool{}
	for q := range w.mine {
		d, err := w.pc.Keys("keys", w.mine[q], w.gid)
		if err != nil {
			return fail(err)
		}
		if seen[d.QPN] {
			return fail(fmt.Errorf("the perftest server runs fewer QPs than this side's %d (-q): start both with the same -q", len(w.mine)))
		}
		seen[d.QPN] = true
		w.rem = append(w.rem, d)
	}
	if w.gid && w.mine[0].V4Mapped() != w.rem[0].V4Mapped() {
		return fail(errors.New("found incompatibility issue with GID types (perftest's words): one side's GID is IPv4-mapped, the other's is not; pick GIDs of one kind with -x on both sides"))
	}
	var eps []qp.Endpoint
	for _, d := range w.rem {
		eps = append(eps, qp.Endpoint{
			QPNs: []uint32{d.QPN}, PSNs: []uint32{d.PSN}, LID: d.LID, GID: d.IP().String(), GIDIndex: -1,
			GIDType: ep.GIDType, LinkLayer: ep.LinkLayer, MTU: w.mtu, RdAtom: outs(d.OutReads, cfg.OutsNum),
			Addr: d.VAddr, RKey: d.RKey, Len: uint64(w.regionLen(cfg, sizes)),
		})
	}
	if err := s.ConnectPeers(eps, w.mtu); err != nil {
		return fail(err)
	}
	for q := range w.mine {
		d, err := w.pc.Keys("keys", w.mine[q], w.gid)
		if err != nil {
			return fail(err)
		}
		if d != w.rem[q] {
			return fail(fmt.Errorf("the perftest server runs more QPs than this side's %d (-q), or another test: start both with the same test and -q", len(w.mine)))
		}
	}
	if _, err := w.pc.Keys("barrier", w.mine[0], w.gid); err != nil {
		return fail(err)
	}
	return s, nil
}

// regionLen is what this side assumes of the peer's region per QP: perftest's
// BUFF_SIZE for the largest size, the larger of it and the cycle buffer.
func (w *perftestWire) regionLen(cfg result.Config, sizes []int) int {
	return max(w.cycle, largest(sizes))
}

func largest(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// spec is this side's session: perftest's layout for the largest size, the access a
// latency test's peer needs (write_lat writes back, read_lat reads nothing here).
func (w *perftestWire) spec(cfg result.Config, sizes []int) verbs.Spec {
	big := largest(sizes)
	if cfg.Test == result.Lat {
		return Spec(cfg, 2*big, w.op.Name == string(verbs.Write), false, max(1, cfg.SQDepth))
	}
	buf := 0
	for _, size := range sizes {
		l := perftestSlots(size, w.cycle, w.cacheLine)
		buf = max(buf, cfg.NumQPs*l.LSlots*l.Stride)
	}
	s := Spec(cfg, buf, false, false, cfg.SQDepth)
	s.Events, s.ModCount, s.ModPeriodUS = cfg.CompletionEvents, cfg.CQModerationCount, cfg.CQModerationUS
	return s
}

// measure runs one size: the warm-up (bandwidth; perftest's latency tests have none,
// and a round more would put the two sides' counts out of step) and the measured run.
func (w *perftestWire) measure(ctx context.Context, dev Device, s Session, c result.Config, r *result.Result, timeout time.Duration) error {
	var mine sideCounters
	if c.Test == result.Lat {
		if CountersOn(c) {
			mine.open(dev, 0) // no settling: write_lat's server sends its first message at once
		}
		// The op's latency rule, as every client's: perftest's rounds are its own.
		res, err := w.op.ClientLatency(s, c, LatRounds{N: c.Iterations, Timeout: timeout, Perftest: true})
		r.DurationNS, r.Iterations, r.LatKind = res.DurationNS, res.Done, w.op.LatKind
		err = errors.Join(perftestLoopErr(err, c), setLatency(r, res.Lat))
		w.counted(r, dev, &mine)
		return err
	}
	p := verbs.BWParams{
		Op: verbs.Op(w.op.Name), Size: c.MsgSizeBytes, Layout: perftestSlots(c.MsgSizeBytes, w.cycle, w.cacheLine),
		SQDepth: c.SQDepth, PostList: c.PostList, CQMod: c.CQMod, Inline: r.InlineUsed, Events: c.CompletionEvents,
		Timeout: timeout,
	}
	if n := c.WarmupIterations; n > 0 {
		p.Iters = n
		res, err := s.Bandwidth(p)
		for _, n := range res.PerQP {
			r.WarmupDone += n
		}
		r.WarmupDone /= uint64(c.NumQPs)
		if err != nil {
			return fmt.Errorf("warm-up: %w", perftestLoopErr(err, c))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if CountersOn(c) {
		mine.open(dev, settle(nil))
	}
	p.Iters = c.Iterations
	if c.DurationS > 0 {
		p.Duration = time.Duration(c.DurationS * float64(time.Second))
	}
	res, err := s.Bandwidth(p)
	r.SetThroughput(res.Completed, c.MsgSizeBytes, res.DurationNS)
	r.SetRampShare(c, r.MaxRdAtom)
	r.SetSteady(res.SteadyWRs, c.MsgSizeBytes, res.SteadyNS)
	r.LatKind = "completion_under_load"
	r.CQEvents = res.Events
	err = errors.Join(perftestLoopErr(err, c), setLatency(r, res.Lat))
	w.counted(r, dev, &mine)
	return err
}

// perftestLoopErr says what a loop's failure against perftest most likely means.
func perftestLoopErr(err error, c result.Config) error {
	var to *verbs.TimeoutError
	var ce *verbs.CompletionError
	switch {
	case errors.As(err, &to):
		return fmt.Errorf("%w (does the perftest server run the same test with the same -s and -n?)", err)
	case errors.As(err, &ce):
		return fmt.Errorf("%w (a remote access error means the perftest server's buffer is smaller than this side's -s: start both with the same -s, or -a)", err)
	}
	return err
}

func (w *perftestWire) counted(r *result.Result, dev Device, mine *sideCounters) {
	if !mine.began {
		return
	}
	l, note := mine.close(dev, time.Now())
	notes := []string{"server: a perftest peer reports no counters"}
	if note != "" {
		notes = append(notes, "client: "+note)
	}
	judge(r, w.op.Requests, l, nil, notes)
}

// end closes the exchange as the test's client does: bandwidth tests send their
// report (which the perftest server prints) between two barriers; read_lat closes
// with a barrier; write_lat says nothing more.
func (w *perftestWire) end(last result.Result) error {
	switch {
	case w.test == result.BW:
		if _, err := w.pc.Keys("end", w.mine[0], w.gid); err != nil {
			return err
		}
		if _, err := w.pc.Report(perftestReport(last, w.gbits)); err != nil {
			return err
		}
		fallthrough
	case w.op.Name == string(verbs.Read):
		if _, err := w.pc.Keys("close", w.mine[0], w.gid); err != nil {
			return err
		}
	}
	return w.pc.Done()
}

// perftestReport is the bandwidth report perftest's server prints: MB/s of 2^20
// bytes (perftest's default unit; Gb/s when the client was given --report_gbits, as
// the server must be too), the message rate in Mpps, the messages of all QPs (as
// perftest's print_report_bw counts them).
// perftest's "BW peak" is its best single-WR interval, which rdmabench does not
// measure: it sends 0 there, which the server prints as 0.00, rather than a number
// it did not measure.
func perftestReport(r result.Result, gbits bool) perftest.BWReport {
	rep := perftest.BWReport{Size: uint64(r.Config.MsgSizeBytes), Iters: r.Iterations, BWAvg: r.BWMiBps, MsgRate: r.MsgRateMpps}
	if gbits {
		rep.BWAvg = r.BWGbps // perftest's Gb/s: 10^9 bits, as rdmabench's
	}
	return rep
}

// outs is the READ depth against a peer that offers offered, capped by --outs.
func outs(offered, cap int) int {
	if cap > 0 {
		offered = min(offered, cap)
	}
	return max(1, offered)
}
