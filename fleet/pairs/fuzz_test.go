package pairs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// FuzzFleetRecords reads a results file as report matrix, check --no-bad-pair and
// html do (ReadAll, then FromResults) and draws its matrix: no input may panic, size an
// allocation by a forged rank, or put a control character in a host name.
func FuzzFleetRecords(f *testing.F) {
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, Iterations: 200,
		SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1}, Iterations: 200, BWGbps: 0.3}
	var seed bytes.Buffer
	for i, p := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
		x := r
		x.Fleet = &result.FleetPair{Pattern: "pairwise", Round: i, A: p[0], B: p[1], HostA: "10.0.0.1:18767", HostB: "10.0.0.1:18768"}
		b, _ := json.Marshal(x)
		seed.Write(append(b, '\n'))
	}
	f.Add(seed.Bytes())
	for _, forged := range []string{`"client_rank":0`, `"client_rank":-1`, `"client_rank":60000`, `"client":"\u001b[2J\rforged\n"`} {
		f.Add(bytes.Replace(seed.Bytes(), []byte(`"client_rank":0`), []byte(forged), 1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, _ := result.ReadAll(bytes.NewReader(data))
		out, err := FromResults(rs, OutlierOpts{})
		if err != nil {
			return
		}
		if len(out.Hosts) > MaxMembers {
			t.Fatalf("%d hosts from a file: above MaxMembers", len(out.Hosts))
		}
		for _, h := range out.Hosts {
			if strings.ContainsAny(h, "\x1b\r\n") {
				t.Fatalf("host %q keeps a control character", h)
			}
		}
		for _, metric := range []string{MetricBW, MetricLat} {
			var w bytes.Buffer
			if err := WriteMatrix(&w, out.Hosts, Matrix(len(out.Hosts), out.Results, out.Verdicts, metric), metric); err != nil {
				t.Fatalf("matrix: %v", err)
			}
		}
	})
}
