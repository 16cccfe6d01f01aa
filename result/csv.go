package result

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// csvColumn is one column of the CSV form: its name, how a result fills its cell and
// how a cell fills a result back. The table below is the CSV form, both ways.
type csvColumn struct {
	name string
	get  func(r *Result) string
	set  func(r *Result, cell string) error
}

var csvColumns = []csvColumn{
	intColumn("schema_version", func(r *Result) *int { return &r.SchemaVersion }),
	{"time", func(r *Result) string { return r.Time.Format(time.RFC3339) }, setTime},
	stringColumn("op", func(r *Result) *string { return &r.Config.Op }),
	stringColumn("test", func(r *Result) *Test { return &r.Config.Test }),
	intColumn("msg_size_bytes", func(r *Result) *int { return &r.Config.MsgSizeBytes }),
	intColumn("num_qps", func(r *Result) *int { return &r.Config.NumQPs }),
	intColumn("sq_depth", func(r *Result) *int { return &r.Config.SQDepth }),
	intColumn("post_list", func(r *Result) *int { return &r.Config.PostList }),
	intColumn("cq_mod", func(r *Result) *int { return &r.Config.CQMod }),
	intColumn("buf_offset_bytes", func(r *Result) *int { return &r.Config.BufOffsetBytes }),
	intColumn("inline_bytes", func(r *Result) *int { return &r.Config.InlineBytes }),
	intColumn("mtu_bytes", func(r *Result) *int { return &r.Config.MTUBytes }),
	intColumn("path_mtu_bytes", func(r *Result) *int { return &r.PathMTU }),
	stringColumn("client_device", func(r *Result) *string { return &r.Client.Name }),
	stringColumn("client_model", func(r *Result) *string { return &r.Client.Model }),
	stringColumn("server_device", func(r *Result) *string { return &r.ServerDevice.Name }),
	stringColumn("server_model", func(r *Result) *string { return &r.ServerDevice.Model }),
	uintColumn("warmup_iterations_done", func(r *Result) *uint64 { return &r.WarmupDone }),
	uintColumn("iterations_done", func(r *Result) *uint64 { return &r.Iterations }),
	int64Column("duration_ns", func(r *Result) *int64 { return &r.DurationNS }, false),
	uintColumn("bytes", func(r *Result) *uint64 { return &r.Bytes }),
	floatColumn("bw_gbit_per_s", func(r *Result) *float64 { return &r.BWGbps }, false),
	floatColumn("bw_mib_per_s", func(r *Result) *float64 { return &r.BWMiBps }, false),
	floatColumn("msg_rate_mpps", func(r *Result) *float64 { return &r.MsgRateMpps }, false),
	stringColumn("lat_kind", func(r *Result) *string { return &r.LatKind }),
	uintColumn("lat_samples", func(r *Result) *uint64 { return &r.Lat.Samples }),
	int64Column("lat_min_ns", func(r *Result) *int64 { return &r.Lat.Min }, true),
	percentileColumn("lat_p50_ns", func(r *Result) **int64 { return &r.Lat.P50 }),
	percentileColumn("lat_p90_ns", func(r *Result) **int64 { return &r.Lat.P90 }),
	percentileColumn("lat_p99_ns", func(r *Result) **int64 { return &r.Lat.P99 }),
	percentileColumn("lat_p99_9_ns", func(r *Result) **int64 { return &r.Lat.P99_9 }),
	percentileColumn("lat_p99_99_ns", func(r *Result) **int64 { return &r.Lat.P99_99 }),
	int64Column("lat_max_ns", func(r *Result) *int64 { return &r.Lat.Max }, true),
	floatColumn("lat_mean_ns", func(r *Result) *float64 { return &r.Lat.Mean }, true),
	floatColumn("lat_stdev_ns", func(r *Result) *float64 { return &r.Lat.Stdev }, true),
	{"verify_ok", getVerifyOK, setVerifyOK},
	boolColumn("interrupted", func(r *Result) *bool { return &r.Interrupted }),
	stringColumn("error", func(r *Result) *string { return &r.Error }),
	boolColumn("completion_events", func(r *Result) *bool { return &r.Config.CompletionEvents }),
	intColumn("cq_moderation_count", func(r *Result) *int { return &r.Config.CQModerationCount }),
	intColumn("cq_moderation_usec", func(r *Result) *int { return &r.Config.CQModerationUS }),
	uintColumn("cq_events", func(r *Result) *uint64 { return &r.CQEvents }),
	uintColumn("clock_backwards_samples", func(r *Result) *uint64 { return &r.ClockBackwards }),
	boolColumn("tainted", func(r *Result) *bool { return &r.Tainted }),
	// csvBaseColumns end here; what follows came later, at the end so that a file of
	// the columns before still reads.
	countColumn("peers", func(r *Result) *int { return &r.Config.Peers }),
	stringColumn("sync", func(r *Result) *string { return &r.Config.Sync }),
	stringColumn("landing", func(r *Result) *string { return &r.Config.Landing }),
	stringColumn("mr", func(r *Result) *string { return &r.Config.MR }),
	stringColumn("baseline", func(r *Result) *string { return &r.Config.Baseline }),
	boolColumn("bidirectional", func(r *Result) *bool { return &r.Config.Bidirectional }),
	countColumn("qp_timeout", func(r *Result) *int { return &r.Config.QPTimeout }),
	partColumn(reversePart, floatColumn("bw_sum_gbit_per_s", func(r *Result) *float64 { return &r.BWSumGbps }, false)),
	partColumn(reversePart, floatColumn("reverse_bw_gbit_per_s", func(r *Result) *float64 { return &r.Reverse.BWGbps }, false)),
	partColumn(fanPart, floatColumn("fan_min_peer_gbit_per_s", func(r *Result) *float64 { return &r.Fan.MinPeerGbps }, false)),
	partColumn(fanPart, floatColumn("fan_jain_fairness", func(r *Result) *float64 { return &r.Fan.JainFairness }, false)),
	partColumn(fanPart, stringColumn("fan_fairness", func(r *Result) *string { return &r.Fan.Fairness })),
	partColumn(fanPart, optFloatColumn("fan_fairness_spread_messages", func(r *Result) **float64 { return &r.Fan.FairnessSpreadMessages })),
	partColumn(mrPart, uintColumn("mr_regs", func(r *Result) *uint64 { return &r.MR.Regs })),
	partColumn(mrPart, uintColumn("mr_hits", func(r *Result) *uint64 { return &r.MR.Hits })),
	partColumn(mrPart, uintColumn("mr_misses", func(r *Result) *uint64 { return &r.MR.Misses })),
	partColumn(mrPart, floatColumn("mr_window_share", func(r *Result) *float64 { return &r.MR.WindowShare }, false)),
	partColumn(baselinePart, floatColumn("baseline_bw_gbit_per_s", func(r *Result) *float64 { return &r.Baseline.BWGbps }, false)),
	partColumn(baselinePart, floatColumn("rdma_over_tcp", func(r *Result) *float64 { return &r.Baseline.RDMAOverTCP }, false)),
	partColumn(baselinePart, stringColumn("baseline_error", func(r *Result) *string { return &r.Baseline.Error })),
	countColumn("outs_num", func(r *Result) *int { return &r.Config.OutsNum }),
	stringColumn("post_api", func(r *Result) *string { return &r.Config.PostAPI }),
	countColumn("threads", func(r *Result) *int { return &r.Config.Threads }),
	stringColumn("cpu_list", func(r *Result) *string { return &r.Config.CPUList }),
	partColumn(threadsPart, stringColumn("thread_pinning", func(r *Result) *string { return &r.Threads.Pinning })),
	partColumn(threadsPart, optFloatColumn("thread_jain_fairness", func(r *Result) **float64 { return &r.Threads.JainFairness })),
	partColumn(threadsPart, stringColumn("thread_fairness", func(r *Result) *string { return &r.Threads.Fairness })),
	partColumn(qpsPart, optFloatColumn("qp_jain_fairness", func(r *Result) **float64 { return &r.QPs.JainFairness })),
	partColumn(qpsPart, stringColumn("qp_fairness", func(r *Result) *string { return &r.QPs.Fairness })),
	boolColumn("pcie_relaxed_ordering", func(r *Result) *bool { return &r.Config.PCIeRelaxedOrdering }),
	countColumn("sl", func(r *Result) *int { return &r.Config.SL }),
	countColumn("traffic_class", func(r *Result) *int { return &r.Config.TrafficClass }),
	// paused goes with tainted (pause frames moved during the run), here at the end so
	// that a file of the columns before still reads (as not paused).
	boolColumn("paused", func(r *Result) *bool { return &r.Paused }),
}

