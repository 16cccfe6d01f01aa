package result

// FleetPair says where a fleet run's result belongs (rdmabench fleet): the pattern,
// the round (-1 for a retest), the retest number (0: the first pass), the client's
// and the server's ranks and agent addresses.
type FleetPair struct {
	Pattern string `json:"pattern"`
	Round   int    `json:"round"`
	Retest  int    `json:"retest"`
	A       int    `json:"client_rank"`
	B       int    `json:"server_rank"`
	HostA   string `json:"client"`
	HostB   string `json:"server"`
}
