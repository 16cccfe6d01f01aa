package result

import "math"

// Fan is what a run against several servers adds to its result: one entry per server,
// in the order given, and how evenly they were served. The result's own totals
// (iterations_done, bytes, bw_gbit_per_s) are all servers together over the run's
// window; its latency is per message (stream) or per round (rounds: the first post of
// a round to the last server's completion, "until the last peer has it").
type Fan struct {
	Peers []Peer `json:"peers"`
	// JainFairness is Jain's index over the servers' Gb/s: 1 when all got the same,
	// 1/n when one got everything.
	JainFairness float64 `json:"jain_fairness"`
	// Fairness is the verdict on a timed stream's shares (-D): "uneven" when the
	// servers' shares, as messages over the run's window, differ by more than the run's
	// edges can make (FairnessEdgeMessages: two send queues and one CQ moderation: at
	// the start a server's first queue may wait behind the others', at the end each has
	// up to a queue in flight), else "cannot tell". Absent for rounds (every server gets
	// every round), for a run of a number of messages (every server gets them all; its
	// Gb/s says when it finished) and where nothing was measured.
	Fairness               string   `json:"fairness,omitempty"`
	FairnessSpreadMessages *float64 `json:"fairness_spread_messages,omitempty"`
	FairnessEdgeMessages   int64    `json:"fairness_edge_messages,omitempty"`
	MinPeerGbps            float64  `json:"min_peer_gbit_per_s"`
	Rounds                 uint64   `json:"rounds,omitempty"` // rounds completed (sync rounds)
	// RegisteredBytes is the client's registered buffer: one source region for a
	// broadcast, one landing region per server or one shared (READ, landing).
	RegisteredBytes int64 `json:"registered_bytes"`
	// ServerRegisteredBytes is what each server registered for its part.
	ServerRegisteredBytes int64 `json:"server_registered_bytes"`
	// The traffic the client's port carried (both directions, requests, data and
	// acknowledgements) per delivered byte and per delivered message, from its NIC
	// counters over the measured phase; absent where the port has no such counters.
	WireBytesPerByte      *float64 `json:"wire_bytes_per_byte,omitempty"`
	WirePacketsPerMessage *float64 `json:"wire_packets_per_message,omitempty"`
}

// Peer is one server's share of a fan-out / fan-in run.
type Peer struct {
	Server   string `json:"server"`
	Device   Device `json:"device"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// DurationNS is the run's first post to this server's last completion.
	DurationNS int64   `json:"duration_ns"`
	BWGbps     float64 `json:"bw_gbit_per_s"`
	// Lat: stream, post to completion of this server's signalled messages; rounds,
	// a round's first post to this server's completion.
	Lat    Latency `json:"lat_ns"`
	Verify *Verify `json:"verify,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Fairness verdicts (Fan.Fairness).
const (
	FairnessUneven     = "uneven"
	FairnessCannotTell = "cannot tell"
)

// FairnessOf judges a stream's per-server Gb/s over a window of windowNS with messages
// of size bytes and per-QP queues of depth with moderation cqMod: the spread of the
// shares in messages over the window, the edge, and the verdict (see Fan.Fairness).
func FairnessOf(gbps []float64, windowNS int64, size, depth, cqMod int) (verdict string, spread float64, edge int64) {
	if len(gbps) < 2 || windowNS <= 0 || size <= 0 {
		return "", 0, 0
	}
	lo, hi := gbps[0], gbps[0]
	for _, g := range gbps {
		lo, hi = min(lo, g), max(hi, g)
	}
	// Gb/s is bits per ns: messages over the window = g * window / 8 / size.
	spread = (hi - lo) * float64(windowNS) / 8 / float64(size)
	edge = 2*int64(depth) + int64(cqMod)
	if spread > float64(edge) {
		return FairnessUneven, spread, edge
	}
	return FairnessCannotTell, spread, edge
}

// Jain is Jain's fairness index of xs, (sum x)^2 / (n sum x^2); NaN for none or all zero.
func Jain(xs []float64) float64 {
	var s, sq float64
	for _, x := range xs {
		s += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return math.NaN()
	}
	return s * s / (float64(len(xs)) * sq)
}
