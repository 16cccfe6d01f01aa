package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

func TestTunedTableComparesWithTheArticle(t *testing.T) {
	p, err := profiles.Load("cx5")
	if err != nil {
		t.Fatal(err)
	}
	pt := func(size, depth, off, mod int) profiles.Point {
		return profiles.Point{"msg_size_bytes": size, "sq_depth": depth, "buf_offset_bytes": off, "cq_mod": mod, "post_list": 1}
	}
	st := func(pt profiles.Point, bw float64) sweep.Stat {
		return sweep.Stat{Point: pt, Runs: 3, Score: bw, Feasible: true, BWGbps: bw, MsgRateMpps: bw / 8, P99NS: ptr(9000)}
	}
	w := sweep.Outcome{Op: "write", Objective: "bw", Search: "descent", GridPoints: 2520, Points: 40, Tolerance: 0.02,
		Chosen: st(pt(131072, 512, 0, 16), 95), Best: st(pt(131072, 1024, 0, 32), 96),
		Baselines: map[string]sweep.Stat{"perftest defaults": st(pt(65536, 128, 0, 100), 80)}}
	w.All = []sweep.Stat{w.Best, w.Chosen}
	w.Within = w.All
	r := sweep.Outcome{Op: "read", Objective: "bw", Chosen: st(pt(262144, 256, 2056, 64), 90), Tolerance: 0.02}
	r.Chosen.P99NS = nil // timed points too short for 1000 signalled completions
	r.All = []sweep.Stat{r.Chosen}
	tuned := NewTuned(p, map[string]sweep.Outcome{"write": w, "read": r}, sweep.Objectives(0), result.Device{Model: "ConnectX-5"}, result.Device{}, "test")
	var out bytes.Buffer
	if err := TunedTable(&out, tuned); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"batch (message) size", "128K", "64K-128K", "write agrees, read differs", // size: 128K in 64-128K, 256K outside 32-64K
		"buffer offset from 4 KiB", "4 KiB boundary",
		"+18.8% (80.000 Gb/s)", // 95 over perftest's 80
		"40 / 2520",
		"│ write │ p99 ", "9.0",
		"read: no p99 optimum: no measured configuration has a p99 its samples support (at least 1000 signalled completions",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("tuned table lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "│ read  │ p99 ") {
		t.Errorf("read has no p99 optimum:\n%s", s)
	}
	var csv bytes.Buffer
	TunedCSV(&csv, tuned)
	if !strings.HasPrefix(csv.String(), "parameter,write_optimum,read_optimum,write_article,read_article,agreement\n") {
		t.Fatalf("csv header: %q", csv.String()[:80])
	}
}
