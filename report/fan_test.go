package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// A fan run as JSON holds every server's row; read back from CSV it holds the summary
// only: the line says so instead of an empty table, and the verdict's spread is unknown.
func TestFanTables(t *testing.T) {
	spread := 128.0
	peer := result.Peer{Server: "10.0.0.1:18801", Device: result.Device{Name: "rxe0", Host: "h"}, Messages: 512, Bytes: 512 << 16, DurationNS: 2e9, BWGbps: 0.134}
	full := result.Result{Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, CQMod: 1, PostList: 1, NumQPs: 1, Peers: 2, Sync: "stream", DurationS: 2},
		BWGbps: 0.25, Fan: &result.Fan{Peers: []result.Peer{peer, peer}, JainFairness: 0.99, MinPeerGbps: 0.12,
			Fairness: result.FairnessCannotTell, FairnessSpreadMessages: &spread, FairnessEdgeMessages: 257}}
	fromCSV := full
	fromCSV.Fan = &result.Fan{Peers: []result.Peer{}, JainFairness: 0.99, MinPeerGbps: 0.12, Fairness: result.FairnessCannotTell, FairnessEdgeMessages: 257}
	for _, c := range []struct {
		r    result.Result
		want []string
	}{
		{full, []string{"to 2 servers", "10.0.0.1:18801", "differ by 128 messages", "257 = 2 send queues"}},
		{fromCSV, []string{"to 2 servers", "no per-server rows", "differ by ? messages"}},
	} {
		var b bytes.Buffer
		if err := fanTables(&b, []result.Result{c.r}); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("no %q in:\n%s", w, b.String())
			}
		}
	}
}
