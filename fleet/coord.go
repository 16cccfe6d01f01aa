package fleet

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// Members collects the members' registrations on the coordinator (rank 0): each
// member's agent address by rank.
type Members struct {
	mu    sync.Mutex
	addrs []string
	left  int
	all   chan struct{}
}

// NewMembers expects world members; rank 0 (the coordinator's own agent) is at self.
func NewMembers(world int, self string) *Members {
	m := &Members{addrs: make([]string, world), left: world - 1, all: make(chan struct{})}
	m.addrs[0] = self
	if m.left == 0 {
		close(m.all)
	}
	return m
}

// Register takes a member's registration (bench.Server.OnRegister): a rank outside the
// world, a member that believes in another world size, or a rank taken by another
// address is refused, naming it.
func (m *Members) Register(addr string, r oob.Register) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case r.World != len(m.addrs):
		return fmt.Errorf("rank %d says the fleet has %d members, the coordinator %d: start every member with the same world size", r.Rank, r.World, len(m.addrs))
	case r.Rank < 1 || r.Rank >= len(m.addrs):
		return fmt.Errorf("rank %d: want 1 to %d (rank 0 is the coordinator)", r.Rank, len(m.addrs)-1)
	case m.addrs[r.Rank] != "" && m.addrs[r.Rank] != addr:
		return fmt.Errorf("rank %d is already %s; %s claims it too: every member needs its own rank", r.Rank, m.addrs[r.Rank], addr)
	case m.addrs[r.Rank] == addr:
		return nil // registered again (a retry)
	}
	m.addrs[r.Rank] = addr
	if m.left--; m.left == 0 {
		close(m.all)
	}
	return nil
}

// Wait returns every member's address once all have registered, or an error naming
// the ranks missing after timeout.
func (m *Members) Wait(ctx context.Context, timeout time.Duration) ([]string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.all:
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.addrs), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []string
	for r, a := range m.addrs {
		if a == "" {
			missing = append(missing, fmt.Sprint(r))
		}
	}
	return nil, fmt.Errorf("after %v, ranks %s have not registered (are they running, with the same --coordinator, token and --world?)", timeout, strings.Join(missing, ", "))
}

// Coordinator runs a fleet's tests from rank 0 through the members' agents.
type Coordinator struct {
	Pattern  pairs.Pattern
	Plan     result.Config // the test every pair runs
	Retest   int           // bad pairs are run again, alone, this many times
	Outliers pairs.OutlierOpts
	Token    string
	Timeout  time.Duration // each handshake step and message
	MaxTest  time.Duration // the longest a pair's test may take (a test of iterations)
	Me       result.Device // what the coordinator says of itself in its hellos
	// Dial reaches an agent (nil: TCP); Record gets every result as it comes, with its
	// Fleet field set; Log reports progress (may be nil).
	Dial   func(ctx context.Context, addr string) (net.Conn, error)
	Record func(result.Result) error
	Log    func(format string, args ...any)
}

// Run runs the schedule over hosts (index = rank): the pairs of a round at once, the
// rounds one after the other, then the retests of the bad pairs one at a time.
func (c *Coordinator) Run(ctx context.Context, hosts []string) (pairs.Outcome, error) {
	out := pairs.Outcome{Hosts: hosts}
	for ri, round := range c.Pattern.Schedule(len(hosts)) {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		prs, err := c.round(ctx, hosts, round, ri, 0)
		out.Results = append(out.Results, prs...)
		if err != nil {
			return out, err
		}
	}
	rt := pairs.NewRetests(out.Results, c.Outliers, c.Retest)
	for k := 1; ; k++ {
		rounds := rt.Rounds()
		if len(rounds) == 0 || ctx.Err() != nil {
			break
		}
		for _, round := range rounds {
			prs, err := c.round(ctx, hosts, round, -1, k)
			if err != nil {
				return out, err
			}
			for _, pr := range prs {
				out.Retests++
				if _, err := rt.Record(pr); err != nil {
					return out, err
				}
			}
		}
	}
	out.Verdicts = rt.Final()
	return out, ctx.Err()
}

// round runs one round's pairs at once; retest > 0 marks a retest (round -1).
func (c *Coordinator) round(ctx context.Context, hosts []string, round pairs.Round, index, retest int) ([]pairs.PairResult, error) {
	prs := make([]pairs.PairResult, len(round))
	rs := make([]result.Result, len(round))
	var wg sync.WaitGroup
	for i, p := range round {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = c.pair(ctx, hosts, p)
		}()
	}
	wg.Wait()
	for i, p := range round {
		r := rs[i]
		r.Fleet = &result.FleetPair{Pattern: c.Pattern.String(), Round: index, Retest: retest, A: p.A, B: p.B, HostA: hosts[p.A], HostB: hosts[p.B]}
		prs[i] = pairs.PairOf(p, r)
		if c.Log != nil {
			c.Log("%s", describe(r, prs[i]))
		}
		if c.Record != nil {
			if err := c.Record(r); err != nil {
				return prs, err
			}
		}
	}
	return prs, nil
}

// pair runs one test: the agent of p.A measures against the agent of p.B.
func (c *Coordinator) pair(ctx context.Context, hosts []string, p pairs.Pair) result.Result {
	a, err := bench.DialAgent(ctx, hosts[p.A], c.Me, c.Token, c.Timeout, c.Dial)
	if err != nil {
		return result.Result{SchemaVersion: result.SchemaVersion, Time: time.Now().UTC(), Server: hosts[p.B], Config: c.Plan, Error: err.Error()}
	}
	defer a.Close()
	r, err := a.Run(ctx, hosts[p.B], c.Plan, c.MaxTest)
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	return r
}

func describe(r result.Result, pr pairs.PairResult) string {
	f := r.Fleet
	what := fmt.Sprintf("round %d", f.Round)
	ha, hb := text.Clean(f.HostA, 64), text.Clean(f.HostB, 64)
	if f.Retest > 0 {
		what = fmt.Sprintf("retest %d", f.Retest)
	}
	switch {
	case pr.Err != "":
		return fmt.Sprintf("%s: %d -> %d (%s -> %s): failed: %s", what, f.A, f.B, ha, hb, text.Clean(pr.Err, 300))
	case pr.LatP50NS > 0:
		return fmt.Sprintf("%s: %d -> %d (%s -> %s): p50 %.2f us", what, f.A, f.B, ha, hb, float64(pr.LatP50NS)/1e3)
	}
	return fmt.Sprintf("%s: %d -> %d (%s -> %s): %.3f Gb/s", what, f.A, f.B, ha, hb, pr.Gbps)
}

// End tells every member's agent (ranks 1..) that the fleet is over.
func (c *Coordinator) End(ctx context.Context, hosts []string) error {
	var errs []string
	for r, h := range hosts[1:] {
		a, err := bench.DialAgent(ctx, h, c.Me, c.Token, c.Timeout, c.Dial)
		if err == nil {
			err = a.EndFleet()
			a.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("rank %d (%s): %v", r+1, h, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("could not tell every member the fleet is over: %s", strings.Join(errs, "; "))
	}
	return nil
}
