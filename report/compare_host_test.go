package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/result"
)

func facts(root, dev string) *host.Facts {
	f := host.Read("../host/testdata/"+root, dev)
	return &f
}

// withHosts is r run from client to server (either nil: facts unknown).
func withHosts(r result.Result, client, server *host.Facts) result.Result {
	r.Client.HostFacts, r.ServerDevice.HostFacts = client, server
	return r
}

func hostPart(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "host: ") {
			out = append(out, l)
		}
	}
	return out
}

// report compare says where the runs' hosts differ, client and server apart, each run
// against the first, one fact a line; nothing where neither knows.
func TestCompareShowsWhereTheHostsDiffer(t *testing.T) {
	cx6, irdma, bnxt := facts("cx6-gen3", "mlx5_0"), facts("irdma", "irdma0"), facts("bnxt_re", "bnxt_re0")
	a := []result.Result{withHosts(res("write", 65536, 10, 1000), cx6, bnxt), withHosts(res("write", 4096, 4, 600), cx6, bnxt)}
	b := []result.Result{withHosts(res("write", 65536, 11, 900), irdma, bnxt)}
	for _, f := range []Format{FormatTable, FormatPlain} {
		var out bytes.Buffer
		if err := CompareShow(&out, []string{"a", "b"}, [][]result.Result{a, b}, f); err != nil {
			t.Fatal(err)
		}
		got := hostPart(out.String())
		want := []string{"host: client, a vs b: pcie_link: 8.0 GT/s x16 (Gen3, 126 Gb/s) vs 16.0 GT/s x16 (Gen4, 252 Gb/s)"}
		for _, d := range cx6.Diff(*irdma)[1:] {
			want = append(want, "host: client, a vs b: "+d)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the client differs, the server does not:\n got %q\nwant %q\n%s", f, got, want, out.String())
		}
		if i := strings.Index(out.String(), "host: "); f == FormatTable && strings.ContainsAny(out.String()[i:], "│└") {
			t.Errorf("the host lines come under the table:\n%s", out.String())
		}
	}

	// Neither run knows its hosts (older results, a perftest server): nothing is said.
	s := compare(t, []result.Result{res("write", 65536, 10, 1000)}, []result.Result{res("write", 65536, 11, 900)})
	if h := hostPart(s); h != nil {
		t.Errorf("no facts, no host lines: %q", h)
	}

	// One side known in one run only: one line, not every fact "vs unknown". A third run
	// is compared with the first too; a run whose results come from two hosts says so.
	c := []result.Result{withHosts(res("write", 65536, 9, 1000), cx6, nil), withHosts(res("write", 4096, 3, 600), irdma, nil)}
	got := hostPart(compare(t, []result.Result{withHosts(res("write", 65536, 10, 1000), cx6, nil)},
		[]result.Result{withHosts(res("write", 65536, 11, 900), nil, bnxt)}, c))
	want := []string{
		"host: client, c: its results come from more than one host; the first's is compared",
		"host: client, a vs b: b has no host facts",
		"host: server, a vs b: a has no host facts",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("one side known:\n got %q\nwant %q", got, want)
	}
}

// What a results file says is input: a fact that would forge a line is cleaned.
func TestCompareHostLinesAreCleaned(t *testing.T) {
	evil := &host.Facts{KernelRelease: "6.8\nhost: server, a vs b: all fine"}
	s := compare(t, []result.Result{withHosts(res("write", 65536, 10, 1000), &host.Facts{KernelRelease: "6.8"}, nil)},
		[]result.Result{withHosts(res("write", 65536, 10, 1000), evil, nil)})
	if h := hostPart(s); len(h) != 1 || !strings.Contains(h[0], `6.8\nhost: server`) {
		t.Errorf("%q", h)
	}
}
