package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// Tuned is the tuned-parameter report: the article's table, measured.
type Tuned struct {
	SchemaVersion int                              `json:"schema_version"`
	ToolVersion   string                           `json:"tool_version"`
	Time          time.Time                        `json:"time"`
	Profile       string                           `json:"profile"`
	Client        result.Device                    `json:"client"`
	Server        result.Device                    `json:"server_device"`
	Objective     string                           `json:"objective"`
	Ops           map[string]sweep.Outcome         `json:"ops"`
	Optima        map[string]map[string]sweep.Stat `json:"optima"` // op -> objective -> cheapest within tolerance
	Reference     map[string]map[string][]int      `json:"reference"`
	Rows          []TunedRow                       `json:"rows"`
}

// TunedRow is one line of the table.
type TunedRow struct {
	Parameter string `json:"parameter"`
	Write     string `json:"write"`
	Read      string `json:"read"`
	WriteRef  string `json:"write_article"`
	ReadRef   string `json:"read_article"`
	Agreement string `json:"agreement"`
}

var paramNames = map[string]string{
	"msg_size_bytes": "batch (message) size", "sq_depth": "SQ depth", "buf_offset_bytes": "buffer offset from 4 KiB",
	"cq_mod": "completion moderation (signal every N)", "post_list": "post-list length",
}

// NewTuned builds the report from the outcomes of a sweep.
func NewTuned(p profiles.Profile, outcomes map[string]sweep.Outcome, objectives []sweep.Objective, client, server result.Device, version string) Tuned {
	t := Tuned{SchemaVersion: result.SchemaVersion, ToolVersion: version, Time: time.Now().UTC(), Profile: p.Name,
		Client: client, Server: server, Ops: outcomes, Reference: p.Reference, Optima: map[string]map[string]sweep.Stat{}}
	for op, o := range outcomes {
		t.Objective = o.Objective
		t.Optima[op] = map[string]sweep.Stat{}
		for _, obj := range objectives {
			if _, chosen, _, ok := sweep.Choose(sweep.Rescore(o.All, obj), o.Tolerance, 1); ok {
				t.Optima[op][obj.String()] = chosen
			}
		}
	}
	cell := func(op string, f func(sweep.Outcome) string) string {
		o, ok := outcomes[op]
		if !ok || !o.Chosen.Feasible {
			return "-"
		}
		return f(o)
	}
	for _, d := range profiles.Dims {
		row := TunedRow{Parameter: paramNames[d],
			Write:    cell("write", func(o sweep.Outcome) string { return fmtDim(d, o.Chosen.Point[d]) }),
			Read:     cell("read", func(o sweep.Outcome) string { return fmtDim(d, o.Chosen.Point[d]) }),
			WriteRef: fmtRef(d, p.Reference["write"][d]), ReadRef: fmtRef(d, p.Reference["read"][d])}
		row.Agreement = agreement(d, outcomes, p.Reference)
		t.Rows = append(t.Rows, row)
	}
	score := func(o sweep.Outcome) string { return fmtScore(o.Objective, o.Chosen.Score) }
	t.Rows = append(t.Rows,
		TunedRow{Parameter: "objective at the optimum (" + firstObjective(outcomes) + ")", Write: cell("write", score), Read: cell("read", score)},
		TunedRow{Parameter: "gain over the profile's start point", Write: cell("write", gain("profile start")), Read: cell("read", gain("profile start"))},
		TunedRow{Parameter: "gain over perftest defaults (64K, depth 128, cq-mod 1)", Write: cell("write", gain("perftest defaults")), Read: cell("read", gain("perftest defaults"))},
		TunedRow{Parameter: "configurations within tolerance", Write: cell("write", within), Read: cell("read", within)},
		TunedRow{Parameter: "points measured / grid, time", Write: cell("write", effort), Read: cell("read", effort)},
	)
	return t
}

func firstObjective(outcomes map[string]sweep.Outcome) string {
	for _, op := range []string{"write", "read"} {
		if o, ok := outcomes[op]; ok {
			return o.Objective
		}
	}
	return ""
}

func fmtDim(d string, v int) string {
	if d == "msg_size_bytes" {
		return fmtBytes(v)
	}
	return fmt.Sprint(v)
}

func fmtBytes(v int) string {
	switch {
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%dM", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%dK", v>>10)
	}
	return fmt.Sprint(v)
}

func fmtRef(d string, r []int) string {
	switch {
	case len(r) != 2:
		return "-"
	case d == "buf_offset_bytes" && r[0] == 0 && r[1] == 0:
		return "4 KiB boundary"
	case r[0] == r[1]:
		return fmtDim(d, r[0])
	}
	return fmtDim(d, r[0]) + "-" + fmtDim(d, r[1])
}

