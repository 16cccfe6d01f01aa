package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Fan is a client of several servers at once (fan-out for WRITE, fan-in for READ): one
// QP per server on one CQ and one local buffer, driven by one loop that posts to the
// servers in turn. Each server runs an ordinary one-QP plan and cannot tell it apart
// from a test of its own: it verifies and reports its part as always.
//
// WRITE sends the same source region to every server (a broadcast); READ lands every
// server's data in a region of its own (--landing per-peer) or in one shared region.
type Fan struct {
	peers []*oob.Peer
	dev   Device
	me    result.Device
	// gids: the GID of each server's connection (its local address), its QP's source
	// GID; nil where the device picks no GID per connection.
	gids []verbs.GIDEntry
}

// DialFan opens the local device on the verbs engine once and connects to every server.
func DialFan(ctx context.Context, addrs []string, local Local, token string, timeout time.Duration) (*Fan, error) {
	dev, err := Verbs.Open(local)
	if err != nil {
		return nil, err
	}
	var ncs []net.Conn
	for _, a := range addrs {
		nc, err := dialTCP(ctx, a, timeout)
		if err != nil {
			for _, c := range ncs {
				c.Close()
			}
			dev.Close()
			return nil, fmt.Errorf("cannot reach the rdmabench server at %s: %w (is 'rdmabench server' running there?)", a, err)
		}
		ncs = append(ncs, nc)
	}
	return NewFan(ncs, dev, addrs, token, timeout)
}

// NewFan runs the handshake with the server behind each connection (addrs[i] names
// ncs[i]) and returns a client of all of them that measures with dev. It owns ncs and
// dev from then on, also on error.
func NewFan(ncs []net.Conn, dev Device, addrs []string, token string, timeout time.Duration) (*Fan, error) {
	f := &Fan{dev: dev, me: dev.Identity()}
	var notes []string
	for i, nc := range ncs {
		me := f.me
		if b, ok := bindGID(dev, nc.LocalAddr()).(boundDevice); ok {
			me = b.mark(me)
			f.gids = append(f.gids, b.gid)
			if b.note != "" {
				notes = append(notes, fmt.Sprintf("server %s: %s", addrs[i], b.note))
			}
		}
		p, err := oob.Open(nc, addrs[i], me, token, timeout)
		if err != nil {
			for _, nc := range ncs {
				nc.Close()
			}
			dev.Close()
			return nil, err
		}
		f.peers = append(f.peers, p)
	}
	if len(f.gids) > 0 { // the result's device: the first server's GID, every note
		f.me.GIDIndex, f.me.GIDType, f.me.GID = f.gids[0].Index, f.gids[0].Type, f.gids[0].GID
		f.me.GIDNote = strings.Join(notes, "; ")
	}
	return f, nil
}

// Close ends every session politely and releases the device.
func (f *Fan) Close() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, p := range f.peers {
		errs = append(errs, p.Close())
	}
	return errors.Join(append(errs, f.dev.Close())...)
}

// Device is the client's device identity.
func (f *Fan) Device() result.Device { return f.me }

