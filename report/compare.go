package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// ConfigKey aligns results across runs: the operation, test and every parameter of the
// plan that changes what is measured. Results with the same key measured the same thing;
// results whose keys differ did not, and are not compared.
//
// The key is MainKey (operation, test, message size, QPs, SQ depth, post list, CQ
// moderation, buffer offset, inline size), then each of these where it is not its
// default, in this order (old results, which lack the later ones, keep their keys):
//
//   - qp-timeout: the local ACK timeout, when a requester retransmits;
//   - events, moderation: sleeping on completion events instead of busy-polling, and the
//     CQ's moderation;
//   - mr, its cache size: where the WRs' lkeys come from (registration in the timed loop);
//   - peers, sync, landing: fan-out / fan-in;
//   - mtu: the requested path MTU (the packet size on the wire; 0, the ports' active
//     MTU, is not written, and is not the same key as asking for that MTU by number);
//   - hugepages: the buffers' backing (the NIC's and the CPU's address translation);
//   - verify: the destination's layout (a slot per WR up to the SQ depth instead of
//     perftest's cycle buffer) and the patterns the buffers carry;
//   - bidirectional: the server drives the same traffic the other way at the same time
//     (the top-level bandwidth is one direction of a loaded link, not the whole link).
//
// Left out, because they change how long or how closely a run is watched, not what it
// measures: the iterations and duration (the length), the warm-up (run and discarded
// before the measured phase, its length only), the NIC counters read around the
// measured phase, the --interval lines (read from the loop's counts by another
// goroutine), and the TCP baseline (measured after the RDMA run). What the devices are
// (GID, link layer, rate) is not the plan: it is in the result, not the key.
func ConfigKey(c result.Config) string {
	k := MainKey(c)
	for _, p := range keyParts(c) {
		k += p.text
	}
	return k
}

// MainKey is the main configuration of ConfigKey: the operation, test, message size,
// QPs, SQ depth, post list, CQ moderation, buffer offset and inline size.
func MainKey(c result.Config) string {
	return fmt.Sprintf("%s %s %s qps=%d depth=%d post=%d cqmod=%d off=%d inline=%d",
		text.Clean(c.Op, 16), text.Clean(string(c.Test), 16), result.FormatSize(c.MsgSizeBytes), c.NumQPs, c.SQDepth, c.PostList, c.CQMod, c.BufOffsetBytes, c.InlineBytes)
}

// keyPart is one of ConfigKey's fields beyond MainKey: its name, and the text the key
// writes for it ("" at its default).
type keyPart struct{ name, text string }

// keyParts are the fields of ConfigKey beyond MainKey, in the key's order, every one of
// them (the text empty where not written).
func keyParts(c result.Config) []keyPart {
	var timeout, events, moderation, mr, mrCache, peers, sync, landing, mtu, huge, verify, bidi, threads, relaxed, sl, tclass string
	if c.QPTimeout != 0 {
		timeout = fmt.Sprintf(" qp-timeout=%d", c.QPTimeout)
	}
	if c.CompletionEvents {
		events, moderation = " events", fmt.Sprintf(" moderation=%d/%dus", c.CQModerationCount, c.CQModerationUS)
	}
	if c.MR != "" {
		mr = " mr=" + text.Clean(c.MR, 16)
		if c.MRCache > 0 {
			mrCache = fmt.Sprintf("/%d", c.MRCache)
		}
	}
	if c.Peers > 0 {
		peers, sync = fmt.Sprintf(" peers=%d", c.Peers), " sync="+text.Clean(c.Sync, 16)
		if c.Landing != "" {
			landing = " landing=" + text.Clean(c.Landing, 16)
		}
	}
	if c.MTUBytes != 0 {
		mtu = fmt.Sprintf(" mtu=%d", c.MTUBytes)
	}
	if c.Hugepages {
		huge = " hugepages"
	}
	if c.Verify {
		verify = " verify"
	}
	if c.Bidirectional {
		bidi = " bidirectional"
	}
	if c.Threads > 1 {
		threads = fmt.Sprintf(" threads=%d", c.Threads)
	}
	// Relaxed ordering is written when on: off is what every result had before the
	// field, so those keep their keys.
	if c.PCIeRelaxedOrdering {
		relaxed = " pcie-relaxed"
	}
	if c.SL != 0 {
		sl = fmt.Sprintf(" sl=%d", c.SL)
	}
	if c.TrafficClass != 0 {
		tclass = fmt.Sprintf(" tclass=%d", c.TrafficClass)
	}
	return []keyPart{{"qp-timeout", timeout}, {"events", events}, {"moderation", moderation}, {"mr", mr}, {"mr cache", mrCache},
		{"peers", peers}, {"sync", sync}, {"landing", landing}, {"mtu", mtu}, {"hugepages", huge}, {"verify", verify}, {"bidirectional", bidi},
		{"threads", threads}, {"pcie relaxed ordering", relaxed}, {"sl", sl}, {"traffic class", tclass}}
}

