package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Version is rdmabench's version, set by cmd/rdmabench.
var Version = "dev"

// Local says which device, port and GID a side uses.
type Local struct {
	Device   string
	Port     int
	GIDIndex int // -1: pick like perftest
}

// Client is one connection to a server; it runs any number of tests over it.
type Client struct {
	Addr   string
	conn   *oob.Conn
	dev    *verbs.Device
	me     result.Device
	server result.Device
}

// Dial opens the local device, connects to the server and exchanges hellos.
func Dial(ctx context.Context, addr string, local Local, token string, timeout time.Duration) (_ *Client, err error) {
	dev, err := verbs.Open(local.Device, local.Port, local.GIDIndex)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			dev.Close()
		}
	}()
	d := net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the rdmabench server at %s: %w (is 'rdmabench server' running there?)", addr, err)
	}
	c := &Client{Addr: addr, conn: oob.NewConn(nc, timeout), dev: dev, me: identity(dev)}
	if err := c.conn.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Tool: Version, Host: c.me.Host, Token: token, Device: c.me}}); err != nil {
		nc.Close()
		return nil, err
	}
	m, err := c.conn.Expect(oob.THello)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	c.server = m.Hello.Device
	return c, nil
}

// Device is the client's device identity.
func (c *Client) Device() result.Device { return c.me }

// ServerDevice is the server's device identity, from its hello.
func (c *Client) ServerDevice() result.Device { return c.server }

// Close ends the session politely and releases the device.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	_ = c.conn.Send(oob.Msg{Type: oob.TBye})
	return errors.Join(c.conn.Close(), c.dev.Close())
}

func identity(d *verbs.Device) result.Device {
	host, _ := os.Hostname()
	return result.Device{
		Name: d.Info.Name, Driver: d.Info.Driver, Model: d.Info.Model, VendorID: d.Info.VendorID,
		VendorPartID: d.Info.VendorPartID, FirmwareVer: d.Info.FirmwareVer, NodeGUID: d.Info.NodeGUID,
		Port: d.Port.Port, LinkLayer: d.Port.LinkLayer, RateGbps: d.Port.RateGbps, ActiveMTU: d.Port.ActiveMTU,
		GIDIndex: d.GID.Index, GIDType: d.GID.Type, Host: host,
	}
}

// Run runs one test. Cancelling ctx stops the measurement early; the result then has
// Interrupted set and holds what was measured. An error after measuring still returns
// the result measured so far.
func (c *Client) Run(ctx context.Context, op Op, cfg result.Config) (result.Result, error) {
	cfg.Op = string(op.Name)
	Defaults(&cfg)
	r := result.Result{
		SchemaVersion: result.SchemaVersion, ToolVersion: Version, Time: time.Now().UTC(),
		Server: c.Addr, Client: c.me, ServerDevice: c.server, Config: cfg,
	}
	if err := Validate(cfg); err != nil {
		return r, err
	}
	if err := c.conn.Send(oob.Msg{Type: oob.TPlan, Plan: &cfg}); err != nil {
		return r, err
	}
	m, err := c.conn.Expect(oob.TEndpoint)
	if err != nil {
		return r, fmt.Errorf("server refused the plan: %w", err)
	}
	spec := op.ClientSpec(cfg)
	spec.Events, spec.ModCount, spec.ModPeriodUS = cfg.CompletionEvents, cfg.CQModerationCount, cfg.CQModerationUS
	s, err := c.dev.NewSession(spec)
	if err != nil {
		c.conn.SendError(err)
		return r, err
	}
	defer s.Close()
	if err := s.Connect(*m.Endpoint, cfg.MTUBytes); err != nil {
		c.conn.SendError(err)
		return r, err
	}
	r.PathMTU, r.MaxRdAtom = s.PathMTU(), s.RdAtom()
	r.InlineUsed = Inline(cfg) && s.MaxInline() >= cfg.MsgSizeBytes
	if cfg.Verify && op.VerifyAtServer {
		s.Fill(seedOf(cfg), 0, cfg.MsgSizeBytes)
	}
	local := s.Local()
	if err := c.conn.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local}); err != nil {
		return r, err
	}
	if _, err := c.conn.Expect(oob.TReady); err != nil {
		return r, err
	}
	r.Clock = verbs.Clock()
	stop := context.AfterFunc(ctx, s.Stop)
	merr := measure(ctx, op, s, cfg, &r)
	stop()
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	// The server's side: stop its responder, verify, report.
	if err := c.conn.Send(oob.Msg{Type: oob.TDone}); err != nil {
		return r, errors.Join(merr, err)
	}
	rep, err := c.conn.ExpectWithin(oob.TReport, c.conn.Timeout+time.Duration(cfg.MsgSizeBytes/(1<<20))*time.Second)
	if err != nil {
		return r, errors.Join(merr, err)
	}
	if cfg.Verify {
		if op.VerifyAtServer {
			r.Verify = rep.Report.Verify
		} else if merr == nil {
			bad := s.Check(seedOf(cfg), 0, cfg.MsgSizeBytes)
			r.Verify = &result.Verify{Side: "client", CheckedBytes: cfg.MsgSizeBytes, OK: bad < 0, FirstBadOffset: bad}
		}
		if r.Verify != nil && !r.Verify.OK {
			merr = errors.Join(merr, fmt.Errorf("verification failed at the %s: byte %d of %d differs from the pattern", r.Verify.Side, r.Verify.FirstBadOffset, r.Verify.CheckedBytes))
		}
	}
	if merr != nil {
		r.Error = merr.Error()
	}
	return r, merr
}

