package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rdmabench/rdmabench/plan"
)

// Projection is what the probe said the budget buys: the noise of one run, the final
// rounds the budget affords, and the resolution they give; and what a resolution half
// as fine would take.
type Projection struct {
	Noise         float64 `json:"noise"`          // relative spread of one run (the probe's pairs)
	Pairs         int     `json:"pairs"`          // the probe's paired rounds
	RunS          float64 `json:"run_s"`          // wall time of a run, setup included (the probe's mean)
	FinalRounds   int     `json:"final_rounds"`   // rounds of planPoints points the final share of the budget affords
	Resolution    float64 `json:"resolution"`     // what those rounds decide at (before the floor)
	Finer         float64 `json:"finer"`          // half of Resolution (at most +-50%) ...
	FinerBudgetS  float64 `json:"finer_budget_s"` // ... would take a budget of about this (0: more rounds than the final looks allow)
	AskedBudgetS  float64 `json:"asked_budget_s,omitempty"`
	AskedReachedS bool    `json:"asked_within_looks,omitempty"`
}

// probe measures the start point and a partner (perftest's defaults, or the start's
// first neighbour) in probeRounds interleaved rounds, and from the spread of their
// paired differences and the wall time of a run states the resolution: asked for, what
// it costs; otherwise what the budget's final share affords (Projection). The gains'
// rounds' share of the budget is set aside here.
func (s *state) probe(ctx context.Context) error {
	pts := s.probePoints()
	for range probeRounds {
		if s.exhausted() {
			break
		}
		if s.round%2 == 1 {
			slices.Reverse(pts)
		}
		if err := s.measureRound(ctx, pts, "probe"); err != nil {
			return err
		}
	}
	s.project(pts)
	return nil
}

// probePoints are the start point and its partner: perftest's defaults where they are
// another point of the grid that can run, else the start's first neighbour (none
// without one).
func (s *state) probePoints() []plan.Point {
	start := s.p.Start
	partner, ok := s.p.References[RefPerftest], false
	if partner != start && s.onGrid(partner) && partner.Valid() {
		ok = true
	}
	if !ok {
		if nb := s.neighbours(start); len(nb) > 0 {
			partner, ok = nb[0], true
		}
	}
	pts := []plan.Point{start}
	if ok {
		pts = append(pts, partner)
		s.partner = &partner
	}
	return pts
}

// project plans from the probe's runs of pts: the gains' reserve, the Projection, the
// resolution the search decides at and its basis, and the search's share of the
// budget (half of what the probe and the reserve leave); then says so.
func (s *state) project(pts []plan.Point) {
	var runs int
	for _, pt := range pts {
		runs += len(s.runs[pt])
	}
	runS := 0.0
	if runs > 0 {
		runS = s.led.Spent().Seconds() / float64(runs)
	}
	gainsRuns := (s.p.Repeat + s.p.Repeat%2) * (1 + len(s.p.Others) + len(s.p.References))
	s.reserve = time.Duration(float64(gainsRuns) * runS * float64(time.Second))
	sd, df := s.pairedNoise() // the probe's pair only, so far
	pairs := 0
	if df > 0 {
		pairs = df + 1
	}
	pr := &Projection{Noise: math.Expm1(sd / math.Sqrt2), Pairs: pairs, RunS: runS}
	s.o.Projection = pr
	most := finalLooks[len(finalLooks)-1]
	roundS := float64(planPoints) * runS
	// The budget a final share of n rounds needs: what is spent, the gains, and twice
	// the final rounds (the search may take as much as they do).
	budgetFor := func(n int) float64 {
		return s.led.Spent().Seconds() + s.reserve.Seconds() + 2*float64(n)*roundS
	}
	pr.FinalRounds = most
	if s.p.Budget > 0 && roundS > 0 {
		left := (s.p.Budget - s.led.Spent() - s.reserve).Seconds() / 2
		pr.FinalRounds = min(most, max(minPairs, int(left/roundS)))
	}
	pr.Resolution = planResolution(sd, pr.FinalRounds, planPoints, 0)
	pr.Finer = min(pr.Resolution/2, 0.5) // beyond +-100% nothing is decided: what +-50% would take
	if n, reached := planRounds(sd, pr.Finer, planPoints, most, 0); reached {
		pr.FinerBudgetS = budgetFor(n)
	}
	switch {
	case pairs < 2:
		// No noise to plan with (a partner that failed, or a budget spent in the
		// probe): decide at the asked resolution, or at the coarsest the plan allows.
		s.o.ResolutionBasis = "budget"
		if s.p.Resolution > 0 {
			s.o.ResolutionBasis = "asked"
		}
	case s.p.Resolution > 0:
		s.o.ResolutionBasis = "asked"
		n, reached := planRounds(sd, s.p.Resolution, planPoints, most, 0)
		pr.AskedBudgetS, pr.AskedReachedS = budgetFor(n), reached
	default:
		s.o.ResolutionBasis = "budget"
		s.tol = min(max(pr.Resolution, minResolution), 1)
	}
	if s.o.ResolutionBasis == "budget" && pairs < 2 {
		s.o.ResolutionBasis = "assumed" // nothing measured to plan with: firstResolution
	}
	s.o.Resolution = s.tol
	s.phaseEnd = s.led.Spent() + (s.p.Budget-s.led.Spent()-s.reserve)/2
	s.noticeProjection(pr)
}

// noticeProjection states what the probe measured and what the budget buys (or what
// the asked resolution costs).
func (s *state) noticeProjection(pr *Projection) {
	switch {
	case pr.Pairs < 2:
		s.notice("probe: no noise measured (%d pairs): deciding at %s until the final rounds know more", pr.Pairs, FmtResolution(s.tol))
	case s.p.Resolution > 0:
		line := fmt.Sprintf("probe: %s noise per run, %.1f s a run: the asked %s takes a budget of about %.0f s", FmtNoise(pr.Noise), pr.RunS, FmtResolution(s.p.Resolution), pr.AskedBudgetS)
		if !pr.AskedReachedS {
			line += " (more rounds than the final looks allow: some comparisons may stay open)"
		}
		s.notice("%s", line)
	default:
		line := fmt.Sprintf("probe: %s noise per run, %.1f s a run: the budget buys about %s", FmtNoise(pr.Noise), pr.RunS, FmtResolution(pr.Resolution))
		if pr.Resolution > 1 {
			line = fmt.Sprintf("probe: %s noise per run, %.1f s a run: the budget buys %s", FmtNoise(pr.Noise), pr.RunS, FmtResolution(pr.Resolution))
		}
		if pr.FinerBudgetS > 0 {
			line += fmt.Sprintf("; %s would take a budget of about %.0f s", FmtResolution(pr.Finer), pr.FinerBudgetS)
		}
		s.notice("%s", line)
	}
}
