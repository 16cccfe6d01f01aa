package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Measurer is a search's engine (plan.Measurer: a sweep, a sweep --mr, a hunt) on
// bench's clients. The plan picks the client: a plan of one server (Peers 0) runs on
// Client, the session of the first server; a fan-out of k (Peers k) on a Fan of the
// first k servers, connected for that run alone, as 'write bw a,b,c' runs.
//
// What a lost connection means differs by client, on purpose: losing Client's session
// ends the search (*plan.SessionLostError: nothing more can be measured over it), while
// a fan-out that cannot connect or loses a server is that run's error, a failed point,
// and the next fan-out connects afresh. Any other error is the run's. The wall time a
// run costs (a fan-out's connecting included) is the search's to take, around Measure.
type Measurer struct {
	// Client is the first server's session. A plan that asks for a TCP baseline
	// (--baseline tcp) has it measured after its run, on Client (Client.Baseline); a
	// failed baseline stays in the result's Baseline.Error, the run still a measurement.
	Client *Client
	// Ops are the operations by name (ops.All), as a Server's.
	Ops map[string]Op
	// Fan connects the first k servers for a fan-out plan (FanDialer); nil: the search
	// has one server, and a fan-out plan is the run's error.
	Fan func(ctx context.Context, k int) (*Fan, error)
}

// Measure runs cfg (plan.Measurer).
func (m Measurer) Measure(ctx context.Context, cfg result.Config) (result.Result, error) {
	if cfg.Peers > 0 {
		return m.fanOut(ctx, cfg)
	}
	op, err := m.op(cfg)
	if err != nil {
		return result.Result{Config: cfg, Error: err.Error()}, err
	}
	r, err := m.Client.Run(ctx, op, cfg)
	if err == nil && cfg.Baseline == "tcp" && !r.Interrupted {
		// Only a lost connection makes the baseline the run's error (and a lost
		// session the search's end): a refused or failed one is the result's.
		if berr := m.Client.Baseline(ctx, &r); berr != nil && oob.Lost(berr) {
			err = berr
		}
	}
	return r, plan.SessionLost(err)
}

// fanOut runs a fan-out plan on the first cfg.Peers servers, connected for it alone.
func (m Measurer) fanOut(ctx context.Context, cfg result.Config) (result.Result, error) {
	op, err := m.op(cfg)
	if err == nil && m.Fan == nil {
		err = fmt.Errorf("a fan-out to %d servers: this search has one server", cfg.Peers)
	}
	if err != nil {
		return result.Result{Config: cfg, Error: err.Error()}, err
	}
	f, err := m.Fan(ctx, cfg.Peers)
	if err != nil {
		return result.Result{}, err
	}
	defer f.Close()
	return f.Run(ctx, op, cfg)
}

// op is the operation cfg names.
func (m Measurer) op(cfg result.Config) (Op, error) {
	op, ok := m.Ops[cfg.Op]
	if !ok {
		return Op{}, fmt.Errorf("unknown operation %s: want write or read", text.Quote(cfg.Op))
	}
	return op, nil
}

// FanDialer is Measurer.Fan over the servers addrs (host:port, as SplitServers gives
// them): DialFan to the first k, with this side's device, the token and the timeout.
func FanDialer(addrs []string, local Local, token string, timeout time.Duration) func(ctx context.Context, k int) (*Fan, error) {
	return func(ctx context.Context, k int) (*Fan, error) {
		if k < 1 || k > len(addrs) {
			return nil, fmt.Errorf("a fan-out to %d servers: %d given", k, len(addrs))
		}
		return DialFan(ctx, addrs[:k], local, token, timeout)
	}
}

// Baseline (--baseline tcp) measures the transfer of r, a bandwidth run on c, over
// TCP: the messages the run completed (all QPs), of its size, so its bytes exactly. A
// failed baseline keeps the RDMA numbers and says why in r.Baseline.Error; it is also
// the error returned (the caller decides what it means: a single run's error, a
// search's failed point only when the connection is lost).
func (c *Client) Baseline(ctx context.Context, r *result.Result) error {
	msgs := r.Iterations
	if size := uint64(r.Config.MsgSizeBytes); size > 0 {
		msgs = min(msgs, r.Bytes/size) // never more than the RDMA run moved
	}
	// TCP may be far slower than the RDMA run (small messages, a slow host): its bound
	// grows with the run, at least the default.
	c.BaselineLimit = max(DefaultBaselineLimit, 100*time.Duration(r.DurationNS))
	b, err := c.TCPBaseline(ctx, r.Config, msgs)
	b.Compare(r.BWGbps)
	r.Baseline = b
	return err
}
