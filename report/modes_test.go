package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/sweep"
)

func TestModesTable(t *testing.T) {
	lo, hi, tg := 0.2, 0.3, 1.5
	o := sweep.ModeOutcome{Op: "write", A: "pool", B: "per-io", Tolerance: 0.02,
		Rows: []sweep.ModeRow{
			{Size: 4096, Pairs: 3, A: 1, B: 0.25, BOverA: sweep.Ratio{N: 3, Median: 0.25, Low: &lo, High: &hi}, Verdict: sweep.Worse,
				TCP: &tg, BOverTCP: &sweep.Ratio{N: 3, Median: 0.17, Low: &lo, High: &hi}, TCPVerdict: sweep.Worse},
			{Size: 1 << 20, Pairs: 0, Verdict: sweep.Undecided, Failed: []string{"per-io: boom"}},
		},
		BreakEvenNote: "cannot tell: at 1M the runs do not decide between per-io and pool", BudgetSpent: true}
	var b bytes.Buffer
	if err := ModesTable(&b, []sweep.ModeOutcome{o}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pool Gb/s", "per-io/pool [95%]", "0.250 [0.200, 0.300]", "per-io slower", "cannot tell", "tcp Gb/s", "1.500",
		"break-even (write): cannot tell", "failed: write 1M: per-io: boom", "--budget spent"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	// A size with no pair shows no rates, never zeros.
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "1048576") && strings.Contains(line, "0.000") {
			t.Errorf("an unmeasured size shows a rate: %s", line)
		}
	}
	b.Reset()
	if err := WriteModesJSON(&b, []sweep.ModeOutcome{o}); err != nil || !json.Valid(b.Bytes()) || !strings.Contains(b.String(), `"kind": "mr_comparison"`) {
		t.Errorf("json: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := ModesCSV(&b, []sweep.ModeOutcome{o}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][10] != "worse" {
		t.Errorf("csv: %v %v", err, rows)
	}
}