func agreement(d string, outcomes map[string]sweep.Outcome, ref map[string]map[string][]int) string {
	s := ""
	for _, op := range []string{"write", "read"} {
		o, ok := outcomes[op]
		r := ref[op][d]
		if !ok || !o.Chosen.Feasible || len(r) != 2 {
			continue
		}
		v := o.Chosen.Point[d]
		agree := v >= r[0] && v <= r[1]
		if d == "buf_offset_bytes" {
			agree = v%4096 == 0
		}
		if s != "" {
			s += ", "
		}
		s += map[bool]string{true: op + " agrees", false: op + " differs"}[agree]
	}
	if s == "" {
		return "-"
	}
	return s
}

func fmtScore(objective string, v float64) string {
	switch {
	case math.IsInf(v, -1):
		return "-"
	case objective == "rate":
		return fmt.Sprintf("%.4f Mpps", v)
	case objective == "p99":
		return fmt.Sprintf("p99 %.1f us", -v/1e3)
	}
	return fmt.Sprintf("%.3f Gb/s", v)
}

func gain(name string) func(sweep.Outcome) string {
	return func(o sweep.Outcome) string {
		b, ok := o.Baselines[name]
		if !ok || !b.Feasible || b.Score == 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f%% (%s)", 100*(o.Chosen.Score-b.Score)/math.Abs(b.Score), fmtScore(o.Objective, b.Score))
	}
}

func within(o sweep.Outcome) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range o.Within {
		lo, hi = math.Min(lo, st.Score), math.Max(hi, st.Score)
	}
	return fmt.Sprintf("%d (%s .. %s; tolerance %.1f%%, noise %.1f%%)", len(o.Within), fmtScore(o.Objective, lo), fmtScore(o.Objective, hi), 100*o.Tolerance, 100*o.Noise)
}

func effort(o sweep.Outcome) string {
	s := fmt.Sprintf("%d / %d, %d runs, %.0f s (%s)", o.Points, o.GridPoints, o.Runs+o.Reused, o.ElapsedS, o.Search)
	if o.Interrupted {
		s += ", interrupted"
	}
	return s
}

// TunedTable writes the report as terminal tables.
func TunedTable(w io.Writer, t Tuned) error {
	fmt.Fprintf(w, "Tuned parameters for %s (profile %s), search objective %s\n", t.Client.Model, t.Profile, t.Objective)
	tb := NewTable(w)
	tb.Header("parameter", "WRITE optimum", "READ optimum", "article WRITE", "article READ", "agreement")
	for _, r := range t.Rows {
		tb.Append(r.Parameter, r.Write, r.Read, r.WriteRef, r.ReadRef, r.Agreement)
	}
	if err := tb.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Optimum per objective (cheapest configuration within tolerance of the best measured):")
	ob := NewTable(w)
	ob.Header("op", "objective", "size", "SQ depth", "offset", "cq mod", "post list", "Gb/s", "Mpps", "p99 us", "runs")
	row := func(op, name string, st sweep.Stat) {
		p, p99 := st.Point, "-"
		if st.P99NS != nil {
			p99 = fmt.Sprintf("%.1f", float64(*st.P99NS)/1e3)
		}
		ob.Append(op, name, fmtBytes(p["msg_size_bytes"]), p["sq_depth"], p["buf_offset_bytes"], p["cq_mod"], p["post_list"],
			fmt.Sprintf("%.3f", st.BWGbps), fmt.Sprintf("%.4f", st.MsgRateMpps), p99, st.Runs)
	}
	var noP99 []string
	for _, op := range []string{"write", "read"} {
		for _, name := range []string{"bw", "rate", "p99"} {
			if st, ok := t.Optima[op][name]; ok {
				row(op, name, st)
			} else if _, swept := t.Ops[op]; swept && name == "p99" {
				noP99 = append(noP99, op)
			}
		}
		for name, st := range t.Optima[op] {
			if name[0] == 'b' && name != "bw" {
				row(op, name, st)
			}
		}
	}
	if err := ob.Render(); err != nil {
		return err
	}
	for _, op := range noP99 {
		// Said, not left out in silence: the p99 optimum is always expected here.
		fmt.Fprintf(w, "%s: no p99 optimum: no measured configuration has a p99 its samples support (at least %d signalled completions; a longer --point-duration gives more)\n",
			op, result.MinSamples(0.99))
	}
	return nil
}

// TunedCSV writes the table's rows as CSV.
func TunedCSV(w io.Writer, t Tuned) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"parameter", "write_optimum", "read_optimum", "write_article", "read_article", "agreement"})
	for _, r := range t.Rows {
		cw.Write([]string{r.Parameter, r.Write, r.Read, r.WriteRef, r.ReadRef, r.Agreement})
	}
	cw.Flush()
	return cw.Error()
}