// csvBaseColumns is how many columns CSV had before the fan, registration, baseline
// and bidirectional ones (same schema_version): a header of at least these, in order,
// is this rdmabench's CSV, and the columns it lacks leave their parts out.
const csvBaseColumns = 44

// The optional parts of a result that CSV columns carry (see partColumn).
func reversePart(r *Result) **Direction { return &r.Reverse }
func fanPart(r *Result) **Fan           { return &r.Fan }
func mrPart(r *Result) **MRRun          { return &r.MR }
func baselinePart(r *Result) **Baseline { return &r.Baseline }
func threadsPart(r *Result) **Threads   { return &r.Threads }
func qpsPart(r *Result) **QPShares      { return &r.QPs }

// CSVHeader is the column set of the CSV form, stable for CI pipelines.
var CSVHeader = func() []string {
	h := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		h[i] = c.name
	}
	return h
}()

// NewCSVEncoder writes a header and one row per record (its Result: a record's own
// keys have no column). A percentile the sample count does not support is an empty
// cell, and so are the latency statistics of no samples.
func NewCSVEncoder(w io.Writer) Encoder { return &csvEncoder{w: csv.NewWriter(w)} }

type csvEncoder struct {
	w      *csv.Writer
	headed bool
}

func (e *csvEncoder) head() error {
	if e.headed {
		return nil
	}
	e.headed = true
	return e.w.Write(CSVHeader)
}