// Run runs one bandwidth test against all servers. As Client.Run, it returns what was
// measured whatever went wrong, with Error set; the result's totals are all servers
// together, result.Fan has each server's share.
func (f *Fan) Run(ctx context.Context, op Op, cfg result.Config) (r result.Result, err error) {
	cfg.Op = string(op.Name)
	cfg.Peers = len(f.peers)
	op.Defaults(&cfg)
	op.ResolveInline(&cfg, f.me)
	plan.ResolvePostAPI(&cfg, f.me)
	var addrs []string
	for _, c := range f.peers {
		addrs = append(addrs, c.Addr)
	}
	r = result.Result{
		SchemaVersion: result.SchemaVersion, ToolVersion: result.Version, Time: time.Now().UTC(),
		Server: strings.Join(addrs, ","), Client: f.me, ServerDevice: f.peers[0].Server.Device, Config: cfg,
	}
	defer func() {
		err = oob.AsLost(err)
		if err != nil {
			r.Error = err.Error()
		}
	}()
	if err := op.Validate(cfg); err != nil {
		return r, err
	}
	if cfg.Peers < 2 {
		return r, errors.New("a fan-out / fan-in run needs two servers or more")
	}
	eps, abort, err := f.propose(cfg)
	if err != nil {
		return r, err
	}
	sl := bwSlots(cfg) // the plan's (one QP): each server's part
	lay := fanLayout(op, cfg, sl)
	s, ep, err := f.connect(cfg, lay, eps, &r)
	if err != nil {
		return r, abort(err)
	}
	defer s.Close()
	r.Clock, r.ClockNote = f.dev.Clock()
	stopping := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { s.Stop(); close(stopping) })
	lines := make([]line, len(f.peers))
	for i, p := range f.peers {
		lines[i].endBeats = p.Beat(stopOn(s))
		lines[i].reply, _, lines[i].listening = p.Listen(stopOn(s))
	}
	defer func() {
		for _, l := range lines {
			<-l.listening // before s.Close: a reader may still Stop the session
		}
	}()
	// NIC counters: this side's only, around the measured phase (the servers' ports
	// each carry one share; they are not asked to read theirs).
	var mine sideCounters
	var probe *counters.Snapshot
	if CountersOn(cfg) {
		if p, err := f.dev.Counters(); err == nil {
			probe = &p
		}
	}
	res, merr := f.measure(ctx, op, s, cfg, sl, lay, &r, func() {
		if CountersOn(cfg) {
			mine.open(f.dev, settle(probe))
		}
	})
	ended := time.Now()
	if !stop() {
		<-stopping
	}
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	if merr != nil {
		merr = f.blame(merr, ep.QPNs)
	}
	// Each server's side: stop its responder, verify, report.
	reports, errs := f.finish(cfg, lines, res.PerQP, r.Interrupted || merr != nil)
	merr = errors.Join(append(errs, merr)...) // the sessions' ends first: the loop's error follows from them
	f.fanResult(&r, op, cfg, s, sl, lay, res, reports, merr)
	if mine.began {
		l, note := mine.close(f.dev, ended)
		notes := []string{"servers: not read in a run against several servers"}
		if note != "" {
			notes = append(notes, "client: "+note)
		}
		judge(&r, op.Requests, l, nil, notes)
		r.Fan.WireBytesPerByte, r.Fan.WirePacketsPerMessage = wire(l, r.Iterations, r.Bytes)
	}
	if merr == nil && res.PerQP != nil {
		merr = fanVerified(r.Fan.Peers)
	}
	if merr == nil {
		merr = measured(r)
	}
	return r, merr
}

// propose offers the same one-QP plan to every server; all answer before anything
// else happens, so that a refusal leaves every connection in step. It returns their
// endpoints, and abort, which tells the servers that accepted that their plans end.
func (f *Fan) propose(cfg result.Config) (eps []qp.Endpoint, abort func(error) error, err error) {
	for _, p := range f.peers {
		if p.Broken() {
			return nil, nil, &oob.LostError{Err: fmt.Errorf("the connection to the server at %s was lost in an earlier test", p.Addr)}
		}
	}
	for _, p := range f.peers {
		if err := p.Offer(&cfg); err != nil {
			return nil, nil, fmt.Errorf("server %s: %w", p.Addr, err)
		}
	}
	eps = make([]qp.Endpoint, len(f.peers))
	var refused error
	for i, p := range f.peers {
		var err error
		eps[i], err = p.Answer()
		var pe *oob.PeerError
		switch {
		case errors.As(err, &pe):
			refused = errors.Join(refused, fmt.Errorf("server %s refused the plan: %w", p.Addr, err))
		case err != nil:
			refused = errors.Join(refused, fmt.Errorf("server %s: no answer to the plan: %w", p.Addr, err))
		}
	}
	abort = func(err error) error {
		for i, p := range f.peers {
			if eps[i].QPNs != nil {
				p.Abort(err)
			}
		}
		return err
	}
	if refused != nil {
		return nil, nil, abort(refused)
	}
	return eps, abort, nil
}

