package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/rdmabench/rdmabench/result"
)

// ConfigKey aligns results across runs: the operation, test and every parameter that
// changes what is measured.
func ConfigKey(c result.Config) string {
	k := fmt.Sprintf("%s %s %s qps=%d depth=%d post=%d cqmod=%d off=%d inline=%d",
		c.Op, c.Test, result.FormatSize(c.MsgSizeBytes), c.NumQPs, c.SQDepth, c.PostList, c.CQMod, c.BufOffsetBytes, c.InlineBytes)
	if c.QPTimeout != 0 {
		k += fmt.Sprintf(" qp-timeout=%d", c.QPTimeout)
	}
	if c.CompletionEvents {
		k += fmt.Sprintf(" events moderation=%d/%dus", c.CQModerationCount, c.CQModerationUS)
	}
	if c.MR != "" {
		k += " mr=" + c.MR
		if c.MRCache > 0 {
			k += fmt.Sprintf("/%d", c.MRCache)
		}
	}
	if c.Peers > 0 {
		k += fmt.Sprintf(" peers=%d sync=%s", c.Peers, c.Sync)
		if c.Landing != "" {
			k += " landing=" + c.Landing
		}
	}
	return k
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
// not support, show "-"; a p99 change needs a p99 on both sides ("n/a" otherwise).
func Compare(w io.Writer, names []string, runs [][]result.Result) error {
	idx := make([]map[string]result.Result, len(runs))
	keys := map[string]bool{}
	for i, rs := range runs {
		idx[i] = index(rs)
		for k := range idx[i] {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	header := []any{"configuration"}
	for i, n := range names {
		if i == 0 {
			header = append(header, n+" Gb/s", n+" p99 us")
		} else {
			header = append(header, n+" Gb/s (Δ)", n+" p99 us (Δ)")
		}
	}
	t := NewTable(w)
	t.Header(header...)
	for _, k := range sorted {
		row := []any{k}
		base, hasBase := idx[0][k]
		for i := range runs {
			r, ok := idx[i][k]
			switch {
			case !ok:
				row = append(row, "-", "-")
			case i == 0 || !hasBase:
				row = append(row, fmt.Sprintf("%.3f", r.BWGbps), usp(r.Lat.P99))
			default:
				p99 := usp(r.Lat.P99)
				if r.Lat.P99 != nil {
					p99 += " (" + deltaP(r.Lat.P99, base.Lat.P99) + ")"
				}
				row = append(row, fmt.Sprintf("%.3f (%s)", r.BWGbps, delta(r.BWGbps, base.BWGbps)), p99)
			}
		}
		t.Append(row...)
	}
	return t.Render()
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
