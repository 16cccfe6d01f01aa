package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Local says which device, port and GID a side uses.
type Local struct {
	Device   string
	Port     int
	GIDIndex int // -1: pick like perftest
}

// Client is one connection to a server; it runs any number of tests over it.
type Client struct {
	Addr  string
	peer  *oob.Peer // the session: its steps, in oob/session.go
	dev   Device
	me    result.Device
	probe *counters.Snapshot // this test's first look at the NIC counters

	// OnInterval, when set, gets the --interval lines of a bandwidth test as it runs
	// (from another goroutine, one call at a time).
	OnInterval func(result.Interval)
	// BaselineLimit bounds a TCP baseline's whole transfer on this side (default
	// DefaultBaselineLimit; the command line takes the larger of that and 100 times the
	// RDMA run's duration), whatever pace the server keeps.
	BaselineLimit time.Duration
}

// DefaultBaselineLimit is a TCP baseline's bound on the client: a server's default
// --max-test-time, which bounds the same transfer on its side.
const DefaultBaselineLimit = 10 * time.Minute

// Dial opens the local device on the verbs engine, connects to the server and
// exchanges hellos.
func Dial(ctx context.Context, addr string, local Local, token string, timeout time.Duration) (*Client, error) {
	dev, err := Verbs.Open(local)
	if err != nil {
		return nil, err
	}
	nc, err := dialTCP(ctx, addr, timeout)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("cannot reach the rdmabench server at %s: %w (is 'rdmabench server' running there?)", addr, err)
	}
	return NewClient(nc, dev, addr, token, timeout)
}

// dialTCP opens a control connection, tuned to notice a dead peer within timeout.
func dialTCP(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	oob.Tune(nc, timeout)
	return nc, nil
}

// NewClient runs the handshake on a connection to the server at addr and returns a
// client that measures with dev. It owns nc and dev from then on, also on error.
func NewClient(nc net.Conn, dev Device, addr, token string, timeout time.Duration) (*Client, error) {
	dev = bindGID(dev, nc.LocalAddr())
	me := dev.Identity()
	p, err := oob.Open(nc, addr, me, token, timeout)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return &Client{Addr: addr, peer: p, dev: dev, me: me}, nil
}

// Device is the client's device identity.
func (c *Client) Device() result.Device { return c.me }

// ServerDevice is the server's device identity, from its hello.
func (c *Client) ServerDevice() result.Device { return c.peer.Server.Device }

// Close ends the session politely and releases the device.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	return errors.Join(c.peer.Close(), c.dev.Close())
}

// Run runs one test. Cancelling ctx stops the measurement early; the result then has
// Interrupted set and holds what was measured. Whatever goes wrong, the result comes
// back with what was measured so far and its Error set; a run that measured nothing is
// an error.
func (c *Client) Run(ctx context.Context, op Op, cfg result.Config) (r result.Result, err error) {
	cfg.Op = string(op.Name)
	op.Defaults(&cfg)
	op.ResolveInline(&cfg, c.me)
	plan.ResolvePostAPI(&cfg, c.me)
	r = result.Result{
		SchemaVersion: result.SchemaVersion, ToolVersion: result.Version, Time: time.Now().UTC(),
		Server: c.Addr, Client: c.me, ServerDevice: c.ServerDevice(), Config: cfg,
	}
	defer func() {
		if err = oob.AsLost(err); oob.Lost(err) && !c.peer.Broken() {
			c.peer.Drop() // e.g. a timeout before ready: a late answer would desynchronise the next plan
		}
		if err != nil {
			r.Error = err.Error()
		}
	}()
	if cfg.Test == result.Region {
		return r, errors.New("region plans are the Go API's (package rdma), not a test")
	}
	if err := op.Validate(cfg); err != nil {
		return r, err
	}
	pl, err := Place(cfg.CPUList, c.me, allowedCPUs())
	if err != nil {
		return r, err
	}
	s, err := c.session(op, cfg, pl, &r)
	if err != nil {
		return r, err
	}
	defer s.Close()
	r.Clock, r.ClockNote = c.dev.Clock()
	sl := bwSlots(cfg)
	var mine sideCounters
	// Ctrl-C stops the loop; the stop must be over before the session is closed.
	stopping := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { s.Stop(); close(stopping) })
	endBeats := c.peer.Beat(stopOn(s))
	reply, started, listening := c.peer.Listen(stopOn(s))
	defer func() { <-listening }() // before s.Close: the reader may still Stop the session
	start := func() error { return c.start(cfg, &mine, started, reply) }
	perQP, merr := c.measure(ctx, op, s, cfg, sl, pl, &r, start)
	ended := time.Now()
	lost := endBeats()
	if !stop() {
		<-stopping
	}
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	rep, err := c.finish(cfg, reply, lost, perQP, r.Interrupted || merr != nil)
	if err != nil {
		// The session's end first: when the server ended it or was lost, the loop's
		// error (a flush, from the abort) is its consequence.
		return r, errors.Join(err, merr)
	}
	if cfg.Verify {
		merr = verified(&r, op, cfg, s, sl, perQP, rep, merr)
	}
	setReverse(&r, rep.Reverse)
	if cfg.Bidirectional && merr == nil {
		merr = reverseMeasured(r.Reverse)
	}
	if mine.began {
		c.counted(&r, op, &mine, ended, rep)
	}
	if merr == nil {
		merr = measured(r)
	}
	return r, merr
}

