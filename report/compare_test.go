package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// keyRow finds the table row whose configuration is key, exactly, and splits it into
// its cells.
func keyRow(t *testing.T, table, key string) []string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "│") {
			if c := cells(l); len(c) > 0 && c[0] == key {
				return c
			}
		}
	}
	t.Fatalf("no row %q in:\n%s", key, table)
	return nil
}

func compare(t *testing.T, runs ...[]result.Result) string {
	t.Helper()
	names := []string{"a", "b", "c"}[:len(runs)]
	var out bytes.Buffer
	if err := Compare(&out, names, runs); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

const key64K = "write bw 64K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0"

// Old results, which lack the newer fields, keep their keys: they still align with new
// ones where nothing differs.
func TestConfigKeyKeepsTheKeysOfOldResults(t *testing.T) {
	c := res("write", 65536, 10, 1000).Config
	if k := ConfigKey(c); k != key64K {
		t.Errorf("default key %q, want %q", k, key64K)
	}
	c.QPTimeout, c.CompletionEvents, c.CQModerationCount, c.CQModerationUS = 20, true, 16, 8
	c.MR, c.MRCache, c.Peers, c.Sync, c.Landing = "cache", 64, 3, "stream", "shared"
	if k, want := ConfigKey(c), key64K+" qp-timeout=20 events moderation=16/8us mr=cache/64 peers=3 sync=stream landing=shared"; k != want {
		t.Errorf("key %q, want %q", k, want)
	}
	c.MTUBytes, c.Hugepages, c.Verify, c.Bidirectional = 1024, true, true, true
	if k, want := ConfigKey(c), key64K+" qp-timeout=20 events moderation=16/8us mr=cache/64 peers=3 sync=stream landing=shared mtu=1024 hugepages verify bidirectional"; k != want {
		t.Errorf("key %q, want %q", k, want)
	}
	// Relaxed ordering is written when on (off is what older results had), the SL and
	// traffic class when not 0; --disable-pcie-relaxed itself is not: a run with it off
	// by the switch and one with it off by default are the same configuration.
	c.DisablePCIeRelaxed = true
	if k, want := ConfigKey(c), key64K+" qp-timeout=20 events moderation=16/8us mr=cache/64 peers=3 sync=stream landing=shared mtu=1024 hugepages verify bidirectional"; k != want {
		t.Errorf("key %q, want %q", k, want)
	}
	c.DisablePCIeRelaxed, c.PCIeRelaxedOrdering, c.SL, c.TrafficClass = false, true, 3, 96
	if k, want := ConfigKey(c), key64K+" qp-timeout=20 events moderation=16/8us mr=cache/64 peers=3 sync=stream landing=shared mtu=1024 hugepages verify bidirectional pcie-relaxed sl=3 tclass=96"; k != want {
		t.Errorf("key %q, want %q", k, want)
	}
}

// A reviewer's find: a 10 Gb/s unidirectional run and a 6 Gb/s bidirectional one were
// one configuration, "-40.0%".
func TestCompareUnidirectionalAgainstBidirectionalIsNotComparable(t *testing.T) {
	uni := res("write", 65536, 10, 1000)
	bidi := res("write", 65536, 6, 800)
	bidi.Config.Bidirectional = true
	s := compare(t, []result.Result{uni}, []result.Result{bidi})
	if strings.Contains(s, "-40.0%") || strings.Contains(s, "-20.0%") {
		t.Errorf("a change between different measurements:\n%s", s)
	}
	if c := keyRow(t, s, key64K); c[1] != "10.000" || c[3] != "-" {
		t.Errorf("the unidirectional run, only in a: %q", c)
	}
	if c := keyRow(t, s, key64K+" bidirectional"); c[1] != "-" || c[3] != "6.000 (not comparable: bidirectional differs)" || c[4] != "0.80 (not comparable)" {
		t.Errorf("the bidirectional run says why it has no change: %q", c)
	}
}

func TestCompareAnotherMTUIsNotComparable(t *testing.T) {
	a := res("write", 65536, 20, 1000)
	a.Config.MTUBytes = 1024
	b := res("write", 65536, 25, 900)
	b.Config.MTUBytes = 4096
	b2 := res("write", 4096, 5, 500)
	b2.Config.MTUBytes, b2.Config.Hugepages = 4096, true
	a2 := res("write", 4096, 4, 600)
	a2.Config.MTUBytes = 1024
	s := compare(t, []result.Result{a, a2}, []result.Result{b, b2})
	if strings.Contains(s, "+25.0%") || strings.Contains(s, "-10.0%") {
		t.Errorf("a change between different MTUs:\n%s", s)
	}
	if c := keyRow(t, s, key64K+" mtu=4096"); c[1] != "-" || c[3] != "25.000 (not comparable: mtu differs)" {
		t.Errorf("%q", c)
	}
	if c := keyRow(t, s, "write bw 4K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0 mtu=4096 hugepages"); c[3] != "5.000 (not comparable: mtu, hugepages differ)" {
		t.Errorf("every field that differs is named: %q", c)
	}
}

// Runs alike in every field of the key show their change, however long they ran and
// however closely they were watched.
func TestCompareMatchingConfigurationsShowTheChange(t *testing.T) {
	a := res("write", 65536, 10, 1000)
	a.Config.MTUBytes, a.Config.Hugepages, a.Config.Bidirectional = 4096, true, true
	b := a
	b.BWGbps, b.Lat.P99 = 15, ptr(800)
	b.Config.Iterations, b.Config.DurationS, b.Config.WarmupIterations = 7, 10, 500
	b.Config.IntervalS, b.Config.Counters, b.Config.Baseline = 1, "all", "tcp"
	s := compare(t, []result.Result{a}, []result.Result{b})
	if c := keyRow(t, s, key64K+" mtu=4096 hugepages bidirectional"); c[1] != "10.000" || c[3] != "15.000 (+50.0%)" || c[4] != "0.80 (-20.0%)" {
		t.Errorf("the change: %q\n%s", c, s)
	}
	if strings.Contains(s, "not comparable") {
		t.Errorf("nothing is not comparable:\n%s", s)
	}
}

// A run the first one lacks entirely (no configuration with its main key) shows its
// numbers without a change, as before; a third run is compared with the first too.
func TestCompareWithoutTheMainConfigurationIsNotNotComparable(t *testing.T) {
	a := res("write", 65536, 10, 1000)
	b := res("read", 65536, 8, 1000)
	b.Config.MTUBytes = 4096
	c := res("write", 65536, 12, 1000)
	c.Config.Verify = true
	s := compare(t, []result.Result{a}, []result.Result{b}, []result.Result{c})
	if r := keyRow(t, s, "read bw 64K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0 mtu=4096"); r[3] != "8.000" {
		t.Errorf("%q", r)
	}
	if r := keyRow(t, s, key64K+" verify"); r[3] != "-" || r[5] != "12.000 (not comparable: verify differs)" {
		t.Errorf("%q", r)
	}
}

func TestNotComparable(t *testing.T) {
	a := res("write", 65536, 10, 1000).Config
	b := a
	b.Iterations, b.WarmupIterations, b.DurationS = 1, 2, 3
	if why := NotComparable(a, b); why != "" {
		t.Errorf("the length is not the configuration: %q", why)
	}
	b.QPTimeout, b.MTUBytes = 20, 2048
	if why := NotComparable(a, b); why != "not comparable: qp-timeout, mtu differ" {
		t.Errorf("%q", why)
	}
	b.MsgSizeBytes = 4096
	if why := NotComparable(a, b); why != "" {
		t.Errorf("another main configuration is another configuration, not a changed one: %q", why)
	}
}
