// Package hunt searches a NIC's configuration space for anomalies: configurations that
// run far slower than their neighbours, make error or congestion counters move, fail
// their completions, stall their latency tail or serve their peers unevenly. It is the
// idea of Collie (Kong et al., NSDI 2022) as a benchmark CLI's library: a search over
// rdmabench's own parameters, measured through a Measurer (the same engine a sweep uses;
// tests use a fake), judged by rules over each run's result, and every finding confirmed
// by fresh runs and reduced to the parameters it needs. It is pure Go.
//
// # What it looks for
//
// Each anomaly is one of five classes, each a rule over one run (Rules: a profile's
// hunt section, or DefaultRules):
//
//   - low-throughput: the run's throughput is below LowThroughput (default 0.5) of the
//     best its operation and message size reached elsewhere in the hunt. The reference is
//     the point of that operation and size with the best median throughput, measured
//     again in the same rounds as the candidate (see below); a point known slow is no
//     reference. Optionally (LinkFraction, default off) also below a fraction of the
//     nominal link rate (Plan.LinkGbps): small messages never fill a link, so that bar
//     is for a space of large messages. The key says which bar: best-seen or link. A
//     run whose queues held more than MaxRampShare (default 0.25) of the bytes it moved
//     (result.Result.RampShare) measured its ramp-up and drain, not the NIC: its
//     throughput is neither judged nor a reference, nor its fairness (Outcome.RampBound
//     counts them; a longer point duration judges them).
//   - counters: an error or congestion counter moved (result.Result.CountersFlags: the
//     profile's error and congestion classes: retransmissions, out-of-sequence NAKs,
//     out-of-buffer drops, pause and CNPs, link errors), with a delta above 0. The key is
//     the counter that moved in every run, an error counter before a congestion one.
//   - failed: the run failed its completions (result.Error holds a completion status,
//     IBV_WC_..., the one a flush followed rather than the flush; or the loop saw no
//     progress, "timeout"). The key is the status. Other errors are no anomaly: a plan refused by validation
//     is never run (Plan.Validate), and a setup that failed is a point skipped.
//   - tail: the run's completion latency p99 is more than TailRatio (default 5) times its
//     p50, where the run's samples support both.
//   - unfair: the slowest share is below UnfairRatio (default 0.5) of the fastest: over
//     the peers of a run against several servers whose fairness verdict is uneven
//     (result.Fan), or over the two directions of a bidirectional run (result.Reverse).
//     A plain run of several QPs carries no per-QP counts, so its QPs cannot be judged:
//     the rule covers what the results hold.
//
// # How it searches
//
// The space (Space: DefaultSpace from a profile's grid, Override from a flag) has eleven
// dimensions: operation, message size, SQ depth, post list, CQ moderation, QPs, buffer
// offset, path MTU, QP timeout, --mr mode and direction. The search is simulated
// annealing over an anomaly score, as Collie's: a run's score is its distance to the
// nearest bar (1 at a bar: the low-throughput bar's fraction of the reference over the
// run's throughput, the tail over its bar, the unfair bar over the share; a failure or a
// moving counter scores above every bar). A chain starts at a fresh point and moves to a
// neighbour (one parameter changed, two a time in three; an ordered one mostly a step)
// when that scores higher, or with the Metropolis chance exp(-drop/T) when lower, T
// falling from 0.25 to 0.02 over 30 moves; then a new chain starts. Fresh points are
// drawn with each value weighted against how often it was measured, so every value of
// every parameter is tried early. Points rdmabench refuses (Plan.Validate) are never
// drawn; a drawn point is repaired to one it runs (--mr per-io and cache take one QP,
// a post list of 1, one direction). A measured point is never measured again by the
// search. A point that a known finding's set holds is skipped, as Collie skips the
// points of known anomalies; a finding whose set is empty (it triggers everywhere the
// hunt looked) thus ends the search.
//
// # How a finding is told from noise
//
// A run is noisy (a bed's throughput varies 5-30% from run to run), so a run that crosses
// a bar is a candidate only. A candidate is an anomaly when Rules.Confirm (3) fresh runs
// of its configuration all show it, the same way (the same failure, the same counter);
// the first that does not ends the trial. A low-throughput candidate's fresh runs are
// each paired with a fresh run of its reference, the order alternating, and each round's
// ratio must be below the bar on its own. The reference is chosen by its past runs but
// judged by fresh ones, so the winner's curse (the best of many noisy runs was lucky)
// does not carry into the ratio, and a drift of the bed moves both alike. With a noise s
// a run, a benign point at a fraction r of the best passes a round with the chance
// P(z < ln(0.5/r) / (s sqrt 2)): for r = 0.7 and s = 15% about 6%, and all three rounds
// about 2e-4. The screening itself is loose on purpose (a run is compared with the
// median of the best quarter, at most the best three, of its size's points, and a size
// with fewer than three gets random points measured first, phase reference, so that a
// chain inside a slow region does not make its own reference); the confirmation is
// what decides. The effect is stated as the median of the confirming runs' metric and
// its range: "0.26x the best READ 1M throughput seen (22.6 against 85.1 Gb/s, the best
// point re-measured alongside; 3 runs: 0.26-0.28)".
//
// # The minimal set
//
// A confirmed anomaly is reduced to the parameters it needs. First each parameter is
// moved to the space's baseline (a benign configuration: the profile's start point, one
// QP, pool, one direction) where the anomaly still triggers there (3 of 3): that is the
// reproducer's point. Then each parameter alone is varied from that point towards both
// its bounds: the bound first, and where it does not trigger, a bisection between the
// bound and the point finds the last value that does (the values that trigger are taken
// to be an interval); a category tries every value. Each value tried is judged by most of
// 3 fresh runs (stopping once 2 agree): with some twenty values tried, one noisy run must
// not put a parameter in the set. A parameter is in the set when a
// value it can take does not trigger, and its condition is the range that does:
// "sq_depth >= 512", "op = read", "msg_size_bytes >= 1M" (at the top of the space). A
// value rdmabench refuses in that context is not tried. The finding's Minimal is false
// when the hunt stopped before every parameter was varied: the rest are then held at
// the values it was confirmed at.
//
// # Reading a finding
//
// A finding record holds the class, its key, the minimal set (Set: each condition's
// dimension, operator and the space's values it holds for), the effect, the counters
// that moved, the runs that showed it (3), the reproducer's point and config, the point
// the search found it at, the runs the confirmation and the minimisation took, and two
// command lines: rdmabench's (Finding.Reproducer) and perftest's where perftest can say
// it (Finding.Perftest: not for --mr modes, a buffer offset, a post list that is not a
// multiple of the moderation). Every run is a point record too, with its phase.
//
// # Budget, interruption, resumption
//
// Plan.Budget bounds the hunt's time on Plan.Now's clock and Plan.MaxRuns its runs: no
// run starts once either is spent. A cancelled context ends the hunt with what it found
// (Outcome.Interrupted); a finding cut short in its minimisation is recorded, not
// minimal. Plan.Prior resumes from an earlier hunt's records: its runs are charged to
// the budget and never measured again (its search points are known; a trial's runs are
// taken in place of new runs of their point), its points are screened again (a candidate
// left unconfirmed is confirmed now), and its findings are kept and their sets skipped.
//
// # Against Collie
//
// Collie searches a larger space with simulated annealing: several processes and
// connections, memory-region layouts, mixes of requests and opcodes, and judges an
// anomaly by bars on pause time and throughput from the NIC's diagnostic counters
// (mlx5 perf counters, NeoHost). Its minimal feature sets come from the search's history.
// hunt keeps the annealing but searches what one rdmabench run takes (one process, one
// request kind a run, a buffer and its offset, the --mr modes), judges by rdmabench's own
// numbers and the profile's counter classes, confirms every finding with 3 fresh runs
// against a re-measured reference, and finds the minimal set by moving each parameter to
// its bounds while the anomaly still triggers.
//
// # Several servers
//
// A hunt measures one run at a time through one Measurer, and its findings are of that
// client and server. To fan out across a fleet, run one hunt per pair (each with its own
// Measurer and seed) and merge their outcomes: a run records the server that measured
// it (Measurement.Server), so merged streams stay readable; a finding reproduced on
// several pairs is the same class and set in each.
package hunt