// session proposes the plan to the server and connects a session of this side's
// to the server's QPs: the plan's answer, the QPs, the endpoints, the server's ready.
// On error the server has been told, or the session is lost.
func (c *Client) session(op Op, cfg result.Config, pl Placement, r *result.Result) (Session, error) {
	if err := c.peer.Offer(&cfg); err != nil {
		return nil, err
	}
	remote, err := c.peer.Answer()
	var refused *oob.PeerError
	switch {
	case errors.As(err, &refused):
		return nil, fmt.Errorf("server refused the plan: %w", err)
	case err != nil:
		return nil, fmt.Errorf("no answer from the server to the plan: %w", err)
	}
	c.probe = nil
	if CountersOn(cfg) {
		if s, err := c.dev.Counters(); err == nil {
			c.probe = &s // for the counters' cache lifespan
		}
	}
	spec := sessionSpec(op, cfg, false)
	spec.Events, spec.ModCount, spec.ModPeriodUS = cfg.CompletionEvents, cfg.CQModerationCount, cfg.CQModerationUS
	pl.apply(&spec)
	s, err := c.dev.NewSession(spec)
	if err != nil {
		c.peer.Abort(err)
		return nil, err
	}
	if cfg.OutsNum > 0 {
		remote.RdAtom = min(max(1, remote.RdAtom), cfg.OutsNum)
	}
	if err := s.ConnectPeers([]qp.Endpoint{remote}, cfg.MTUBytes); err != nil {
		c.peer.Abort(err)
		s.Close()
		return nil, err
	}
	r.PathMTU, r.MaxRdAtom = s.PathMTU(), s.RdAtom()
	r.InlineUsed = InlineUsed(cfg, s)
	if err := c.peer.Connect(s.Local()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// finish ends the test with the server: it says why the server spoke during the test
// or the beats stopped, if they did; else it tells the server the test is done (with
// the WRs each QP completed, perQP, for a bandwidth test) and waits for its report.
func (c *Client) finish(cfg result.Config, reply <-chan oob.Received, lost error, perQP []uint64, interrupted bool) (*oob.Report, error) {
	if err := c.peer.Interrupted(reply); err != nil {
		what := "the server ended the test"
		if oob.Lost(err) {
			what = "lost the server during the test"
		}
		return nil, &oob.LostError{Err: fmt.Errorf("%s: %w", what, err)}
	}
	if lost != nil {
		c.peer.Drop()
		return nil, &oob.LostError{Err: fmt.Errorf("lost the server during the test: %w", lost)}
	}
	var done *oob.Done
	if cfg.Test == result.BW {
		done = &oob.Done{Completed: perQP, Interrupted: interrupted}
	}
	if err := c.peer.Finish(done); err != nil {
		return nil, err
	}
	return c.peer.Report(reply, c.peer.Conn.Timeout+reportCheck(cfg))
}

// verified sets the result's verification (--verify): the server's, of what arrived
// there (WRITE), or this side's (READ); and returns merr, or why verification failed.
func verified(r *result.Result, op Op, cfg result.Config, s Session, sl slots, perQP []uint64, rep *oob.Report, merr error) error {
	switch {
	case merr != nil:
		r.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: the run failed"}
	case perQP == nil: // interrupted before the measured run; measured() says so
		r.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: nothing was measured"}
	case op.ToServer:
		r.Verify = rep.Verify
		if v := r.Verify; v != nil { // the server's words, shown to this side's user
			v.Side, v.Detail = text.Clean(v.Side, 16), text.Clean(v.Detail, 300)
		}
	default:
		r.Verify = checkDest(s, cfg, sl, perQP, "client")
	}
	if r.Verify == nil {
		return errors.New("verification: the server sent no verification")
	}
	if !r.Verify.OK && merr == nil && perQP != nil {
		return fmt.Errorf("verification failed at the %s: %s", r.Verify.Side, r.Verify.Detail) // text: cleaned above
	}
	return merr
}

// reverseMeasured says why a bidirectional test's server direction is no measurement.
func reverseMeasured(rv *result.Direction) error {
	switch {
	case rv == nil:
		return errors.New("bidirectional: the server reported no direction of its own")
	case rv.Error != "":
		return fmt.Errorf("bidirectional: the server's direction failed: %s", text.Clean(rv.Error, 300))
	case rv.Messages == 0 || rv.DurationNS <= 0:
		return errors.New("bidirectional: the server's direction measured nothing")
	}
	return nil
}

// counted closes this side's counters at the end of the traffic and judges both
// sides' deltas (the server's from its report).
func (c *Client) counted(r *result.Result, op Op, mine *sideCounters, ended time.Time, rep *oob.Report) {
	var notes []string
	l, note := mine.close(c.dev, ended)
	if note != "" {
		notes = append(notes, "client: "+note)
	}
	if rep.CountersNote != "" {
		notes = append(notes, "server: "+text.Clean(rep.CountersNote, 300))
	}
	remote, why := cleanDeltas(rep.Counters)
	if why != "" {
		notes = append(notes, "server: "+why)
	}
	judge(r, op.Requests, l, remote, notes)
}

// start begins the measured phase: once the warm-up's traffic has left the counters'
// cache, this side reads its counters and tells the server to read its own, and waits
// until it has.
func (c *Client) start(cfg result.Config, local *sideCounters, started <-chan struct{}, reply <-chan oob.Received) error {
	switch {
	case CountersOn(cfg):
		local.open(c.dev, settle(c.probe))
	case !cfg.Bidirectional:
		return nil // nothing for the server to do at the start
	}
	return c.peer.Start(started, reply)
}

// stopOn ends s's loop when the session ends from the server's side (its error, or
// the connection lost): at once, flushing what is in flight (Abort), since the server's
// QPs are gone or going and what is in flight would otherwise wait for the transport's
// retries to run out.
func stopOn(s Session) func(error) { return func(error) { s.Abort() } }

// reportCheck is how much longer than its timeout the server may take to report: it
// checks what arrived at 16 MiB/s or more.
func reportCheck(cfg result.Config) time.Duration {
	return time.Duration(DestBytes(cfg)/(16<<20)) * time.Second
}

// measured says whether r is a measurement: a run that completed nothing, or took no
// time, is an error and never a row of zeros.
func measured(r result.Result) error {
	what := map[result.Test]string{result.BW: "message", result.Lat: "round"}[r.Config.Test]
	switch {
	case r.Iterations == 0 && r.Interrupted:
		return fmt.Errorf("interrupted before a %s was measured", what)
	case r.Iterations == 0:
		return fmt.Errorf("the run completed no %s: nothing was measured", what)
	case r.DurationNS <= 0:
		return fmt.Errorf("the run completed %d %ss in no measurable time: the clock (%s) did not advance", r.Iterations, what, r.Clock)
	case r.Config.Test == result.Lat && r.Lat.Samples == 0:
		return fmt.Errorf("no valid latency sample: all %d went backwards on the %s clock (try --clock monotonic)", r.ClockBackwards, r.Clock)
	}
	return nil
}

// measure runs the warm-up and the measured run, and returns the WRs each QP completed
// in the measured run (bandwidth tests).
func (c *Client) measure(ctx context.Context, op Op, s Session, cfg result.Config, sl slots, pl Placement, r *result.Result, start func() error) ([]uint64, error) {
	warm, timeout := cfg.WarmupIterations, c.peer.Conn.Timeout
	if cfg.Test == result.Lat {
		if warm > 0 {
			res, err := op.ClientLatency(s, cfg, LatRounds{N: warm, Timeout: timeout})
			r.WarmupDone = res.Done
			if err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if err := start(); err != nil {
			return nil, err
		}
		res, err := op.ClientLatency(s, cfg, LatRounds{First: warm, N: cfg.Iterations, Timeout: timeout})
		r.DurationNS = res.DurationNS
		r.Iterations = res.Done
		r.Threads = threadsResult(pl, cfg, verbs.BWResult{Completed: res.Done, DurationNS: res.DurationNS,
			Threads: []verbs.ThreadRun{{QPs: qp.Block{N: 1}, CPUs: res.CPUs, RanOn: res.RanOn, Completed: res.Done, DurationNS: res.DurationNS}}}, s.MemNode())
		r.LatKind = op.LatKind
		return nil, errors.Join(err, setLatency(r, res.Lat))
	}
	p := bwParams(op, cfg, r.InlineUsed, timeout)
	// --verify: the warm-up moves a pattern of its own; the measured run's patterns
	// differ per source slot (see slots).
	if cfg.Verify && op.ToServer {
		fillWarm(s, cfg, sl, sl.src)
	}
	if warm > 0 {
		p.Iters = warm
		res, err := s.Bandwidth(p)
		for _, n := range res.PerQP {
			r.WarmupDone += n
		}
		r.WarmupDone /= uint64(cfg.NumQPs) // reported per QP, as the plan gives it
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.Verify {
		if op.ToServer {
			fillSource(s, cfg, sl)
		} else {
			fillWarm(s, cfg, sl, sl.dst) // what the warm-up read is not evidence
		}
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	if err := start(); err != nil {
		return nil, err
	}
	p.Iters = cfg.Iterations
	if cfg.DurationS > 0 {
		p.Duration = time.Duration(cfg.DurationS * float64(time.Second))
	}
	iv := c.intervals(cfg)
	if iv != nil {
		p.Interval, p.Progress = iv.every, iv.tick
		iv.begin()
	}
	res, err := s.Bandwidth(p)
	if iv != nil {
		r.Intervals = iv.summary()
	}
	r.SetThroughput(res.Completed, cfg.MsgSizeBytes, res.DurationNS)
	r.SetRampShare(cfg, r.MaxRdAtom)
	r.SetSteady(res.SteadyWRs, cfg.MsgSizeBytes, res.SteadyNS)
	r.LatKind = "completion_under_load"
	r.CQEvents = res.Events
	r.MR = mrRun(cfg, res)
	r.QPs = result.NewQPShares(cfg, res.PerQP, res.DurationNS)
	r.Threads = threadsResult(pl, cfg, res, s.MemNode())
	return res.PerQP, errors.Join(err, setLatency(r, res.Lat))
}

func setLatency(r *result.Result, s verbs.Samples) error {
	l, h, err := result.NewLatency(s.Hist, s.Moments)
	r.Lat, r.Histogram, r.ClockBackwards = l, h, s.Backwards
	return err
}