// seedOf is the verification pattern's seed; both sides derive it from the plan.
func seedOf(c result.Config) uint32 {
	return uint32(c.MsgSizeBytes)*2654435761 ^ uint32(c.BufOffsetBytes)
}

func measure(ctx context.Context, op Op, s *verbs.Session, cfg result.Config, r *result.Result) error {
	warm := cfg.WarmupIterations
	if cfg.Test == "lat" {
		if warm > 0 {
			if _, err := op.ClientLatency(s, cfg, 0, warm); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			r.WarmupDone = warm
		}
		if ctx.Err() != nil {
			return nil
		}
		t0 := verbs.Now()
		lat, err := op.ClientLatency(s, cfg, warm, cfg.Iterations)
		r.DurationNS = verbs.Now() - t0
		r.Iterations = uint64(len(lat))
		r.LatKind = op.LatKind
		return errors.Join(err, setLatency(r, lat))
	}
	p := verbs.BWParams{
		Op: op.Name, Size: cfg.MsgSizeBytes, SQDepth: cfg.SQDepth, PostList: cfg.PostList,
		CQMod: cfg.CQMod, Inline: r.InlineUsed, Events: cfg.CompletionEvents,
	}
	if warm > 0 {
		p.Iters = warm
		if _, err := s.Bandwidth(p); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		r.WarmupDone = warm
	}
	if ctx.Err() != nil {
		return nil
	}
	p.Iters = cfg.Iterations
	p.MaxSamples = int(min(cfg.Iterations/uint64(cfg.CQMod)+2, 1<<22)) * cfg.NumQPs
	if cfg.DurationS > 0 {
		p.Iters = 1 << 62
		p.DeadlineNS = verbs.Now() + int64(cfg.DurationS*1e9)
		p.MaxSamples = 1 << 22
	}
	res, err := s.Bandwidth(p)
	r.SetThroughput(res.Completed, cfg.MsgSizeBytes, res.DurationNS)
	r.LatKind = "completion_under_load"
	r.CQEvents = res.Events
	if max := uint64(p.MaxSamples); res.Completed/uint64(cfg.CQMod) > max {
		r.SamplesDropped = res.Completed/uint64(cfg.CQMod) - max
	}
	return errors.Join(err, setLatency(r, res.Lat))
}

func setLatency(r *result.Result, samples []int64) error {
	l, h, err := result.NewLatency(samples)
	r.Lat, r.Histogram = l, h
	return err
}