func (e *csvEncoder) Encode(rec Record) error {
	if err := e.head(); err != nil {
		return err
	}
	r := rec.result()
	row := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		row[i] = c.get(&r)
	}
	return e.w.Write(row)
}

func (e *csvEncoder) Flush() error {
	if err := e.head(); err != nil {
		return err
	}
	e.w.Flush()
	return e.w.Error()
}

// WriteCSV writes results as CSV: the header, then a row per result.
func WriteCSV(w io.Writer, rs []Result) error { return WriteAll(NewCSVEncoder(w), rs) }

// ReadCSV reads results from the CSV form, checking every row's schema version. The
// CSV is a summary, so the results it gives hold its columns only: no histogram, the
// devices' names and models only, the clock unknown, and of a verification only
// whether it passed (its side taken from the operation). Of the optional parts, CSV
// holds a fan's minimum per-server Gb/s, Jain index and verdict (not its per-server
// rows), a registration run's counts and window share (its mode taken from the
// config's mr), a TCP baseline's Gb/s, ratio and error (its transport taken from the
// config's baseline), and a bidirectional test's reverse Gb/s and sum: a part is there
// when one of its cells is not empty. A file from before those columns (a header of
// the first csvBaseColumns or more) reads with the parts it lacks absent. What was
// read before an error is returned with it.
func ReadCSV(r io.Reader) ([]Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	return decodeCSV(data)
}

var utf8BOM = []byte("\xef\xbb\xbf")

