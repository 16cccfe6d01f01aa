package htmlreport

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// A forged fleet record (a rank outside the fleet) is named on the page, not a panic
// or a matrix sized by the forged number.
func TestFleetSectionRefusesForgedRanks(t *testing.T) {
	for _, a := range []int{-1, 60000} {
		s := &Series{Label: "forged", Results: []result.Result{{Config: result.Config{Op: "write", Test: result.BW}, BWGbps: 1, Fleet: &result.FleetPair{A: a, B: 1}}}}
		sec, ok := fleetSection([]*Series{s})
		if !ok || len(sec.Tables) != 0 || len(sec.Notes) != 1 || !strings.Contains(sec.Notes[0], "not drawn") {
			t.Errorf("rank %d: want one note saying the matrix is not drawn, got %v, %+v", a, ok, sec)
		}
	}
}
