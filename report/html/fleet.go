package htmlreport

import (
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/result"
)

// fleetSection draws each input that holds a fleet's results (rdmabench fleet) as its
// host x host matrix, judged as the coordinator and `report matrix` judge it (the
// default thresholds, with the retests the input holds): a table whose cells are
// coloured by their verdict, bad red, flaky yellow, cannot-tell grey.
func fleetSection(series []*Series) (section, bool) {
	sec := section{ID: "fleet", Title: "Fleet: host x host",
		Intro: []string{fmt.Sprintf("Row: the client, column: the server. A pair is bad below %.2f of the fleet's median bandwidth, above %.1f times its median p50 latency, or when it failed; bad in every retest stays bad (red, !), good in one is flaky (yellow, ~); with fewer than %d pairs measured nothing can be judged (grey, ?). '-': not run.",
			pairs.DefaultMinBWFraction, pairs.DefaultMaxLatFactor, pairs.MinMeasured)}}
	for _, s := range series {
		out, err := pairs.FromResults(s.Results, pairs.OutlierOpts{})
		switch {
		case errors.Is(err, pairs.ErrNoFleet):
			continue
		case err != nil:
			sec.Notes = append(sec.Notes, clean(s.Label, 128)+": not drawn: "+clean(err.Error(), 300))
			continue
		}
		metric := pairs.MetricBW
		for _, r := range s.Results {
			if r.Fleet != nil && r.Config.Test == result.Lat {
				metric = pairs.MetricLat
			}
		}
		sec.Tables = append(sec.Tables, matrixTable(s.Label, out, metric))
	}
	return sec, len(sec.Tables) > 0 || len(sec.Notes) > 0
}

func matrixTable(label string, out pairs.Outcome, metric string) table {
	unit := map[string]string{pairs.MetricBW: "Gb/s", pairs.MetricLat: "p50 us"}[metric]
	t := table{Caption: fmt.Sprintf("%s: %s, %d pairs (%d retests), %d bad", clean(label, 128), unit, len(out.Results), out.Retests, out.Bad()),
		Head: []string{"client \\ server"}}
	for _, h := range out.Hosts {
		t.Head = append(t.Head, clean(h, 80))
	}
	m := pairs.Matrix(len(out.Hosts), out.Results, out.Verdicts, metric)
	for a, row := range m {
		r := []tcell{txt(clean(out.Hosts[a], 80))}
		for _, c := range row {
			cls := "num"
			switch {
			case c.Bad || (c.Failed && !c.Flaky):
				cls = "bad"
			case c.Flaky:
				cls = "warn"
			case c.Unjudged:
				cls = "noise"
			}
			r = append(r, tcell{Text: c.Text(metric), Class: cls})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}