// connect makes this side's session, one QP per server in the layout lay, connects QP
// i to server i's endpoint, tells each server its QP and waits until all are ready.
// It returns the session and its endpoint; on error the caller aborts the plans.
func (f *Fan) connect(cfg result.Config, lay verbs.Layout, eps []qp.Endpoint, r *result.Result) (Session, qp.Endpoint, error) {
	local := cfg
	local.NumQPs = cfg.Peers
	lbytes := lay.LocalRegions(cfg.Peers) * lay.LSlots * lay.Stride
	spec := Spec(local, lbytes, false, false, cfg.SQDepth)
	spec.Events, spec.ModCount, spec.ModPeriodUS = cfg.CompletionEvents, cfg.CQModerationCount, cfg.CQModerationUS
	spec.GIDs = f.gids // QP i on the GID of server i's connection
	s, err := f.dev.NewSession(spec)
	if err != nil {
		return nil, qp.Endpoint{}, err
	}
	fail := func(err error) (Session, qp.Endpoint, error) { s.Close(); return nil, qp.Endpoint{}, err }
	if err := s.ConnectPeers(eps, cfg.MTUBytes); err != nil {
		return fail(err)
	}
	r.PathMTU, r.MaxRdAtom = s.PathMTU(), s.RdAtom()
	r.InlineUsed = InlineUsed(cfg, s)
	ep := s.Local()
	for i, p := range f.peers {
		e := ep
		e.QPNs, e.PSNs = []uint32{ep.QPNs[i]}, []uint32{ep.PSNs[i]}
		if i < len(f.gids) {
			g := f.gids[i]
			e.GID, e.GIDIndex, e.GIDType, e.GIDNetdev = g.GID, g.Index, g.Type, g.Netdev
		}
		if err := p.Tell(e); err != nil {
			return fail(fmt.Errorf("server %s: %w", p.Addr, err))
		}
	}
	for _, p := range f.peers {
		if err := p.Ready(); err != nil {
			return fail(fmt.Errorf("server %s: %w", p.Addr, err))
		}
	}
	return s, ep, nil
}

// line is a session's beats and its reader during a test (oob.Peer's Beat and Listen).
type line struct {
	endBeats  func() error
	reply     <-chan oob.Received
	listening <-chan struct{}
}

// finish ends the test with every server: why one spoke during the test or its beats
// stopped, if so; else done, with its QP's WRs completed (perQP[i]), and its report.
func (f *Fan) finish(cfg result.Config, lines []line, perQP []uint64, interrupted bool) ([]*oob.Report, []error) {
	reports := make([]*oob.Report, len(f.peers))
	var errs []error
	for i, p := range f.peers {
		lost := lines[i].endBeats()
		if err := p.Interrupted(lines[i].reply); err != nil {
			errs = append(errs, &oob.LostError{Err: fmt.Errorf("server %s ended the test: %w", p.Addr, err)})
			continue
		}
		if lost != nil {
			p.Drop()
			errs = append(errs, &oob.LostError{Err: fmt.Errorf("lost the server %s during the test: %w", p.Addr, lost)})
			continue
		}
		var done []uint64
		if perQP != nil {
			done = perQP[i : i+1]
		}
		if err := p.Finish(&oob.Done{Completed: done, Interrupted: interrupted}); err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", p.Addr, err))
		}
	}
	for i, p := range f.peers {
		if p.Broken() {
			continue
		}
		rep, err := p.Report(lines[i].reply, p.Conn.Timeout+reportCheck(cfg))
		if err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", p.Addr, err))
			continue
		}
		reports[i] = rep
	}
	return reports, errs
}

// fanVerified is why --verify failed for some servers, or nil.
func fanVerified(peers []result.Peer) error {
	var err error
	for _, p := range peers {
		if v := p.Verify; v != nil && !v.OK {
			err = errors.Join(err, fmt.Errorf("verification failed for server %s at the %s: %s", p.Server, v.Side, v.Detail)) // text: cleaned (a server's verification where it is read; p.Server is the command line's)
		}
	}
	return err
}

// fanLayout is the client's side of every server's slots: WRITE sends the same source
// region to all (a broadcast), READ lands in one region per server or in one shared.
func fanLayout(op Op, cfg result.Config, sl slots) verbs.Layout {
	l := sl.layout(op)
	l.SharedLocal = op.ToServer || cfg.Landing == "shared"
	return l
}

