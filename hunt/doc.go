// Package hunt searches a NIC's configuration space for anomalies: configurations that
// run far slower than their neighbours, make error or congestion counters move, fail
// their completions, stall their latency tail or serve their QPs, servers or directions
// unevenly. It is the idea of Collie (Kong et al., NSDI 2022) as a benchmark CLI's
// library: a search over rdmabench's own parameters, measured through a Measurer (the
// same engine a sweep uses; tests use a fake), judged by rules over each run's result,
// and every finding confirmed by fresh runs and reduced to the parameters it needs. It is
// pure Go.
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
//     out-of-buffer drops, pause and CNPs, link errors), with a delta above 0, and did not
//     move at its control (see "Counters that move everywhere"). The key is the counter
//     that moved in every run, an error counter before a congestion one.
//   - failed: the run failed its completions (result.Error holds a completion status,
//     IBV_WC_..., the one a flush followed rather than the flush; or the loop saw no
//     progress, "timeout"). The key is the status. Other errors are no anomaly: a plan
//     refused by validation is never run (Plan.Validate), and a run that did not run (a
//     setup that failed, a server that refused) shows nothing of its point; such runs
//     are counted (Outcome.Errors, the first one's text in Outcome.FirstError, a line
//     of the summary). A hunt none of whose runs ran is an error (Run stops after ten),
//     as is a space none of whose points Validate lets run.
//   - tail: the run's completion latency p99 is more than TailRatio (default 5) times its
//     p50, where the run's samples support both.
//   - unfair: the slowest share is below UnfairRatio (default 0.5) of the fastest. The
//     key says of what: peers (the servers of a fan-out, result.Fan: their Gb/s), qps
//     (the QPs of a run of several, result.QPShares: their messages), threads (the loop
//     threads of a --threads run, result.Threads: their messages) or directions (the
//     two of a bidirectional run, result.Reverse: their Gb/s). Peers, QPs and threads
//     are judged only where the run's fairness verdict is uneven (result.FairnessOf: the
//     shares, as messages over the run's window, differ by more than its edges make, two
//     queues and a moderation): a "cannot tell" is no anomaly, nor a miss (a run of many
//     QPs of large messages moves few a QP, and its shares then say nothing), and a run
//     without a verdict (a number of messages, which every QP completes) is not judged.
//     The effect is the share ratio, the slowest's over the fastest's, as for every
//     key. A run of one QP, one server and one direction has nothing to be unfair
//     between: for each key, a miss.
//
// # How it searches
//
// The space (Space: DefaultSpace from a profile's grid, Override from a flag) has eleven
// dimensions: operation, message size, SQ depth, post list, CQ moderation, QPs, buffer
// offset, path MTU, QP timeout, --mr mode and direction; a hunt against several servers
// has a twelfth, peers (WithPeers): one server, or a fan-out to the first k of the
// servers given (result.Config.Peers, as rdmabench write bw a,b,c runs), every k up to
// 8, then powers of two and all of them. With one server it is absent, and every point
// is of one. The search is simulated annealing over an anomaly score, as Collie's: a
// run's score is its distance to the nearest bar (1 at a bar: the low-throughput bar's
// fraction of the reference over the run's throughput, the tail over its bar, the unfair
// bar over its lowest judged share; a failure or a moving counter scores above every
// bar). A chain starts at a fresh point and moves to a neighbour (one parameter changed,
// two a time in three; an ordered one mostly a step) when that scores higher, or with
// the Metropolis chance exp(-drop/T) when lower, T falling from 0.25 to 0.02 over 30
// moves; then a new chain starts. Fresh points are drawn with each value weighted
// against how often it was measured, so every value of every parameter is tried early.
// Points rdmabench refuses (Plan.Validate) are never drawn; a drawn point is repaired
// to one it runs (--mr per-io and cache take one QP, a post list of 1, one direction
// and one server; a fan-out takes one QP a server and one direction). A measured point
// is never measured again by the search.
//
// Known findings are per class and key. A point that a finding's set holds is not
// screened for that class and key again (a duplicate), but is for every other: a point
// in a known counters set is still screened for its throughput, its failures, its tail
// and its fairness. A run's score leaves out the classes known at its point, so that
// the annealing climbs towards what is not known yet. The search does not propose a
// point only where every class the rules look for is known there (a known failure
// stands for the throughput, tail and fairness too: a failed run shows none of them),
// as Collie skips the points of known anomalies; Outcome.Skipped counts those. A
// finding whose set is empty (it triggers everywhere the hunt looked) is never read
// there: it would make every point known and end the search. It does keep its class
// and key from being confirmed again.
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
// about 2e-4; at the test bed's noise, s = 30%, about 0.21 a round and 1e-2 a candidate.
// (Most benign candidates are nearer the best than 0.7; the fake NIC of the tests, whose
// worst benign point is 0.66 of the best, at s = 30% makes a false finding in about one
// 30-minute hunt in eight, among some 130 candidates.) The screening itself is loose on
// purpose (a run is compared with the median of the best quarter, at most the best three,
// of its size's points, and a size with fewer than three of one server gets random points
// of one server measured first, phase reference, so that a chain inside a slow region, or
// fan-outs that are slow, do not make their own reference); the confirmation is what
// decides. The effect is stated as the median of the confirming runs' metric and its
// range: "0.26x the best READ 1M throughput seen (22.6 against 85.1 Gb/s, the best point
// re-measured alongside; 3 runs: 0.26-0.28)".
//
// A round that cannot be judged is neither a hit nor a miss: a run whose throughput is
// its queues' ramp (Rules.MaxRampShare) for the throughput and fairness, shares whose
// verdict is not uneven for their fairness, a failed run for its numbers, a run that
// did not run for all. It is not counted; once half of the rounds cannot be judged, the
// trial cannot tell, which a confirmation takes as not confirmed and the minimisation
// as a value it cannot try (below).
//
// # Counters that move everywhere
//
// A counter can move for the bed's sake, not the configuration's: Soft-RoCE at its
// default QP timeout retransmits in most runs, a NIC can count a background error. Each
// round of a counters trial is therefore paired with a run of its control, the space's
// baseline (the order alternating, as with a reference), and counts only where the
// counter moved at the candidate and not at the control. The counter's moves at its
// control are tallied over the hunt. When it moves there, the control is measured
// Rules.Confirm times afresh and:
//
//   - where it moved in all of them, the baseline may hold the counter's trigger (its QP
//     timeout is the one that retransmits), or the counter moves everywhere. A probe
//     measures the baseline with each one parameter moved to each other value of the
//     space, once each (one run a value where the counter moves everywhere); a value
//     where it did not move is tried Rules.Confirm rounds more against the baseline,
//     silent there and moving at the baseline in each. The first that passes silences
//     it: it becomes the counter's control, the candidate is tried against it, and the
//     minimisation finds the set (the silencing value is one that does not trigger: the
//     set is the parameter's triggering values, "qp_timeout <= 14"). Where none does, the
//     counter is background.
//   - otherwise, where its moves at the control are more than a stray rate of 5% explains
//     (a one-sided binomial test at 1%), it is background; else that move was a stray,
//     and the counter stays judged (a real trigger's counter that strays in 2-3% of
//     benign runs keeps its finding).
//
// A background counter is reported once (Outcome.Background: the counter, how often it
// moved, at its control too; a summary line) and dropped from the counters rule for the
// rest of the hunt: it neither scores, nor raises candidates, nor shows in a trial. A
// counter that moves in a share p of all runs still passes a confirmation with
// p^3 (1-p)^3 (4e-3 at p = 0.2), so a counters finding's reproducer is confirmed again
// at the end of its minimisation, against its control, and its moves at the control so
// far must pass the stray test; a minimisation whose counter becomes background or gets
// another control meanwhile is abandoned, and no finding made. A resumed hunt does not
// read the background of an earlier one: it settles it again (from the prior runs,
// which replay at no cost).
//
// # The minimal set
//
// A confirmed anomaly is reduced to the parameters it needs. First each parameter is
// moved to the space's baseline (a benign configuration: the profile's start point, one
// QP, pool, one direction, one server) where the anomaly still triggers there (3 of 3):
// that is the reproducer's point; a move that cannot be judged is tried again after the
// others. Then each parameter alone is varied from that point. A category, and an ordered
// parameter of six values or fewer, tries every value, so that the values that trigger
// need not be one interval. A larger ordered one goes towards both its bounds: the
// outermost value that can be judged first, and where it does not trigger, a bisection
// between it and the point finds the last value that does (the values that trigger are
// then taken to be an interval). Each value tried is judged by most of 3 fresh runs
// (stopping once 2 agree): with some twenty values tried, one noisy run must not put a
// parameter in the set. A parameter is in the set when a value it can take does not
// trigger, and its condition is the values that do: "sq_depth >= 512", "op = read",
// "msg_size_bytes >= 1M" (at the top of the space), "sq_depth in {64, 1024}" (one-of: a
// depth between them does not). A value rdmabench refuses in that context, or whose runs
// cannot be judged (a ramp-bound run's throughput), is not tried: it is no value that
// does not trigger (nor a fairness that cannot tell). A counters trial's control is known
// not to trigger, and is not measured again. The finding's Minimal is false when the hunt
// stopped before every parameter was varied: the rest are then held at the values it was
// confirmed at.
//
// # Reading a finding
//
// A finding record holds the class, its key, the minimal set (Set: each condition's
// dimension, operator and the space's values it holds for), the effect, the counters that
// moved, the runs that showed it (3), the reproducer's point and config, the point the
// search found it at, the runs the confirmation and the minimisation took, and two
// command lines: rdmabench's (Finding.Reproducer: a fan-out's names the first k of the
// plan's servers, a,b; a point of one server the first) and perftest's where perftest can
// say it (Finding.Perftest: not for --mr modes, a buffer offset, a fan-out, a post list
// that is not a multiple of the moderation, completion events with a duration; a duration
// that is not whole seconds runs the next whole second, perftest's -D being whole
// seconds, 1 or more). Every run is a point record too, with its phase (search,
// reference, confirm, minimize, probe).
//
// A condition's operator is "=" (one value), ">=" and "<=" (an ordered parameter from or
// up to a value: any number beyond, a value a later space adds too), "in" (an ordered
// parameter's range lo..hi, any number within; a category's set) or "one-of" (an ordered
// parameter's values listed, those only). The first four are as the first hunts wrote
// them; a reader that does not know "one-of" and reads an unknown operator as the set of
// its values (Condition.Holds does) reads it right.
//
// A finding's ID is its own: a resumed hunt that completes a finding cut short records
// it again under the same ID, and a reader takes each ID's last record (LatestFindings).
//
// Every record ends in its schema_version (SchemaVersion, 2: a point says
// "bidirectional" only when true), and the outcome's JSON begins with it; their JSON
// Schemas are docs/schemas/hunt-record.schema.json (a point or a finding) and
// hunt.schema.json. A stream of version 1, or from before the key (the same fields),
// reads and resumes; a line of a later version is refused (VersionError), naming the
// line and both versions, before its fields are read.
//
// # Budget, interruption, resumption
//
// Plan.Budget bounds the time the hunt's runs take and Plan.MaxRuns their number. The
// budget is charged as the sweep's is (plan.Ledger): with each run's wall time on
// Plan.Now's clock, from before its Measurer call to after it returns, a resumed hunt's
// prior runs at the wall time recorded with them; the hunt's own work between runs, and
// the pause before a resume, are not charged, so a resumed hunt has the budget left that
// it had when it was cut. (It does not replay: its search restarts from the seed with
// what the records know, so it need not stop at the run a straight hunt would.) A run's
// wall time is its setup, its duration and the drain of all it queued, so a run is
// estimated before it starts: the median of the runs' wall time over their duration so
// far, the duration, and its queues' bytes (depth x size x QPs, or x servers for a
// fan-out, doubled for two directions) at the best rate its operation reached (10 Gb/s
// before any); no run starts that would end past the budget. The search proposes another
// point where one does not fit, until none can; a trial's run that does not fit ends the
// hunt. Outcome.TooLong counts the runs not started so. No run starts once MaxRuns is
// reached. A cancelled context ends the hunt with what it found (Outcome.Interrupted); a
// finding cut short in its minimisation is recorded, not minimal.
//
// Plan.Prior resumes from an earlier hunt's records: its runs are charged to the budget
// and never measured again (its search points are known; a trial's runs are taken in
// place of new runs of their point), its points are screened again (a candidate left
// unconfirmed is confirmed now), and its findings are kept, each ID's last record. A
// finding cut short is not known as it is: it is confirmed again where it was found and
// minimised (the prior runs replay what the earlier hunt did, at no cost, and then it
// goes on), and recorded again under its ID; one the fresh runs do not confirm is
// reported as it was. The prior runs must be the same plan's: their common settings
// (duration, iterations, warm-up, counters, hugepages, completion events) Plan.Base's,
// their points in Plan.Space (a space may grow); Run refuses others, naming the setting
// and both values, or the point.
//
// # Against Collie
//
// Collie searches a larger space with simulated annealing: several processes and
// connections, memory-region layouts, mixes of requests and opcodes, and judges an
// anomaly by bars on pause time and throughput from the NIC's diagnostic counters (mlx5
// perf counters, NeoHost). Its minimal feature sets come from the search's history. hunt
// keeps the annealing but searches what one rdmabench run takes (one process, one request
// kind a run, a buffer and its offset, the --mr modes, a fan-out to several servers),
// judges by rdmabench's own numbers and the profile's counter classes, confirms every
// finding with 3 fresh runs against a re-measured reference (a counter's against a
// control where it does not move), and finds the minimal set by varying each parameter
// while the anomaly still triggers.
//
// # Several servers
//
// A hunt measures one run at a time through one Measurer. Against several servers
// (Space.WithPeers, the CLI's SERVER a b c), a point of peers k is a fan-out from this
// client to the first k of them at once, one QP each (result.Config.Peers: the Measurer
// runs it as rdmabench write bw a,b,c does), and a point of one server runs against the
// first: the fan-out is a dimension like any other, searched, varied in the minimal set
// (a fan-out's finding holds "peers >= 2" where one server does not show it) and named
// in its reproducer. A fan-out takes one QP a server, one direction and pool
// registration (bench's rules): a value of those it cannot take is not tried there, as
// any value rdmabench refuses. Its peers' shares are the unfair rule's peers.
//
// To hunt across a fleet of pairs, run one hunt per pair (each with its own Measurer and
// seed) and merge their outcomes: a run records the server that measured it
// (Measurement.Server; a fan-out's servers, comma-separated), so merged streams stay
// readable; a finding reproduced on several pairs is the same class and set in each.
package hunt