// isCSV tells the CSV form by its header.
func isCSV(data []byte) bool {
	data = bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	return bytes.HasPrefix(data, []byte(CSVHeader[0]+","))
}

func decodeCSV(data []byte) ([]Result, error) {
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading CSV results: %w", err)
	}
	headErr := checkCSVHeader(head)
	var out []Result
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, headErr
		}
		if err != nil {
			return out, fmt.Errorf("reading CSV results: %w", err)
		}
		line, _ := cr.FieldPos(0)
		// The version first: another rdmabench's columns may mean something else (or
		// be others: then the version says why better than the header does).
		if v, perr := strconv.Atoi(row[0]); perr == nil {
			if err := checkVersion(v); err != nil {
				return out, fmt.Errorf("line %d: %w", line, err)
			}
		}
		if headErr != nil {
			return out, headErr
		}
		r, err := decodeCSVRow(row)
		if err != nil {
			return out, fmt.Errorf("reading CSV results: line %d: %w", line, err)
		}
		if err := checkVersion(r.SchemaVersion); err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		// The row, as the result it reads into, must be one the schema accepts: what
		// the JSON readers refuse is refused here too.
		doc, err := json.Marshal(r)
		if err == nil {
			err = Validate(doc)
		}
		if err != nil {
			return out, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, r)
	}
}

// checkCSVHeader accepts the first csvBaseColumns or more of csvColumns' names.
func checkCSVHeader(head []string) error {
	for i, c := range csvColumns {
		if i >= len(head) && i >= csvBaseColumns {
			break
		}
		if i >= len(head) || head[i] != c.name {
			got := "none"
			if i < len(head) {
				got = strconv.Quote(head[i])
			}
			return fmt.Errorf("not this rdmabench's CSV (schema_version %d): column %d is %s, want %q", SchemaVersion, i+1, got, c.name)
		}
	}
	if len(head) > len(csvColumns) {
		return fmt.Errorf("not this rdmabench's CSV (schema_version %d): %d columns, want %d", SchemaVersion, len(head), len(csvColumns))
	}
	return nil
}

// decodeCSVRow reads a row of as many cells as the header, the first of csvColumns.
func decodeCSVRow(row []string) (Result, error) {
	var r Result
	for i, cell := range row {
		// As the JSON reader does: text that is not UTF-8 reads as U+FFFD, so that a
		// result reads the same from either form.
		cell = strings.ToValidUTF8(cell, "\uFFFD")
		if err := csvColumns[i].set(&r, cell); err != nil {
			return r, fmt.Errorf("column %s: %w", csvColumns[i].name, err)
		}
	}
	if r.Verify != nil && r.Config.Op == "read" {
		r.Verify.Side = "client"
	}
	if r.Fan != nil {
		r.Fan.Peers = []Peer{} // not in CSV: none, a list still (the schema's array)
		if r.Fan.Fairness != "" {
			r.Fan.FairnessEdgeMessages = 2*int64(r.Config.SQDepth) + int64(r.Config.CQMod) // as FairnessOf
		}
	}
	if r.MR != nil {
		r.MR.Mode = r.Config.MR
	}
	if r.Baseline != nil {
		r.Baseline.Transport = r.Config.Baseline
	}
	return r, nil
}

// partColumn is c over an optional part of a result: an empty cell where the part is
// absent, and a cell that is not empty makes the part (holding what CSV carries).
func partColumn[P any](part func(*Result) **P, c csvColumn) csvColumn {
	get, set := c.get, c.set
	c.get = func(r *Result) string {
		if *part(r) == nil {
			return ""
		}
		return get(r)
	}
	c.set = func(r *Result, s string) error {
		if s == "" {
			return nil
		}
		if *part(r) == nil {
			*part(r) = new(P)
		}
		return set(r, s)
	}
	return c
}

