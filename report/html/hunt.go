package htmlreport

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/hunt"
)

// KindHunt is an input that is the records stream of rdmabench hunt.
const KindHunt = "hunt records"

// readHunt reads a hunt's records stream (hunt.ReadRecords); ok is false for any other
// input (a results file, a tuned report), which is not this reader's to refuse. A
// stream whose later line cannot be read (a crash cut it short) is still a hunt's: what
// came before is shown, with a note naming the line. A finding recorded again (one a
// resumed hunt completed) is shown as last recorded. A stream of a later schema_version
// (its first line's) is a hunt's this rdmabench cannot read: the error says so.
func readHunt(data []byte) (in *HuntInput, ok bool, err error) {
	if !bytes.Contains(data, []byte(`"kind"`)) {
		return nil, false, nil
	}
	recs, err := hunt.ReadRecords(bytes.NewReader(data))
	if len(recs) == 0 {
		var v *hunt.VersionError
		if errors.As(err, &v) {
			return nil, true, err
		}
		return nil, false, nil
	}
	in = &HuntInput{}
	if err != nil {
		in.Note = err.Error() + ": what came before it is shown"
	}
	at := map[string]int{}
	for _, r := range recs {
		switch {
		case r.Kind == hunt.KindPoint:
			in.Runs++
		case r.Kind == hunt.KindFinding && r.Finding != nil:
			if i, seen := at[r.Finding.ID]; seen {
				in.Findings[i] = *r.Finding
				continue
			}
			at[r.Finding.ID] = len(in.Findings)
			in.Findings = append(in.Findings, *r.Finding)
		}
	}
	return in, true, nil
}

// huntSection lists every hunt input's findings: the class, the minimal set, the effect,
// the counters that moved (and the runs pause frames paused) and the reproducers, one
// row each.
func huntSection(series []*Series) (section, bool) {
	sec := section{ID: "hunt", Title: "Anomalies found by rdmabench hunt",
		Intro: []string{"Each finding was shown by 3 of 3 fresh runs, then reduced to its minimal set: the parameters that must hold these values for it to trigger, whatever the others (each varied to its bounds). The effect is the median of the confirming runs with their range. 'not minimal': the hunt stopped before it had varied every parameter."}}
	n := 0
	for _, s := range series {
		if s.Hunt == nil {
			continue
		}
		n++
		t := table{Caption: fmt.Sprintf("%s: %d findings in %d runs", clean(s.Label, 128), len(s.Hunt.Findings), s.Hunt.Runs),
			Head: []string{"finding", "class", "minimal set", "effect", "counters that moved", "rdmabench", "perftest"}}
		for _, f := range s.Hunt.Findings {
			class := string(f.Class)
			if f.Key != "" {
				class += " (" + f.Key + ")"
			}
			set := f.SetString()
			if !f.Minimal {
				set += " (not minimal)"
			}
			pt := f.PerftestCommand
			if pt == "" {
				pt = "(perftest cannot express it)"
			}
			moved := strings.Join(f.CountersMoved, ", ")
			if f.PausedRuns > 0 { // as the hunt's own summary says it
				moved = strings.TrimPrefix(moved+fmt.Sprintf("; paused in %d of its %d runs (pause frames, PFC or 802.3x, moved on a port)", f.PausedRuns, f.Runs), "; ")
			}
			t.Rows = append(t.Rows, []tcell{txt(clean(f.ID, 16)), {Text: clean(class, 128), Class: "bad"}, txt(clean(set, 400)),
				txt(clean(f.Effect.Text, 400)), txt(clean(moved, 400)),
				txt(clean(f.Command, 600)), txt(clean(pt, 600))})
		}
		if len(s.Hunt.Findings) == 0 {
			t.Rows = append(t.Rows, []tcell{txt("-"), {Text: "none", Class: "good"}, txt("no anomaly was confirmed"), txt(""), txt(""), txt(""), txt("")})
		}
		sec.Tables = append(sec.Tables, t)
		if s.Hunt.Note != "" {
			sec.Notes = append(sec.Notes, clean(s.Label, 128)+": "+clean(s.Hunt.Note, 300))
		}
	}
	return sec, n > 0
}
