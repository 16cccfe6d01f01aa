// Package qp describes a queue pair's far end: what a peer needs to connect its QPs to
// a session's and to address its buffer. The verbs layer hands it out and connects to
// it; the protocol (oob) carries it between the hosts. It is plain Go, so that the
// protocol does not link libibverbs.
package qp

// Endpoint is what a peer needs to connect its QPs to a session's and to address its
// buffer: the QP numbers and first PSNs, the port's address (LID on InfiniBand, GID on
// RoCE), the path MTU and READ depth it can take, and the registered buffer. Sessions
// hand it out (Session.Local) and connect to one (Session.Connect); the protocol (oob)
// carries it between the hosts as JSON.
type Endpoint struct {
	QPNs     []uint32 `json:"qpns"`
	PSNs     []uint32 `json:"psns"`
	LID      uint16   `json:"lid"`
	GID      string   `json:"gid"`
	GIDIndex int      `json:"gid_index"`
	GIDType  string   `json:"gid_type"`
	// GIDNetdev is the netdev the GID is on, for a peer's error messages (protocol 7).
	GIDNetdev string `json:"gid_netdev,omitempty"`
	LinkLayer string `json:"link_layer"`
	MTU       int    `json:"mtu_bytes"`
	RdAtom    int    `json:"max_rd_atom"`
	Addr      uint64 `json:"addr"`
	RKey      uint32 `json:"rkey"`
	Len       uint64 `json:"len"`
}

// Queues is the lifecycle of one side's queues, whichever loops drive them (the timed
// loops of package bench, the futures of package rdma): hand out the endpoint the peer
// connects to, connect to the peer's (mtu 0: the ports' active MTU), and close. After
// Close returns, no WR moves memory.
type Queues interface {
	Local() Endpoint
	Connect(remote Endpoint, mtu int) error
	Close() error
}
