package main

import (
	"os"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob"
)

func TestHuntFlags(t *testing.T) {
	t.Chdir(t.TempDir()) // --resume h.ndjson must exist
	os.WriteFile("h.ndjson", nil, 0o644)
	checkFlags(t, "hunt", newCmdHunt,
		func() huntOptions {
			return huntOptions{clientOptions: clientOptions{Server: "host", TCPPort: oob.DefaultPort, Local: bench.Local{Port: 1, GIDIndex: -1},
				Timeout: 30 * time.Second, Clock: "auto"},
				Ops: []string{"write", "read"}, Budget: 15 * time.Minute, Seed: 1}
		},
		func(o *huntOptions) { o.Out.Stdout, o.Out.Stderr = nil, nil },
		[]flagCase[huntOptions]{
			{args: []string{"host"}},
			{args: []string{"host", "--ops", "read", "--profile", "cx6", "--space", "size=64K,1M; qps=1,4", "--budget", "5m", "--max-runs", "200",
				"--seed", "7", "--point-duration", "0.5", "--resume", "h.ndjson", "--json", "h.json"}, want: func(o *huntOptions) {
				o.Ops, o.Profile, o.Space, o.Budget, o.MaxRuns, o.Seed, o.PointDuration = []string{"read"}, "cx6", "size=64K,1M; qps=1,4", 5*time.Minute, 200, 7, 0.5
				o.Resume, o.Out.JSON = "h.ndjson", "h.json"
			}},
			{args: nil, wantErr: "accepts 1 arg(s), received 0"},
			{args: []string{"host", "--ops", "send"}, wantErr: `--ops: unknown operation "send"`},
			{args: []string{"host", "--ops", "write,write"}, wantErr: "--ops: write given twice"},
			{args: []string{"host", "--budget", "-1s"}, wantErr: "--budget"},
			{args: []string{"host", "--max-runs", "-1"}, wantErr: "--max-runs"},
			{args: []string{"host", "--point-duration", "-1"}, wantErr: "--point-duration"},
			{args: []string{"host", "--space", "colour=red"}, wantErr: "--space"},
			{args: []string{"host", "--space", "sq_depth=deep"}, wantErr: "--space"},
			{args: []string{"host", "--csv", "h.csv"}, wantErr: "hunt writes no CSV"},
			{args: []string{"host", "--counters", "off"}, wantErr: "--counters off"},
			{args: []string{"host", "--resume", "h.ndjson", "--records", "other.ndjson"}, wantErr: "drop --records"},
			{args: []string{"host", "--resume", "missing.ndjson"}, wantErr: "--resume missing.ndjson"},
		})
}
