// Package arrows holds the import-rule test: the rules of which package may use which,
// checked on the packages' whole import graphs (go list -deps), so that an arrow that
// comes back through a third package is caught too. docs/architecture.md draws the
// layers: its import lists, its picture and its table of these rules are generated here
// (TestArchitectureDocs, make docs).
package arrows

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/docgen"
)

const module = "github.com/rdmabench/rdmabench/"

var update = flag.Bool("update", false, "rewrite docs/architecture.md's generated sections (make docs)")

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
	{"oob/perftest", "perftest's exchange is its messages and their order (the server's state machine too): bench holds the QPs and buffers it asks for", []string{"verbs", "bench/...", "rdma", "sweep", "report", "fleet"}},
	{"report", "the readers read results files; they neither speak the protocol nor run a fleet", []string{"oob", "fleet", "bench", "verbs"}},
	{"report/html", "the HTML report reads results files, as report does", []string{"oob", "fleet", "bench", "verbs"}},
	{"sweep", "the search decides from results; the engine is given to it", []string{"bench", "report", "fleet", "oob"}},
	{"hunt", "the hunt judges results; the engine and the plans' validation are given to it", []string{"bench/...", "verbs", "oob", "report", "fleet", "sweep"}},
	// runtime/cgo is in the graph of every package that links C (a cgo package, net's
	// resolver): not reaching it, plan reaches no cgo package.
	{"plan", "the plan's rules are data and arithmetic that the server, the client, the sweep and the hunt share: below all of them, with no cgo",
		[]string{"runtime/cgo", "verbs", "bench/...", "sweep", "hunt", "cmd/..."}},
	{"fleet/pairs", "a fleet's rules (schedule, judging) need no network", []string{"oob", "bench", "fleet"}},
	{"internal/stat", "the statistics are arithmetic on numbers: they know no results, plans or programs", append([]string{"result", "profiles", "counters", "host", "verbs", "oob", "bench/...", "rdma"}, application...)},
}

// goList runs go list with cgo on, for Linux, and no GOFLAGS from the environment: the
// graph of the build that links libibverbs, the same under make unit's CGO_ENABLED=0.
func goList(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func TestPackageArrows(t *testing.T) {
	for _, r := range rules {
		out, err := goList("-deps", module+r.pkg)
		if err != nil {
			t.Fatal(err)
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

// architectureDoc is docs/architecture.md, from this package's directory.
var architectureDoc = filepath.Join("..", "..", "docs", "architecture.md")

// TestArchitectureDocs keeps docs/architecture.md's import lists, its picture of the
// layers and its table of the rules above what the module and this test say: it fails
// while one is stale, and rewrites them with -update (make docs).
func TestArchitectureDocs(t *testing.T) {
	imports, err := moduleImports()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		body []byte
	}{
		{"import lists", importLists(imports)},
		{"layers", layers(imports)},
		{"dependency rules", rulesTable()},
	} {
		if err := docgen.Region(architectureDoc, s.name, s.body, *update); err != nil {
			t.Error(err)
		}
	}
}

// moduleImports is each of the module's packages and the module's packages it imports
// (test files left out), without the module's prefix.
func moduleImports() (map[string][]string, error) {
	out, err := goList("-f", `{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}`, module+"...")
	if err != nil {
		return nil, err
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(pkg, module) {
			return nil, fmt.Errorf("go list: %q", line)
		}
		var own []string
		for _, d := range strings.Fields(deps) {
			if strings.HasPrefix(d, module) {
				own = append(own, strings.TrimPrefix(d, module))
			}
		}
		sort.Strings(own)
		m[strings.TrimPrefix(pkg, module)] = own
	}
	return m, nil
}

func sortedKeys(m map[string][]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	sort.Strings(k)
	return k
}

// importLists is one line per package, "pkg: its imports", '-' for none, in a fence.
func importLists(imports map[string][]string) []byte {
	pkgs := sortedKeys(imports)
	w := 0
	for _, p := range pkgs {
		w = max(w, len(p)+1)
	}
	var b bytes.Buffer
	b.WriteString("```\n")
	for _, p := range pkgs {
		deps := strings.Join(imports[p], " ")
		if deps == "" {
			deps = "-"
		}
		fmt.Fprintf(&b, "%-*s %s\n", w, p+":", deps)
	}
	b.WriteString("```\n")
	return b.Bytes()
}

// layers draws the packages in rows, each a package's longest chain of imports, the
// highest first; under each row, each package's imports in the row just below, then
// after '|' those further down.
func layers(imports map[string][]string) []byte {
	row := map[string]int{}
	var depth func(string) int
	depth = func(p string) int {
		if r, ok := row[p]; ok {
			return r
		}
		r := 0
		for _, d := range imports[p] {
			r = max(r, depth(d)+1)
		}
		row[p] = r
		return r
	}
	top := 0
	for _, p := range sortedKeys(imports) {
		top = max(top, depth(p))
	}
	var b bytes.Buffer
	b.WriteString("```\n")
	for r := top; r >= 0; r-- {
		var in []string
		for _, p := range sortedKeys(imports) {
			if row[p] == r {
				in = append(in, p)
			}
		}
		if len(in) == 0 {
			continue
		}
		if r != top {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d  %s\n", r, strings.Join(in, "   "))
		for _, p := range in {
			if r == 0 {
				break
			}
			var below, further []string
			for _, d := range imports[p] {
				if row[d] == r-1 {
					below = append(below, d)
				} else {
					further = append(further, d)
				}
			}
			line := strings.Join(below, " ")
			if len(further) > 0 {
				line += " | " + strings.Join(further, " ")
			}
			fmt.Fprintf(&b, "     %s -> %s\n", p, line)
		}
	}
	b.WriteString("```\n")
	return b.Bytes()
}

// rulesTable is the rules above as a Markdown table.
func rulesTable() []byte {
	var b bytes.Buffer
	b.WriteString("| package | must not reach | why (the test's words) |\n|---|---|---|\n")
	for _, r := range rules {
		never := make([]string, len(r.never))
		for i, n := range r.never {
			never[i] = "`" + n + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.pkg, strings.Join(never, ", "), r.why)
	}
	return b.Bytes()
}
