package result

// Baseline is the same transfer as a bandwidth test's, measured over another transport
// between the same two hosts (--baseline): today "tcp", the kernel's TCP stack over the
// control connection's addresses. The data flows the way the RDMA operation moves it
// (WRITE: client to server, READ: server to client), Messages messages of the test's
// size, each one write of the sender's and read in full by the receiver; the client
// times it on one clock (see bench.Client.TCPBaseline).
//
// A baseline that failed keeps what moved before the failure in Messages, Bytes and
// DurationNS, has Error set and no rates: a transfer cut short is not a rate.
type Baseline struct {
	Transport   string  `json:"transport"` // "tcp"
	Messages    uint64  `json:"messages"`
	Bytes       uint64  `json:"bytes"`
	DurationNS  int64   `json:"duration_ns"`
	BWGbps      float64 `json:"bw_gbit_per_s"` // 10^9 bits per second
	MsgRateMpps float64 `json:"msg_rate_mpps"` // 10^6 messages per second
	// RDMAOverTCP is the RDMA run's bw_gbit_per_s over the baseline's: above 1, RDMA
	// was faster.
	RDMAOverTCP float64 `json:"rdma_over_tcp,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// SetThroughput fills the baseline's counts and, for a transfer that took time, its
// rates.
func (b *Baseline) SetThroughput(msgs uint64, size int, durNS int64) {
	b.Messages, b.Bytes, b.DurationNS = msgs, msgs*uint64(size), durNS
	if durNS <= 0 {
		return
	}
	sec := float64(durNS) / 1e9
	b.BWGbps = float64(b.Bytes) * 8 / 1e9 / sec
	b.MsgRateMpps = float64(msgs) / 1e6 / sec
}

// Compare sets RDMAOverTCP from the RDMA run's bandwidth, where both are rates.
func (b *Baseline) Compare(rdmaGbps float64) {
	if b.Error == "" && b.BWGbps > 0 && rdmaGbps > 0 {
		b.RDMAOverTCP = rdmaGbps / b.BWGbps
	}
}