// KeyDiffers names the fields of ConfigKey beyond MainKey in which a and b differ, in
// the key's order (none: their keys differ in MainKey only, or not at all).
func KeyDiffers(a, b result.Config) []string {
	pa, pb := keyParts(a), keyParts(b)
	var out []string
	for i := range pa {
		if pa[i].text != pb[i].text {
			out = append(out, pa[i].name)
		}
	}
	return out
}

// NotComparable says why a result of configuration b is not compared with one of a
// that has the same MainKey: "not comparable: bidirectional differs", "not comparable:
// mtu, hugepages differ". "" where their keys are the same, or where MainKey differs
// (those are different configurations, not a changed one).
func NotComparable(a, b result.Config) string {
	if MainKey(a) != MainKey(b) {
		return ""
	}
	d := KeyDiffers(a, b)
	switch len(d) {
	case 0:
		return ""
	case 1:
		return "not comparable: " + d[0] + " differs"
	}
	return "not comparable: " + strings.Join(d, ", ") + " differ"
}

// NotComparableTo is NotComparable against the configuration of base (in key order)
// that has b's MainKey and differs from b in the fewest fields beyond it (ties: the
// first): why b, which base does not have, has no change against base. "" where none of
// base has b's MainKey, or base has b itself.
func NotComparableTo(base []result.Config, b result.Config) string {
	why, fewest := "", -1
	for _, a := range base {
		if MainKey(a) != MainKey(b) {
			continue
		}
		n := len(KeyDiffers(a, b))
		if n == 0 {
			return "" // base has b
		}
		if fewest < 0 || n < fewest {
			why, fewest = NotComparable(a, b), n
		}
	}
	return why
}

// index keeps, per configuration, the median-bandwidth result of a run (a sweep may
// hold repeats).
func index(rs []result.Result) map[string]result.Result {
	groups := map[string][]result.Result{}
	for _, r := range rs {
		if r.Error == "" {
			k := ConfigKey(r.Config)
			groups[k] = append(groups[k], r)
		}
	}
	out := map[string]result.Result{}
	for k, g := range groups {
		sort.Slice(g, func(i, j int) bool { return g[i].BWGbps < g[j].BWGbps })
		out[k] = g[len(g)/2]
	}
	return out
}

// Compare writes runs side by side, aligned by configuration, with each run's change
// against the first. Configurations missing from a run, and p99s the sample count does
// not support, show "-"; a p99 change needs a p99 on both sides ("n/a" otherwise). A
// configuration the first run lacks, where the first run has its MainKey with other
// fields of the key (ConfigKey), says so in place of the change: "not comparable:
// bidirectional differs" (see NotComparableTo). Under the table, a line per host fact
// in which a run's client or server differs from the first run's (see hostLines).
//
// Results measured on a virtual clock (result.Result.VirtualClock) are not compared
// with results measured on any other: such a change says "not comparable: clock domain
// differs", a line under the table says which run was measured on which clock
// (clockLines), and VirtualTime heads the report (plain: ends it).
func Compare(w io.Writer, names []string, runs [][]result.Result) error {
	return CompareShow(w, names, runs, FormatTable)
}