// measure runs the warm-up and the measured run over all servers' QPs.
func (f *Fan) measure(ctx context.Context, op Op, s Session, cfg result.Config, sl slots, lay verbs.Layout, r *result.Result, start func()) (verbs.BWResult, error) {
	timeout := f.peers[0].Conn.Timeout
	p := verbs.BWParams{
		Op: verbs.Op(op.Name), Size: cfg.MsgSizeBytes, Layout: lay, SQDepth: cfg.SQDepth, PostList: cfg.PostList,
		CQMod: cfg.CQMod, Inline: r.InlineUsed, Events: cfg.CompletionEvents, Timeout: timeout,
		Rounds: cfg.Sync == "rounds", PerQP: true,
	}
	// --verify: the plan's patterns (one QP) in the shared source, or in every landing
	// region for what the warm-up read.
	if cfg.Verify && op.ToServer {
		fillWarm(s, cfg, sl, sl.src)
	}
	if w := cfg.WarmupIterations; w > 0 {
		p.Iters = w
		res, err := s.Bandwidth(p)
		r.WarmupDone = res.Completed / uint64(cfg.Peers)
		if err != nil {
			return verbs.BWResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.Verify {
		if op.ToServer {
			fillSource(s, cfg, sl)
		} else {
			for i := range lay.LocalRegions(cfg.Peers) {
				fillWarm(region{s, i * sl.dst * sl.stride}, cfg, sl, sl.dst)
			}
		}
	}
	if ctx.Err() != nil {
		return verbs.BWResult{}, nil
	}
	start()
	p.Iters = cfg.Iterations
	if cfg.DurationS > 0 {
		p.Duration = time.Duration(cfg.DurationS * float64(time.Second))
	}
	return s.Bandwidth(p)
}

// wire is the traffic this side's port carried (both directions) per delivered byte,
// from the byte counters (PMA: port_xmit_data, port_rcv_data), and per delivered
// message, from the packet counters (rxe: sent_pkts, rcvd_pkts; PMA:
// port_xmit_packets, port_rcv_packets); nil where the port has no such counters.
func wire(d *counters.Deltas, msgs, bytes uint64) (perByte, perMsg *float64) {
	if d == nil || msgs == 0 || bytes == 0 {
		return nil, nil
	}
	sum := func(names ...string) (uint64, bool) {
		var n uint64
		found := 0
		for _, c := range d.Counters {
			for _, name := range names {
				if c.Name == name && c.Delta != nil {
					n += *c.Delta
					found++
				}
			}
		}
		return n, found == len(names)
	}
	if b, ok := sum("port_xmit_data", "port_rcv_data"); ok {
		v := float64(b) / float64(bytes)
		perByte = &v
	}
	for _, names := range [][]string{{"sent_pkts", "rcvd_pkts"}, {"port_xmit_packets", "port_rcv_packets"}} {
		if p, ok := sum(names...); ok {
			v := float64(p) / float64(msgs)
			perMsg = &v
			break
		}
	}
	return perByte, perMsg
}

// blame names the server whose QP (qpns[i] leads to server i) a failed completion was on.
func (f *Fan) blame(err error, qpns []uint32) error {
	var ce *verbs.CompletionError
	if errors.As(err, &ce) {
		for i, n := range qpns {
			if n == ce.QPNum && i < len(f.peers) {
				return fmt.Errorf("server %s: %w", f.peers[i].Addr, err)
			}
		}
	}
	return err
}

// fanResult fills r's totals, latency and per-server shares from the loop's result
// and the servers' reports.
func (f *Fan) fanResult(r *result.Result, op Op, cfg result.Config, s Session, sl slots, lay verbs.Layout, res verbs.BWResult, reports []*oob.Report, merr error) {
	r.SetThroughput(res.Completed, cfg.MsgSizeBytes, res.DurationNS)
	r.SetSteady(res.SteadyWRs, cfg.MsgSizeBytes, res.SteadyNS)
	r.LatKind = "completion_under_load"
	if cfg.Sync == "rounds" {
		r.LatKind = "round" // a round's first post to the last server's completion
	}
	r.CQEvents = res.Events
	if err := setLatency(r, res.Lat); err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	fan := &result.Fan{
		Rounds:                res.Rounds,
		RegisteredBytes:       int64(lay.LocalRegions(cfg.Peers) * lay.LSlots * lay.Stride),
		ServerRegisteredBytes: int64(sessionSpec(op, cfg, true).BufSize),
	}
	var gbps []float64
	for i, c := range f.peers {
		p := result.Peer{Server: c.Addr, Device: c.Server.Device}
		if i < len(res.PerQP) {
			p.Messages, p.DurationNS = res.PerQP[i], res.PerQPLastNS[i]
			p.Bytes = p.Messages * uint64(cfg.MsgSizeBytes)
			if p.DurationNS > 0 {
				p.BWGbps = float64(p.Bytes) * 8 / float64(p.DurationNS)
			}
			gbps = append(gbps, p.BWGbps)
		}
		if i < len(res.PerQPLat) {
			p.Lat, _, _ = result.NewLatency(res.PerQPLat[i].Hist, res.PerQPLat[i].Moments)
		}
		if cfg.Verify {
			switch {
			case merr != nil:
				p.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: the run failed"}
			case res.PerQP == nil: // interrupted before the measured run; measured() says so
				p.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: nothing was measured"}
			case op.ToServer && reports[i] != nil && reports[i].Verify != nil:
				v := *reports[i].Verify // the server's words, shown to this side's user
				v.Side, v.Detail = text.Clean(v.Side, 16), text.Clean(v.Detail, 300)
				p.Verify = &v
			case op.ToServer:
				p.Verify = &result.Verify{FirstBadOffset: -1, Detail: "the server sent no verification"}
			default:
				off := 0
				if !lay.SharedLocal {
					off = i * sl.dst * sl.stride
				}
				p.Verify = checkDest(region{s, off}, cfg, sl, res.PerQP[i:i+1], "client")
			}
		}
		fan.Peers = append(fan.Peers, p)
	}
	if j := result.Jain(gbps); !math.IsNaN(j) {
		fan.JainFairness = min(j, 1) // 1 within rounding when all are equal
		fan.MinPeerGbps = gbps[0]
		for _, g := range gbps {
			fan.MinPeerGbps = min(fan.MinPeerGbps, g)
		}
		if cfg.Sync != "rounds" && cfg.DurationS > 0 {
			var spread float64
			if fan.Fairness, spread, fan.FairnessEdgeMessages = result.FairnessOf(gbps, r.DurationNS, cfg.MsgSizeBytes, cfg.SQDepth, cfg.CQMod); fan.Fairness != "" {
				fan.FairnessSpreadMessages = &spread
			}
		}
	}
	r.Fan = fan
}

// region is a patterned buffer seen from an offset: one server's landing region.
type region struct {
	s   patterned
	off int
}

func (g region) Fill(seed uint32, off, n int) { g.s.Fill(seed, g.off+off, n) }
func (g region) Check(seed uint32, off, n int) int64 {
	if bad := g.s.Check(seed, g.off+off, n); bad >= 0 {
		return bad - int64(g.off)
	}
	return -1
}

// SplitServers parses a SERVER argument: one host, or a comma-separated list of
// host[:port] (port defaults to port), each at most once.
func SplitServers(arg string, port int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, h := range strings.Split(arg, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("server list %q has an empty entry", arg)
		}
		addr := h
		if host, p, err := net.SplitHostPort(h); err == nil {
			if host == "" || p == "" {
				return nil, fmt.Errorf("server %q: want host or host:port", h)
			}
		} else {
			addr = net.JoinHostPort(strings.Trim(h, "[]"), fmt.Sprint(port))
		}
		if seen[addr] {
			return nil, fmt.Errorf("server %s appears twice in %q: each server takes one QP of the run", addr, arg)
		}
		seen[addr] = true
		out = append(out, addr)
	}
	if len(out) > plan.MaxPeers {
		return nil, fmt.Errorf("%d servers: at most %d in one run", len(out), plan.MaxPeers)
	}
	return out, nil
}
