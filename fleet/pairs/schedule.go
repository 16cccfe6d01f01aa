package pairs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The patterns' names.
const (
	Pairwise = "pairwise"
	Ring     = "ring"
	Fanout   = "fanout"
	Incast   = "incast"
)

// Patterns is what --pattern accepts, for help texts.
const Patterns = "pairwise, ring, fanout:R, incast:R"

// Pattern is a parsed --pattern.
type Pattern struct {
	Name string // Pairwise, Ring, Fanout or Incast
	Root int    // fanout and incast: the rank R everything goes from or to; otherwise 0

	// FanRound: the schedule's rounds, one pair each, may instead run as one round in
	// which Root is the client of all the others at once (rdmabench's multi-server fan
	// run: one QP per server, WRITE broadcasts, READ gathers). Only fanout sets it;
	// whether to use it is the coordinator's choice.
	FanRound bool
}

func (p Pattern) String() string {
	if p.Name == Fanout || p.Name == Incast {
		return p.Name + ":" + strconv.Itoa(p.Root)
	}
	return p.Name
}

// ParsePattern parses a --pattern for a fleet of n members. Every error it returns is
// a usage error: an unknown pattern, a missing, malformed or out-of-range rank R,
// n < 2.
func ParsePattern(s string, n int) (Pattern, error) {
	if n < 2 {
		return Pattern{}, fmt.Errorf("a fleet of %d: a pattern needs at least 2 hosts", n)
	}
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case Pairwise, Ring:
		if hasArg {
			return Pattern{}, fmt.Errorf("pattern %q: %s takes no rank", s, name)
		}
		return Pattern{Name: name}, nil
	case Fanout, Incast:
		if !hasArg {
			return Pattern{}, fmt.Errorf("pattern %q: %s needs a rank, %s:R", s, name, name)
		}
		r, err := strconv.Atoi(arg)
		if err != nil {
			return Pattern{}, fmt.Errorf("pattern %q: rank %q is not a number", s, arg)
		}
		if r < 0 || r >= n {
			return Pattern{}, fmt.Errorf("pattern %q: rank %d is out of range: a fleet of %d has ranks 0 to %d", s, r, n, n-1)
		}
		return Pattern{Name: name, Root: r, FanRound: name == Fanout}, nil
	}
	return Pattern{}, fmt.Errorf("unknown pattern %q: want one of %s", s, Patterns)
}

// Schedule is the rounds of tests that pattern runs in a fleet of n members, in the
// order to run them; every error is a usage error (ParsePattern).
//
//   - pairwise: every unordered pair exactly once, as a round-robin tournament (the
//     circle method): n-1 rounds of n/2 tests for even n; n rounds of (n-1)/2 tests for
//     odd n, in each of which one member has a bye (Round.Idle), every member once. No
//     member is in two tests of a round. Of ranks i < j, the lower is the client when
//     j-i is odd and the higher when j-i is even, so each member is the client of half
//     its tests: exactly (n-1)/2 for odd n; n/2 for even ranks and n/2-1 for odd ranks
//     when n is even.
//   - ring: i -> (i+1) mod n, each member client of its successor once. Round one is
//     the even i, round two the odd i; for odd n the last link, n-1 -> 0, has a third
//     round of its own (it shares a member with 0 -> 1). No member is in two tests of a
//     round. For n = 2 the ring is 0 -> 1, then 1 -> 0.
//   - fanout:R: R is the client of every other member, one test per round, the others
//     ascending (n-1 rounds). Pattern.FanRound tells the coordinator it may run them as
//     one fan round instead.
//   - incast:R: every other member is a client of R, all in one round: the point of an
//     incast is that they send at once. This is the one exception to "no member in two
//     tests of a round": R is the server of n-1 tests in it.
func Schedule(pattern string, n int) ([]Round, error) {
	p, err := ParsePattern(pattern, n)
	if err != nil {
		return nil, err
	}
	return p.Schedule(n), nil
}

// Schedule is p's rounds for a fleet of n (n >= 2, and Root below n, as ParsePattern
// checked).
func (p Pattern) Schedule(n int) []Round {
	switch p.Name {
	case Pairwise:
		return pairwise(n)
	case Ring:
		return ring(n)
	case Fanout:
		var rounds []Round
		for i := 0; i < n; i++ {
			if i != p.Root {
				rounds = append(rounds, Round{{p.Root, i}})
			}
		}
		return rounds
	case Incast:
		var r Round
		for i := 0; i < n; i++ {
			if i != p.Root {
				r = append(r, Pair{i, p.Root})
			}
		}
		return []Round{r}
	}
	return nil
}

// pairwise is the circle method: m = n rounded up to even seats, seat m-1 fixed, the
// other seats turning one place each round; seat k plays seat m-1-k. For odd n the
// member in the extra seat (rank n) is a bye.
func pairwise(n int) []Round {
	m := n + n%2
	rounds := make([]Round, 0, m-1)
	seat := make([]int, m)
	for r := 0; r < m-1; r++ {
		for k := 0; k < m-1; k++ {
			seat[k] = (r + k) % (m - 1)
		}
		seat[m-1] = m - 1
		var round Round
		for k := 0; k < m/2; k++ {
			i, j := seat[k], seat[m-1-k]
			if i >= n || j >= n {
				continue // the bye
			}
			round = append(round, orient(i, j))
		}
		slices.SortFunc(round, func(x, y Pair) int { return min(x.A, x.B) - min(y.A, y.B) })
		rounds = append(rounds, round)
	}
	return rounds
}

// orient picks the client of the pair {i, j}: of lo < hi, lo when hi-lo is odd, hi
// when it is even. Each rank is the client of every other rank at an odd distance
// above it and an even distance below it, which is half its pairs (within one).
func orient(i, j int) Pair {
	lo, hi := min(i, j), max(i, j)
	if (hi-lo)%2 == 1 {
		return Pair{lo, hi}
	}
	return Pair{hi, lo}
}

// ring is i -> i+1 mod n: the even i, then the odd i, then (odd n) n-1 -> 0 alone.
func ring(n int) []Round {
	var even, odd Round
	for i := 0; i < n; i++ {
		if n%2 == 1 && i == n-1 {
			break
		}
		if i%2 == 0 {
			even = append(even, Pair{i, (i + 1) % n})
		} else {
			odd = append(odd, Pair{i, (i + 1) % n})
		}
	}
	rounds := []Round{even, odd}
	if n%2 == 1 {
		rounds = append(rounds, Round{{n - 1, 0}})
	}
	return rounds
}
