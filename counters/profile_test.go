package counters_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
)

// Every counter of each fixture is named by its NIC's profile (info counts as named
// only when listed), so a class is a decision, not a default.
func TestProfilesNameEveryFixtureCounter(t *testing.T) {
	for _, c := range []struct{ root, dev, profile string }{
		{"testdata/rxe-6.1", "rxe0", "rxe"},
		{"testdata/rxe-old", "rxe0", "rxe"},
		{"testdata/mlx5", "mlx5_1", "cx6"},
		{"testdata/mlx5", "mlx5_1", "cx5"},
	} {
		s, err := counters.Take(c.root, c.dev, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profiles.Load(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		cl := p.CounterClasses()
		for _, k := range s.Counters {
			if _, ok := cl[k.Name]; !ok {
				t.Errorf("%s: profile %s does not name %s (%s)", c.root, c.profile, k.Name, k.Scope)
			}
		}
	}
}
