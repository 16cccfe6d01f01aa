package pairs

import (
	"errors"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/text"

	"github.com/rdmabench/rdmabench/result"
)

// ErrNoFleet is a results stream that holds no fleet's results.
var ErrNoFleet = errors.New("no fleet results (results with a \"fleet\" field) to judge")

// MaxMembers bounds a fleet: its ranks run from 0 to MaxMembers-1, whether they come
// from a launcher or from a results file (whose matrix is MaxMembers^2 cells at most).
const MaxMembers = 4096

// Pair is one test between two members, by rank: A is the client, B the server.
type Pair struct {
	A, B int
}

// Round is the tests that run at the same time. Outside incast no member is in two
// tests of one round.
type Round []Pair

// Idle is the members of a fleet of n that have no test in the round, ascending: the
// bye of a pairwise round for odd n, the other end of the ring's rounds.
func (r Round) Idle(n int) []int {
	busy := make([]bool, n)
	for _, p := range r {
		if p.A >= 0 && p.A < n {
			busy[p.A] = true
		}
		if p.B >= 0 && p.B < n {
			busy[p.B] = true
		}
	}
	var idle []int
	for i, b := range busy {
		if !b {
			idle = append(idle, i)
		}
	}
	return idle
}

// Outcome is a fleet run: every pair's first result, and the verdicts after the retests.
type Outcome struct {
	Hosts    []string
	Results  []PairResult // first pass, in schedule order
	Verdicts []Verdict
	Retests  int // retest runs made
}

// Bad is how many pairs were bad in the first pass and in every retest.
func (o Outcome) Bad() int {
	n := 0
	for _, v := range o.Verdicts {
		if v.Bad {
			n++
		}
	}
	return n
}

// PairOf is what the outlier rules judge of a result: Gb/s for a bandwidth test,
// the p50 for a latency test (0 when unsupported: then the pair measured nothing).
func PairOf(p Pair, r result.Result) PairResult {
	pr := PairResult{A: p.A, B: p.B, Err: text.Clean(r.Error, 300)} // a results file is input
	if r.Config.Test == result.Lat {
		if r.Lat.P50 != nil {
			pr.LatP50NS = *r.Lat.P50
		} else if pr.Err == "" {
			pr.Err = "no supported p50"
		}
		return pr
	}
	pr.Gbps = r.BWGbps
	return pr
}

// FromResults rebuilds a fleet run from its results stream (report matrix): the hosts
// by rank, the first pass, and the verdicts with the recorded retests applied.
func FromResults(rs []result.Result, opts OutlierOpts) (Outcome, error) {
	var out Outcome
	var first []PairResult
	var retests []PairResult
	maxRetest := 0
	for i, r := range rs {
		f := r.Fleet
		if f == nil {
			continue
		}
		if f.A < 0 || f.B < 0 || f.A >= MaxMembers || f.B >= MaxMembers || f.A == f.B {
			return Outcome{}, fmt.Errorf("result %d: fleet pair %d -> %d: ranks run from 0 to %d, and a pair is two members", i+1, f.A, f.B, MaxMembers-1)
		}
		for len(out.Hosts) <= max(f.A, f.B) {
			out.Hosts = append(out.Hosts, "")
		}
		out.Hosts[f.A], out.Hosts[f.B] = text.Clean(f.HostA, 64), text.Clean(f.HostB, 64) // a results file is input
		pr := PairOf(Pair{A: f.A, B: f.B}, r)
		if f.Retest > 0 {
			retests = append(retests, pr)
			maxRetest = max(maxRetest, f.Retest)
			continue
		}
		first = append(first, pr)
	}
	if len(first) == 0 {
		return out, ErrNoFleet
	}
	out.Results = first
	rt := NewRetests(first, opts, maxRetest)
	for _, pr := range retests {
		if _, err := rt.Record(pr); err != nil {
			return out, err
		}
		out.Retests++
	}
	out.Verdicts = rt.Final()
	return out, nil
}
