package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/rdmabench/rdmabench/result"
)

// CSVHeader is the column set of WriteCSV, stable for CI pipelines.
var CSVHeader = []string{
	"schema_version", "time", "op", "test", "msg_size_bytes", "num_qps", "sq_depth", "post_list", "cq_mod",
	"buf_offset_bytes", "inline_bytes", "mtu_bytes", "path_mtu_bytes", "client_device", "client_model",
	"server_device", "server_model", "warmup_iterations_done", "iterations_done", "duration_ns", "bytes",
	"bw_gbit_per_s", "bw_mib_per_s", "msg_rate_mpps", "lat_kind", "lat_samples", "lat_min_ns", "lat_p50_ns",
	"lat_p90_ns", "lat_p99_ns", "lat_p99_9_ns", "lat_p99_99_ns", "lat_max_ns", "lat_mean_ns", "lat_stdev_ns",
	"verify_ok", "interrupted", "error", "completion_events", "cq_moderation_count", "cq_moderation_usec", "cq_events",
	"clock_backwards_samples",
}

// WriteCSV writes a header and one row per result. A percentile the sample count does
// not support is an empty cell, and so are the latency statistics of no samples.
func WriteCSV(w io.Writer, rs []result.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, r := range rs {
		c := r.Config
		i := func(v int64) string { return strconv.FormatInt(v, 10) }
		u := func(v uint64) string { return strconv.FormatUint(v, 10) }
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
		p := func(v *int64) string {
			if v == nil {
				return ""
			}
			return i(*v)
		}
		lat := func(s string) string {
			if r.Lat.Samples == 0 {
				return ""
			}
			return s
		}
		verify := ""
		if r.Verify != nil {
			verify = strconv.FormatBool(r.Verify.OK)
		}
		row := []string{
			i(int64(r.SchemaVersion)), r.Time.Format("2006-01-02T15:04:05Z07:00"), c.Op, c.Test, i(int64(c.MsgSizeBytes)),
			i(int64(c.NumQPs)), i(int64(c.SQDepth)), i(int64(c.PostList)), i(int64(c.CQMod)), i(int64(c.BufOffsetBytes)),
			i(int64(c.InlineBytes)), i(int64(c.MTUBytes)), i(int64(r.PathMTU)), r.Client.Name, r.Client.Model,
			r.ServerDevice.Name, r.ServerDevice.Model, u(r.WarmupDone), u(r.Iterations), i(r.DurationNS), u(r.Bytes),
			f(r.BWGbps), f(r.BWMiBps), f(r.MsgRateMpps), r.LatKind, u(r.Lat.Samples), lat(i(r.Lat.Min)), p(r.Lat.P50),
			p(r.Lat.P90), p(r.Lat.P99), p(r.Lat.P99_9), p(r.Lat.P99_99), lat(i(r.Lat.Max)), lat(f(r.Lat.Mean)), lat(f(r.Lat.Stdev)),
			verify, strconv.FormatBool(r.Interrupted), r.Error,
			strconv.FormatBool(c.CompletionEvents), i(int64(c.CQModerationCount)), i(int64(c.CQModerationUS)), u(r.CQEvents),
			u(r.ClockBackwards),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