// optFloatColumn is a column of an optional number: an empty cell for none.
func optFloatColumn(name string, f func(*Result) **float64) csvColumn {
	return csvColumn{name,
		func(r *Result) string {
			if *f(r) == nil {
				return ""
			}
			return formatFloat(**f(r))
		},
		func(r *Result, s string) error {
			*f(r) = nil
			if s == "" {
				return nil
			}
			v, err := parseFinite(s)
			if err == nil {
				*f(r) = &v
			}
			return err
		}}
}

// countColumn is an int column where 0 (none) is an empty cell.
func countColumn(name string, f func(*Result) *int) csvColumn {
	c := intColumn(name, f)
	get, set := c.get, c.set
	c.get = func(r *Result) string {
		if *f(r) == 0 {
			return ""
		}
		return get(r)
	}
	c.set = func(r *Result, s string) error {
		if s == "" {
			*f(r) = 0
			return nil
		}
		return set(r, s)
	}
	return c
}

func intColumn(name string, f func(*Result) *int) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return strconv.Itoa(*f(r)) },
		func(r *Result, s string) (err error) { *f(r), err = parseInt(s); return err }}
}

func int64Column(name string, f func(*Result) *int64, latency bool) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return latencyCell(r, latency, strconv.FormatInt(*f(r), 10)) },
		func(r *Result, s string) (err error) {
			if latency && s == "" {
				return nil
			}
			*f(r), err = parseInt64(s)
			return err
		}}
}

func uintColumn(name string, f func(*Result) *uint64) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return strconv.FormatUint(*f(r), 10) },
		func(r *Result, s string) error {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("%q: want a count", s)
			}
			*f(r) = v
			return nil
		}}
}

func floatColumn(name string, f func(*Result) *float64, latency bool) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return latencyCell(r, latency, formatFloat(*f(r))) },
		func(r *Result, s string) error {
			if latency && s == "" {
				return nil
			}
			v, err := parseFinite(s)
			if err == nil {
				*f(r) = v
			}
			return err
		}}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a finite number", s)
	}
	return v, nil
}

func percentileColumn(name string, f func(*Result) **int64) csvColumn {
	return csvColumn{name,
		func(r *Result) string {
			if p := *f(r); p != nil {
				return strconv.FormatInt(*p, 10)
			}
			return ""
		},
		func(r *Result, s string) error {
			if s == "" {
				*f(r) = nil
				return nil
			}
			v, err := parseInt64(s)
			*f(r) = &v
			return err
		}}
}

func stringColumn[S ~string](name string, f func(*Result) *S) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return string(*f(r)) },
		func(r *Result, s string) error { *f(r) = S(s); return nil }}
}

func boolColumn(name string, f func(*Result) *bool) csvColumn {
	return csvColumn{name,
		func(r *Result) string { return strconv.FormatBool(*f(r)) },
		func(r *Result, s string) (err error) { *f(r), err = parseBool(s); return err }}
}

// latencyCell is empty for the latency statistics of no samples.
func latencyCell(r *Result, latency bool, cell string) string {
	if latency && r.Lat.Samples == 0 {
		return ""
	}
	return cell
}

func setTime(r *Result, s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err == nil {
		_, err = t.MarshalText() // a time JSON can hold
	}
	if err != nil {
		return fmt.Errorf("%q: want an RFC 3339 time", s)
	}
	r.Time = t
	return nil
}

func getVerifyOK(r *Result) string {
	if r.Verify == nil {
		return ""
	}
	return strconv.FormatBool(r.Verify.OK)
}

func setVerifyOK(r *Result, s string) error {
	if s == "" {
		r.Verify = nil
		return nil
	}
	ok, err := parseBool(s)
	if err != nil {
		return err
	}
	r.Verify = &Verify{Side: "server", OK: ok, FirstBadOffset: -1}
	if !ok {
		r.Verify.Detail = "read from CSV, which does not say where"
	}
	return nil
}

func parseInt(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want an integer", s)
	}
	return v, nil
}

func parseInt64(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want an integer", s)
	}
	return v, nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New(strconv.Quote(s) + ": want true or false")
}