// CompareShow writes Compare's table in f. Plain (FormatPlain) splits what the boxed
// table says in one cell: per run its Gb/s and p99, and for every run after the first
// their changes against it ("+1.0%", "n/a", "-" where the run lacks the configuration,
// or why it is not comparable), each a column, one word a cell.
func CompareShow(w io.Writer, names []string, runs [][]result.Result, f Format) error {
	plain := f == FormatPlain
	idx, sorted := indexRuns(runs)
	var base0 []result.Config // the first run's configurations, in key order
	for _, k := range sorted {
		if r, ok := idx[0][k]; ok {
			base0 = append(base0, r.Config)
		}
	}
	header := compareHeader(names, plain)
	virtual := false
	for _, rs := range runs {
		virtual = virtual || VirtualClock(rs)
	}
	virtualTimeAbove(w, f, virtual)
	t := NewTab(w, f, header...)
	for _, k := range sorted {
		t.Append(compareRow(k, idx, base0, plain)...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := clockLines(w, names, runs); err != nil {
		return err
	}
	if err := hostLines(w, names, runs); err != nil {
		return err
	}
	virtualTimeUnder(w, f, virtual)
	return nil
}

// indexRuns indexes each run by configuration (index), and lists the configurations
// of every run, sorted.
func indexRuns(runs [][]result.Result) (idx []map[string]result.Result, sorted []string) {
	idx = make([]map[string]result.Result, len(runs))
	keys := map[string]bool{}
	for i, rs := range runs {
		idx[i] = index(rs)
		for k := range idx[i] {
			keys[k] = true
		}
	}
	sorted = make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	return idx, sorted
}

// compareHeader is the header of CompareShow's table: the first run's Gb/s and p99,
// then each later run's with their changes, in a column each where plain.
func compareHeader(names []string, plain bool) []string {
	header := []string{"configuration"}
	for i, n := range names {
		switch {
		case i == 0:
			header = append(header, n+" Gb/s", n+" p99 us")
		case plain:
			header = append(header, n+" Gb/s", n+" Gb/s change", n+" p99 us", n+" p99 change")
		default:
			header = append(header, n+" Gb/s (Δ)", n+" p99 us (Δ)")
		}
	}
	return header
}

// compareRow is configuration k's row of CompareShow's table, from each run's results
// by configuration (idx). Where the first run lacks k, a later run's k says why it is
// not comparable with the first run's configurations, base0 (NotComparableTo), if it is
// not.
func compareRow(k string, idx []map[string]result.Result, base0 []result.Config, plain bool) []any {
	row := []any{k}
	base, hasBase := idx[0][k]
	why := ""
	if !hasBase && len(idx) > 1 {
		for i := 1; i < len(idx) && why == ""; i++ {
			if r, ok := idx[i][k]; ok {
				why = NotComparableTo(base0, r.Config)
			}
		}
	}
	for i := range idx {
		r, ok := idx[i][k]
		bw, bwChange, p99, p99Change := compareCells(i, r, ok, base, hasBase, why)
		switch {
		case i == 0:
			row = append(row, bw, p99)
		case plain:
			row = append(row, bw, bwChange, p99, p99Change)
		default:
			if ok && bwChange != "-" {
				bw += " (" + bwChange + ")"
			}
			if ok && p99Change != "-" {
				p99 += " (" + p99Change + ")"
			}
			row = append(row, bw, p99)
		}
	}
	return row
}

// compareCells is run i's result r of a configuration (ok: the run has it), as its
// row says it: its Gb/s and p99, and for i > 0 their changes against the first run's
// result base (hasBase: the first run has it), or why they are not comparable; "-"
// where there is nothing to say.
func compareCells(i int, r result.Result, ok bool, base result.Result, hasBase bool, why string) (bw, bwChange, p99, p99Change string) {
	bw, bwChange, p99, p99Change = "-", "-", "-", "-"
	switch {
	case !ok:
	case i > 0 && why != "":
		bw, bwChange, p99 = fmt.Sprintf("%.3f", r.BWGbps), why, usp(r.Lat.P99)
		if r.Lat.P99 != nil {
			p99Change = "not comparable"
		}
	case i == 0 || !hasBase:
		bw, p99 = fmt.Sprintf("%.3f", r.BWGbps), usp(r.Lat.P99)
	case r.VirtualClock() != base.VirtualClock():
		bw, bwChange, p99 = fmt.Sprintf("%.3f", r.BWGbps), notComparableClock, usp(r.Lat.P99)
		if r.Lat.P99 != nil {
			p99Change = "not comparable"
		}
	default:
		bw, bwChange, p99 = fmt.Sprintf("%.3f", r.BWGbps), delta(r.BWGbps, base.BWGbps), usp(r.Lat.P99)
		if r.Lat.P99 != nil {
			p99Change = deltaP(r.Lat.P99, base.Lat.P99)
		}
	}
	return bw, bwChange, p99, p99Change
}

// clockLines writes, under Compare's table, a line for each later run measured on
// another clock than the first (one run on a virtual clock, the other not): "clock: a
// vs b: not comparable: a was measured on a virtual clock (qemu icount), b on a real or
// unknown clock; no change between them is shown". A run is on a virtual clock when
// one of its results is.
func clockLines(w io.Writer, names []string, runs [][]result.Result) error {
	v0 := VirtualClock(runs[0])
	a := text.Clean(names[0], 64)
	for i := 1; i < len(runs); i++ {
		b := text.Clean(names[i], 64)
		why := ClockMismatch(a, v0, b, VirtualClock(runs[i]))
		if why == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "clock: %s vs %s: %s; no change between them is shown\n", a, b, why); err != nil {
			return err
		}
	}
	return nil
}

// hostLines writes, under Compare's table, where each later run's hosts differ from the
// first run's, client and server apart, one line a fact (host.Facts.Diff, the first
// run's value first): "host: client, a vs b: pcie_link: 16.0 GT/s x16 (Gen4, 252 Gb/s)
// vs 8.0 GT/s x16 (Gen3, 126 Gb/s)". A run's host on a side is that of its first result
// with facts for that side; a run whose results come from several hosts says so, and
// only its first is compared. Where neither run has facts for a side (results of an
// rdmabench before host facts, a perftest server) nothing is said; where one has none,
// that it has none.
func hostLines(w io.Writer, names []string, runs [][]result.Result) error {
	for _, side := range []struct {
		name  string
		facts func(result.Result) *host.Facts
	}{
		{"client", func(r result.Result) *host.Facts { return r.Client.HostFacts }},
		{"server", func(r result.Result) *host.Facts { return r.ServerDevice.HostFacts }},
	} {
		first := make([]*host.Facts, len(runs))
		for i, rs := range runs {
			var several bool
			first[i], several = runHost(rs, side.facts)
			if several {
				if _, err := fmt.Fprintf(w, "host: %s, %s: its results come from more than one host; the first's is compared\n", side.name, text.Clean(names[i], 64)); err != nil {
					return err
				}
			}
		}
		a, fa := text.Clean(names[0], 64), first[0]
		for i := 1; i < len(runs); i++ {
			b, fb := text.Clean(names[i], 64), first[i]
			var lines []string
			switch {
			case fa == nil && fb == nil:
			case fa == nil:
				lines = []string{a + " has no host facts"}
			case fb == nil:
				lines = []string{b + " has no host facts"}
			default:
				lines = fa.Diff(*fb)
			}
			for _, l := range lines { // a result file is input: its strings are cleaned
				if _, err := fmt.Fprintf(w, "host: %s, %s vs %s: %s\n", side.name, a, b, text.Clean(l, 300)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runHost is the host facts of a run's first result that has them on a side, and
// whether a later result's differ from them.
func runHost(rs []result.Result, facts func(result.Result) *host.Facts) (first *host.Facts, several bool) {
	for _, r := range rs {
		f := facts(r)
		switch {
		case f == nil:
		case first == nil:
			first = f
		case len(first.Diff(*f)) > 0:
			several = true
		}
	}
	return first, several
}

// Labels names inputs by their paths for a report's columns: each by its file name,
// unless another has the same, then by the shortest ending of its path that tells it
// from the others ("a/sweep.ndjson" and "b/sweep.ndjson"; "x/a/s.json", "y/a/s.json"
// and "b/s.json"). A path given twice keeps its whole path and is numbered from its
// second ("s.json", "s.json (2)").
func Labels(paths []string) []string {
	parts := make([][]string, len(paths))
	n := make([]int, len(paths)) // how many trailing parts each label has
	for i, p := range paths {
		parts[i] = strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")
		n[i] = 1
	}
	label := func(i int) string {
		ps := parts[i]
		return strings.Join(ps[len(ps)-n[i]:], "/")
	}
	for {
		byLabel := map[string][]int{}
		for i := range paths {
			byLabel[label(i)] = append(byLabel[label(i)], i)
		}
		grew := false
		for _, same := range byLabel {
			if len(same) < 2 {
				continue
			}
			for _, i := range same {
				if n[i] < len(parts[i]) {
					n[i]++
					grew = true
				}
			}
		}
		if !grew {
			break
		}
	}
	out := make([]string, len(paths))
	seen := map[string]int{}
	for i := range paths {
		l := label(i)
		seen[l]++
		if seen[l] > 1 {
			l += fmt.Sprintf(" (%d)", seen[l])
		}
		out[i] = l
	}
	return out
}

// deltaP is delta for percentiles, "n/a" unless both are supported.
func deltaP(v, base *int64) string {
	if v == nil || base == nil {
		return "n/a"
	}
	return delta(float64(*v), float64(*base))
}

func delta(v, base float64) string {
	if base == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*(v-base)/base)
}
