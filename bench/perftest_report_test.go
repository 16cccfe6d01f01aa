package bench

import (
	"math"
	"testing"

	"github.com/rdmabench/rdmabench/oob/perftest"
	"github.com/rdmabench/rdmabench/result"
)

// The report rdmabench's perftest client sends a perftest server, which prints it in
// its table: BW average in MB/sec of 2^20 bytes, or Gb/s of 10^9 bits with
// --report_gbits; Mpps; the messages of all QPs. 368 x 64 KiB in one second, by hand:
// 23.00 MB/sec = 23 x 1048576 x 8 / 10^9 = 0.192937984 Gb/s, 0.000368 Mpps.
func TestPerftestReportUnits(t *testing.T) {
	r := result.Result{Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, NumQPs: 2}}
	r.SetThroughput(368, 65536, 1e9)
	for _, tc := range []struct {
		gbits bool
		avg   float64
	}{{false, 23}, {true, 0.192937984}} {
		rep := perftestReport(r, tc.gbits)
		if rep.Size != 65536 || rep.Iters != 368 || rep.BWPeak != 0 || math.Abs(rep.BWAvg-tc.avg) > 1e-12 || math.Abs(rep.MsgRate-0.000368) > 1e-15 {
			t.Errorf("--report_gbits %v: %+v, want 65536 B x 368, peak 0, average %v, 0.000368 Mpps", tc.gbits, rep, tc.avg)
		}
		// What a server makes of it: the unit the client used, the same Gb/s.
		want := map[bool]string{false: "MB/s", true: "Gb/s"}[tc.gbits]
		if g, ok := rep.AvgGbps(); rep.Unit() != want || !ok || math.Abs(g-0.192937984) > 1e-12 {
			t.Errorf("--report_gbits %v: read back as %q, %v Gb/s; want %s, 0.192937984", tc.gbits, rep.Unit(), g, want)
		}
	}
}

// The perftest server's line for a perftest client's report: its number in its unit
// and in Gb/s of 10^9 bits (23 MB/s = 0.193 Gb/s, by hand).
func TestReportedBW(t *testing.T) {
	for _, tc := range []struct {
		rep  perftest.BWReport
		want string
	}{
		{perftest.BWReport{Size: 65536, Iters: 368, BWAvg: 23, MsgRate: 0.000368}, "23.00 MB/s (2^20 B) = 0.193 Gb/s"},
		{perftest.BWReport{Size: 65536, Iters: 368, BWAvg: 0.192937984, MsgRate: 0.000368}, "0.193 Gb/s (--report_gbits)"},
		{perftest.BWReport{Size: 1 << 20, Iters: 1e4, BWAvg: 10000, MsgRate: 0.01}, "10000.00 MB/s (2^20 B) = 83.886 Gb/s"},
		{perftest.BWReport{Size: 65536, Iters: 368, BWAvg: 23}, "23.00 MB/s or Gb/s (its report does not say which)"},
	} {
		if got := reportedBW(tc.rep); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.rep, got, tc.want)
		}
	}
}
