package htmlreport

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rdmabench/rdmabench/hunt"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// File is one input as read: its path (named in errors, its base name the default
// label) and its bytes.
type File struct {
	Path string
	Data []byte
}

// Kinds of input, as the page names them.
const (
	KindResults = "results"      // JSON, a JSON array, NDJSON or CSV results
	KindStream  = "sweep stream" // NDJSON results with sweep_wall_ns
	KindTuned   = "tuned report" // tuned.json
)

// Series is what one line (or heat map, or table) of the page stands for: the results of
// one input file and the tuned report that goes with them, or a tuned report alone.
type Series struct {
	Label   string
	Files   []string // the inputs it was read from, in argument order
	Kinds   []string // each file's kind
	Results []result.Result
	Tuned   *report.Tuned
	Hunt    *HuntInput // the findings of a hunt's records stream (rdmabench hunt)
	hasRuns bool       // from result files (false: a tuned report's point summaries only)
}

// HuntInput is what the page shows of a hunt's records stream: its findings, and how
// many runs it made.
type HuntInput struct {
	Findings []hunt.Finding
	Runs     int
	Note     string // a line that could not be read, where the stream was cut short
}

// ErrLabels is a --label list that does not give one label per series: a usage error.
var ErrLabels = errors.New("the labels do not match the series")

// Build reads the inputs into series: each results file is one, labelled by its base
// name; a tuned report joins the results file of the same client device (the nearest
// one before it on the command line, else the nearest after it, that has no tuned report
// yet), or stands alone when none matches. labels, when given, name the series in
// order, one each (ErrLabels otherwise). An input that is neither readable results nor
// a tuned report is an error naming its file.
func Build(files []File, labels []string) ([]*Series, error) {
	series, pos, pending, err := readInputs(files)
	if err != nil {
		return nil, err
	}
	series, pos = joinTuned(series, pos, pending)
	out := argumentOrder(series, pos)
	if err := labelSeries(out, labels); err != nil {
		return nil, err
	}
	return out, nil
}

// tunedIn is a tuned report as read, waiting to join a results series: its argument
// index and its file.
type tunedIn struct {
	at   int
	file string
	t    report.Tuned
}

// readInputs reads each input: a hunt's records stream or a results file is a series
// (pos: the argument index of each), a tuned report is pending, to join one later.
func readInputs(files []File) ([]*Series, []int, []tunedIn, error) {
	var (
		series  []*Series
		pos     []int // argument index of each results series
		pending []tunedIn
	)
	for i, f := range files {
		h, ok, err := readHunt(f.Data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if ok {
			series = append(series, &Series{Label: filepath.Base(f.Path), Files: []string{f.Path}, Kinds: []string{KindHunt}, Hunt: h})
			pos = append(pos, i)
			continue
		}
		t, ok, err := report.ReadTuned(f.Data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if ok {
			pending = append(pending, tunedIn{i, f.Path, t})
			continue
		}
		rs, err := result.ReadAll(bytes.NewReader(f.Data))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if len(rs) == 0 {
			return nil, nil, nil, fmt.Errorf("%s: no results in it", f.Path)
		}
		series = append(series, &Series{Label: filepath.Base(f.Path), Files: []string{f.Path}, Kinds: []string{resultsKind(f.Data)}, Results: rs, hasRuns: true})
		pos = append(pos, i)
	}
	return series, pos, pending, nil
}

// resultsKind is the kind of a results file: a sweep stream where one of its records
// has sweep_wall_ns, results otherwise.
func resultsKind(data []byte) string {
	kind := KindResults
	if recs, err := sweep.ReadStream(bytes.NewReader(data)); err == nil {
		for _, r := range recs {
			if r.WallNS > 0 {
				kind = KindStream
				break
			}
		}
	}
	return kind
}

// joinTuned joins each pending tuned report to the results series of its client device
// nearest to it (before it first), one that has no tuned report yet; a report that
// joins none is a series of its own, at its argument index.
func joinTuned(series []*Series, pos []int, pending []tunedIn) ([]*Series, []int) {
	for _, tp := range pending {
		best, bestScore := -1, [2]int{}
		for j, s := range series {
			if s.Tuned != nil || !s.sameClient(tp.t.Client) {
				continue
			}
			score := [2]int{0, tp.at - pos[j]} // before it: nearest first
			if pos[j] > tp.at {
				score = [2]int{1, pos[j] - tp.at} // then after it
			}
			if best < 0 || score[0] < bestScore[0] || (score[0] == bestScore[0] && score[1] < bestScore[1]) {
				best, bestScore = j, score
			}
		}
		t := tp.t
		if best >= 0 {
			s := series[best]
			s.Tuned = &t
			s.Files, s.Kinds = append(s.Files, tp.file), append(s.Kinds, KindTuned)
			continue
		}
		series = append(series, &Series{Label: filepath.Base(tp.file), Files: []string{tp.file}, Kinds: []string{KindTuned}, Tuned: &t})
		pos = append(pos, tp.at)
	}
	return series, pos
}

// argumentOrder sorts the series by their argument indexes, pos: a tuned report alone
// stands where it was given.
func argumentOrder(series []*Series, pos []int) []*Series {
	order := make([]int, len(series))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return pos[order[a]] < pos[order[b]] })
	out := make([]*Series, len(series))
	for i, j := range order {
		out[i] = series[j]
	}
	return out
}

// labelSeries names the series: by labels where given (ErrLabels unless one each),
// else by their first files' paths.
func labelSeries(series []*Series, labels []string) error {
	// Two inputs of the same file name (out/a/sweep.ndjson, out/b/sweep.ndjson) are
	// told apart by their paths (report.Labels).
	first := make([]string, len(series))
	for i, s := range series {
		first[i] = s.Files[0]
	}
	for i, l := range report.Labels(first) {
		series[i].Label = l
	}
	if len(labels) > 0 {
		if len(labels) != len(series) {
			return fmt.Errorf("%w: %d given for %d series (%s): one per results file, a tuned report joining the results of its device",
				ErrLabels, len(labels), len(series), seriesNames(series))
		}
		for i, l := range labels {
			series[i].Label = l
		}
	}
	return nil
}

func seriesNames(ss []*Series) string {
	var names []string
	for _, s := range ss {
		names = append(names, strings.Join(bases(s.Files), " + "))
	}
	return strings.Join(names, ", ")
}

func bases(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// sameClient says whether the series' results were measured from device d.
func (s *Series) sameClient(d result.Device) bool {
	for _, r := range s.Results {
		c := r.Client
		if c.Name == d.Name && c.Host == d.Host && c.NodeGUID == d.NodeGUID {
			return true
		}
	}
	return false
}
