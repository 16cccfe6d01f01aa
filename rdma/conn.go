package rdma

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Config says what region to ask a server for, and how to reach it.
type Config struct {
	// Size is the region's length in bytes (1 B to 2 GiB): the server registers that
	// many zero bytes for remote WRITE and READ.
	Size int
	// Token is the server's shared secret ("" for a server without one); it never
	// crosses the wire (see 'rdmabench server --token-file').
	Token string
	// Timeout bounds each step of the control protocol (default 30 s); a server that
	// stops answering is detected within about as long. It also bounds Close (plus a
	// second per 64 MiB of region, for the server's hashing).
	//
	// A server holds a region for at most its --max-test-time (rdmaserver.Config.MaxTestTime,
	// 10 minutes by default), counted from Dial: a connection held longer is ended by
	// the server, and its ops in flight and all later ones then fail with the server's
	// words ("the test ran past this server's --max-test-time"). Dial again for more.
	Timeout time.Duration
	// QPs is the number of RC QPs (default 1). Each batch goes to one QP; ops on one QP
	// execute in order, ops on different QPs in no set order.
	QPs int
	// SQDepth is each QP's send queue depth (default 128).
	SQDepth int
	// SignalEvery signals at least every SignalEvery-th WR of a post list (default
	// min(16, SQDepth)); the last WR of a post list is always signalled.
	SignalEvery int
	// SL (0 to 15) and TrafficClass (0 to 255) are the service level and the traffic
	// class of both sides' QPs, given at RTR, as rdmabench's --sl and --tclass: on RoCE
	// the Ethernet priority and the IP header's TOS byte (DSCP << 2 | ECN), so that the
	// connection rides in the fabric's lossless or ECN class. Default 0, perftest's.
	SL, TrafficClass int
	// Dial, when set, makes the control connection (default: TCP).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

func (cfg *Config) defaults() error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.QPs == 0 {
		cfg.QPs = 1
	}
	if cfg.SQDepth == 0 {
		cfg.SQDepth = 128
	}
	if cfg.SignalEvery == 0 {
		cfg.SignalEvery = min(16, cfg.SQDepth)
	}
	switch {
	case cfg.Size < 1 || cfg.Size > 1<<31:
		return fmt.Errorf("rdma: region of %d bytes: want 1 B to 2 GiB", cfg.Size)
	case cfg.QPs < 1 || cfg.QPs > 1024:
		return fmt.Errorf("rdma: %d QPs: want 1 to 1024", cfg.QPs)
	case cfg.SQDepth < 1 || cfg.SQDepth > 1<<15:
		return fmt.Errorf("rdma: send queue depth %d: want 1 to 32768", cfg.SQDepth)
	case cfg.SignalEvery < 1 || cfg.SignalEvery > cfg.SQDepth:
		return fmt.Errorf("rdma: SignalEvery %d: want 1 to the send queue depth (%d)", cfg.SignalEvery, cfg.SQDepth)
	case cfg.SL < 0 || cfg.SL > 15:
		return fmt.Errorf("rdma: SL %d: want a service level from 0 to 15", cfg.SL)
	case cfg.TrafficClass < 0 || cfg.TrafficClass > 255:
		return fmt.Errorf("rdma: TrafficClass %d: want a traffic class from 0 to 255", cfg.TrafficClass)
	}
	return nil
}

// Conn is a region held on a server, and the QPs connected to it. Its methods are safe
// for concurrent use.
type Conn struct {
	d      *Device
	addr   string
	cfg    Config
	peer   *oob.Peer // the session with the server (oob/session.go)
	server DeviceInfo
	sess   provider.Session
	region qp.Endpoint // the server's: Addr, RKey, Len
	wrs    []verbs.WR  // the post list, over the session's memory
	wcs    []verbs.WC
	// retired is complete's scratch list of ops to resolve.
	retired []outcome

	shut   atomic.Bool // Close began
	mu     sync.Mutex  // the QPs' state, the post list, closed, failed, room
	qps    []qpState
	closed bool
	failed error         // the connection broke: every later post fails with it
	qpErr  error         // the first error of a QP
	room   chan struct{} // closed when send queue slots free up
	rr     int

	inflight   atomic.Int64  // WRs posted and not known complete, all QPs
	kick       chan struct{} // a post after an idle spell wakes the poller
	quit       chan struct{} // closed by Close: the poller returns
	pollerDone chan struct{}

	endBeats func() error
	reply    <-chan oob.Received // the control reader's one message: a report, or why it stopped

	closeOnce sync.Once
	closeErr  error
	digest    string
}

// qpState is one QP's send queue as the connection sees it: WRs head..next-1 are in
// flight, their ops in ring[seq % depth] (nil for a cover: a signalled zero-length
// WRITE that retires the unsignalled WRs before it).
type qpState struct {
	num        uint32
	ring       []*Op
	head, next uint64
	unsig      int   // WRs posted since the last signalled one
	err        error // the QP takes no more posts: its first error completion, or why not
	errState   bool  // the QP is in the error state: its outstanding WRs flush
}

// wr_id is the QP index above qpShift, the WR's sequence number below.
const (
	qpShift = verbs.QShift
	seqMask = 1<<qpShift - 1
)

// Addr is the server's address.
func (c *Conn) Addr() string { return c.addr }

// Server describes the server's device and port, as the server told Dial.
func (c *Conn) Server() DeviceInfo { return c.server }

// Len is the length of the remote region.
func (c *Conn) Len() int { return c.cfg.Size }

// Digest is the SHA-256 (lowercase hex) of the region's bytes when Close released it,
// as the server computed it; "" before Close or when the server sent none.
func (c *Conn) Digest() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.digest
}
