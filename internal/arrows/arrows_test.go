// Package arrows holds one test: the rules of which package may use which, checked on
// the packages' whole import graphs (go list -deps), so that an arrow that comes back
// through a third package is caught too. docs/architecture.md draws the layers.
package arrows

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/rdmabench/rdmabench/"

// application is what the library must not reach: the programs and what only they use.
var application = []string{"sweep", "hunt", "report", "report/html", "cmd/rdmabench", "fleet", "doctor", "mrbench"}

var rules = []struct {
	pkg, why string
	never    []string
}{
	// A Loopback's servers are bench's, linked by rdma/rdmaserver through a hook
	// (rdma/internal/loophook): rdma itself reaches no bench.
	{"rdma", "the public library stands on verbs and the protocol, not on the programs", append([]string{"bench/..."}, application...)},
	{"verbs", "the cgo layer knows QPs and buffers, not the protocol that carries their endpoints", []string{"oob", "bench", "rdma", "sweep", "report"}},
	{"oob", "the protocol carries plans and endpoints; it neither runs tests nor links libibverbs", []string{"verbs", "bench", "rdma", "sweep", "report", "fleet"}},
	{"report", "the readers read results files; they neither speak the protocol nor run a fleet", []string{"oob", "fleet", "bench", "verbs"}},
	{"report/html", "the HTML report reads results files, as report does", []string{"oob", "fleet", "bench", "verbs"}},
	{"sweep", "the search decides from results; the engine is given to it", []string{"bench", "report", "fleet", "oob"}},
	{"hunt", "the hunt judges results; the engine and the plans' validation are given to it", []string{"bench/...", "verbs", "oob", "report", "fleet", "sweep"}},
	{"fleet/pairs", "a fleet's rules (schedule, judging) need no network", []string{"oob", "bench", "fleet"}},
	{"internal/stat", "the statistics are arithmetic on numbers: they know no results, plans or programs", append([]string{"result", "profiles", "counters", "host", "verbs", "oob", "bench/...", "rdma"}, application...)},
}

func TestPackageArrows(t *testing.T) {
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-deps", module+r.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", r.pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(d, module)] = true
		}
		for _, n := range r.never {
			for d := range deps {
				// "x/..." is x and every package under it.
				if d == n || strings.HasSuffix(n, "/...") && (d == strings.TrimSuffix(n, "/...") || strings.HasPrefix(d, strings.TrimSuffix(n, "..."))) {
					t.Errorf("%s reaches %s: %s", r.pkg, d, r.why)
				}
			}
		}
	}
}
