package pairs

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// oncePerRound fails when a member is in two tests of one round, or a test is of a
// member with itself or outside the fleet.
func oncePerRound(t *testing.T, what string, n int, rounds []Round) {
	t.Helper()
	for ri, r := range rounds {
		seen := map[int]bool{}
		for _, p := range r {
			if p.A == p.B || p.A < 0 || p.B < 0 || p.A >= n || p.B >= n {
				t.Errorf("%s n=%d round %d: bad pair %v", what, n, ri, p)
			}
			if seen[p.A] || seen[p.B] {
				t.Errorf("%s n=%d round %d: a member is in two tests: %v", what, n, ri, r)
			}
			seen[p.A], seen[p.B] = true, true
		}
	}
}

func TestPairwise(t *testing.T) {
	for n := 2; n <= 17; n++ {
		rounds, err := Schedule("pairwise", n)
		if err != nil {
			t.Fatal(err)
		}
		wantRounds := n - 1
		if n%2 == 1 {
			wantRounds = n
		}
		if len(rounds) != wantRounds {
			t.Errorf("n=%d: %d rounds, want %d", n, len(rounds), wantRounds)
		}
		oncePerRound(t, "pairwise", n, rounds)
		// Every unordered pair exactly once.
		count := map[[2]int]int{}
		client := make([]int, n)
		for _, r := range rounds {
			if len(r) != n/2 {
				t.Errorf("n=%d: a round of %d tests, want %d: %v", n, len(r), n/2, r)
			}
			for _, p := range r {
				count[[2]int{min(p.A, p.B), max(p.A, p.B)}]++
				client[p.A]++
			}
		}
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if c := count[[2]int{i, j}]; c != 1 {
					t.Errorf("n=%d: pair %d-%d runs %d times", n, i, j, c)
				}
			}
		}
		if len(count) != n*(n-1)/2 {
			t.Errorf("n=%d: %d distinct pairs, want %d", n, len(count), n*(n-1)/2)
		}
		// Odd n: one bye a round, each member's once; even n: none.
		byes := make([]int, n)
		for ri, r := range rounds {
			idle := r.Idle(n)
			if len(idle) != n%2 {
				t.Errorf("n=%d round %d: idle %v, want %d", n, ri, idle, n%2)
			}
			for _, i := range idle {
				byes[i]++
			}
		}
		for i, b := range byes {
			if b != n%2 {
				t.Errorf("n=%d: member %d has %d byes, want %d", n, i, b, n%2)
			}
		}
		// Each member is the client of half its tests: (n-1)/2 for odd n; n/2 for
		// even ranks and n/2-1 for odd ranks for even n.
		for i, c := range client {
			want := (n - 1) / 2
			if n%2 == 0 {
				want = n/2 - i%2
			}
			if c != want {
				t.Errorf("n=%d: member %d is client %d times, want %d", n, i, c, want)
			}
		}
	}
}

func TestPairwiseSmall(t *testing.T) {
	got, _ := Schedule("pairwise", 2)
	if want := []Round{{{0, 1}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("n=2: %v, want %v", got, want)
	}
	got, _ = Schedule("pairwise", 3)
	if want := []Round{{{1, 2}}, {{2, 0}}, {{0, 1}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("n=3: %v, want %v (member r has the bye in round r)", got, want)
	}
}

func TestRing(t *testing.T) {
	for n := 2; n <= 17; n++ {
		rounds, err := Schedule("ring", n)
		if err != nil {
			t.Fatal(err)
		}
		want := 2 + n%2
		if len(rounds) != want {
			t.Errorf("n=%d: %d rounds, want %d", n, len(rounds), want)
		}
		oncePerRound(t, "ring", n, rounds)
		links := map[Pair]int{}
		for _, r := range rounds {
			for _, p := range r {
				links[p]++
			}
		}
		if len(links) != n {
			t.Errorf("n=%d: %d links, want %d: %v", n, len(links), n, rounds)
		}
		for i := 0; i < n; i++ {
			if c := links[Pair{i, (i + 1) % n}]; c != 1 {
				t.Errorf("n=%d: link %d -> %d runs %d times", n, i, (i+1)%n, c)
			}
		}
	}
	got, _ := Schedule("ring", 5)
	if want := []Round{{{0, 1}, {2, 3}}, {{1, 2}, {3, 4}}, {{4, 0}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ring 5: %v, want %v", got, want)
	}
	got, _ = Schedule("ring", 2)
	if want := []Round{{{0, 1}}, {{1, 0}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ring 2: %v, want %v", got, want)
	}
}

func TestFanoutIncast(t *testing.T) {
	got, err := Schedule("fanout:2", 4)
	if want := []Round{{{2, 0}}, {{2, 1}}, {{2, 3}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("fanout:2 of 4: %v %v, want %v", got, err, want)
	}
	p, _ := ParsePattern("fanout:2", 4)
	if !p.FanRound || p.Root != 2 || p.String() != "fanout:2" {
		t.Errorf("fanout:2: %+v", p)
	}
	got, err = Schedule("incast:0", 4)
	if want := []Round{{{1, 0}, {2, 0}, {3, 0}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("incast:0 of 4: %v %v, want %v", got, err, want)
	}
	if p, _ := ParsePattern("incast:0", 4); p.FanRound {
		t.Errorf("incast sets FanRound: %+v", p)
	}
	for n := 2; n <= 12; n++ {
		for r := 0; r < n; r++ {
			fo, _ := Schedule("fanout:"+strconv.Itoa(r), n)
			oncePerRound(t, "fanout", n, fo)
			if len(fo) != n-1 {
				t.Errorf("fanout:%d of %d: %d rounds", r, n, len(fo))
			}
			in, _ := Schedule("incast:"+strconv.Itoa(r), n)
			if len(in) != 1 || len(in[0]) != n-1 || len(in[0].Idle(n)) != 0 {
				t.Errorf("incast:%d of %d: %v", r, n, in)
			}
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		n       int
		want    string
	}{
		{"pairwise", 1, "at least 2 hosts"},
		{"ring", 0, "at least 2 hosts"},
		{"mesh", 4, `unknown pattern "mesh": want one of pairwise, ring, fanout:R, incast:R`},
		{"", 4, `unknown pattern ""`},
		{"Pairwise", 4, "unknown pattern"},
		{"pairwise:1", 4, "pairwise takes no rank"},
		{"fanout", 4, "fanout needs a rank, fanout:R"},
		{"incast:", 4, `rank "" is not a number`},
		{"incast:x", 4, `rank "x" is not a number`},
		{"fanout:4", 4, "rank 4 is out of range: a fleet of 4 has ranks 0 to 3"},
		{"incast:-1", 4, "rank -1 is out of range"},
	} {
		if got, err := Schedule(tc.pattern, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Schedule(%q, %d) = %v, %v; want an error with %q", tc.pattern, tc.n, got, err, tc.want)
		}
	}
}
