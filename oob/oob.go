// Package oob is the out-of-band channel between rdmabench client and server: TCP,
// one message per frame. A frame is "RDMB", a big-endian uint16 protocol version, a
// big-endian uint32 body length (at most MaxBody) and a JSON body. Anything else is
// refused with an error that says what arrived.
package oob

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Version is the protocol version; peers must agree on it exactly. It changes with any
// change a peer of the previous version would refuse or misread (a new message type, a
// new field in a message, since unknown fields are refused): 3 added start/started and
// the counters; 4 the plan's bidirectional, mr, sync, landing, peers, baseline and
// qp_timeout fields, the server's report of its direction and the agent/fleet
// messages; 5 the host's facts in a hello's device (host_facts: PCIe link, NUMA node,
// CPU, governors, kernel, firmware, provider, rdma-core); 6 the host's clock domain
// among them (host_facts.clock_domain: the test bed's virtual or real clock); 7 the
// plan's pcie_relaxed_ordering, disable_pcie_relaxed, sl and traffic_class (both sides
// register with relaxed ordering, or not, and give their QPs the same service level
// and traffic class); 8 the
// GID's address and why it is not the control connection's (gid, gid_note) in a
// hello's device, and its netdev in an endpoint (gid_netdev), since each connection
// runs on the GID of its own local address; 9 a region plan's (the Go API's)
// pcie_relaxed_ordering, sl and traffic_class, which a server of 8 refuses.
const Version = 9

// MaxBody bounds a message body.
const MaxBody = 1 << 20

// DefaultPort is rdmabench's server port (perftest uses 18515).
const DefaultPort = 18600

var magic = [4]byte{'R', 'D', 'M', 'B'}

// Message types, in the order a session uses them.
const (
	THello     = "hello"     // both ways: versions, host, device; the server's proves the token
	TChallenge = "challenge" // server, when it has a token: a nonce to prove it with
	TAuth      = "auth"      // client: its nonce and its proof
	TPlan      = "plan"      // client: the test to run
	TEndpoint  = "endpoint"  // both ways: QPs, GID, buffer, rkey
	TReady     = "ready"     // server: QPs are in RTS, responder running
	TBeat      = "beat"      // client, while it measures: still here
	TStart     = "start"     // client, after the warm-up: the measured phase starts (take the counters)
	TStarted   = "started"   // server: its counters are taken
	TDone      = "done"      // client: measurement over (bandwidth: WRs completed per QP)
	TReport    = "report"    // server: its side of the outcome (verification)
	TBye       = "bye"       // client: no more plans
	TError     = "error"     // either: what went wrong; the session ends
)

// Message types of --baseline tcp, after a bandwidth test's report (bench/baseline.go).
const (
	TTCPBaseline = "tcp_baseline" // client: measure the same transfer over TCP
	TTCPPort     = "tcp_port"     // server: the port it listens on for one data connection, and its cookie
	TTCPDone     = "tcp_done"     // server: the bytes it moved over TCP, or why it could not
)

// Hello introduces a peer.
type Hello struct {
	Proto  int           `json:"proto"`
	Tool   string        `json:"tool_version"`
	Host   string        `json:"host"`
	Device result.Device `json:"device"`
	// Proof (server, when it has a token): HMAC of the token over both nonces.
	Proof []byte `json:"proof,omitempty"`
}

// Challenge is the server's nonce; Auth is the client's nonce and proof.
type Challenge struct {
	Nonce []byte `json:"nonce"`
}

type Auth struct {
	Nonce []byte `json:"nonce"`
	Proof []byte `json:"proof"`
}

// Report is the server's side of a finished test.
type Report struct {
	Verify *result.Verify `json:"verify,omitempty"`
	// Digest (region plans): the lowercase hex SHA-256 of the region when the client
	// said done.
	Digest string `json:"digest,omitempty"`
	// Counters are the server's port counters over the measured phase (from start to
	// done, read after their cache expired); CountersNote says why there are none.
	Counters     *counters.Deltas `json:"counters,omitempty"`
	CountersNote string           `json:"counters_note,omitempty"`
	// Reverse (bidirectional tests): the server's direction.
	Reverse *Direction `json:"reverse,omitempty"`
}

// Done ends a bandwidth measurement: how many WRs of each QP completed, so that the
// server can verify exactly what the measured run delivered.
type Done struct {
	Completed []uint64 `json:"completed_per_qp"`
	// Interrupted: the client stopped early (a bidirectional test's server stops too).
	Interrupted bool `json:"interrupted,omitempty"`
}

// Direction is what the server's own loop moved in a bidirectional test.
type Direction struct {
	Completed  uint64 `json:"completed"`
	DurationNS int64  `json:"duration_ns"`
	Error      string `json:"error,omitempty"`
}

// TCPBaseline asks the server for a TCP transfer of Messages messages of Size bytes in
// the direction Op moves data (write: client to server, read: server to client).
type TCPBaseline struct {
	Op       string `json:"op"`
	Size     int    `json:"msg_size_bytes"`
	Messages uint64 `json:"messages"`
}

// CookieBytes is the length of a TCP baseline's cookie.
const CookieBytes = 16

// TCPPort is where the server waits for the baseline's data connection, whose first
// CookieBytes bytes must be Cookie.
type TCPPort struct {
	Port   int    `json:"port"`
	Cookie []byte `json:"cookie"`
}

// TCPDone is the server's side of a TCP baseline: the bytes it received (write) or
// sent (read), and what went wrong there.
type TCPDone struct {
	Bytes uint64 `json:"bytes"`
	Error string `json:"error,omitempty"`
}

// Msg is one frame's body; Type says which field is set.
type Msg struct {
	Type      string         `json:"type"`
	Hello     *Hello         `json:"hello,omitempty"`
	Plan      *result.Config `json:"plan,omitempty"`
	Endpoint  *qp.Endpoint   `json:"endpoint,omitempty"` // what one side tells the other to connect QPs and address its buffer
	Challenge *Challenge     `json:"challenge,omitempty"`
	Auth      *Auth          `json:"auth,omitempty"`
	Done      *Done          `json:"done,omitempty"`
	Report    *Report        `json:"report,omitempty"`
	Error     string         `json:"error,omitempty"`

	TCPBaseline *TCPBaseline `json:"tcp_baseline,omitempty"`
	TCPPort     *TCPPort     `json:"tcp_port,omitempty"`
	TCPDone     *TCPDone     `json:"tcp_done,omitempty"`

	Run       *Run           `json:"run,omitempty"`
	RunResult *result.Result `json:"run_result,omitempty"`
	Register  *Register      `json:"register,omitempty"`
}

// Fleet messages (rdmabench fleet): the coordinator asks an agent to run a test as a
// client of another agent, and members register with the coordinator.
const (
	TRun       = "run"        // coordinator: run this plan as a client of the agent at Target
	TRunResult = "run_result" // agent: the result of that run (its error inside)
	TRegister  = "register"   // member: my rank, and the port my agent listens on
	TFleetDone = "fleet_done" // coordinator: the fleet is over, the agent may exit
)

// Run asks an agent to run Plan against the agent at Target (host:port).
type Run struct {
	Target string        `json:"target"`
	Plan   result.Config `json:"plan"`
}

// Register tells the coordinator a member's rank, the world size it believes in, and
// where its agent listens.
type Register struct {
	Rank  int `json:"rank"`
	World int `json:"world"`
	Port  int `json:"port"`
	// Host, when set, is where the member's agent listens (its --advertise or --bind);
	// else the host the registration came from.
	Host string `json:"host,omitempty"`
}

// PeerError is an error message the peer sent.
type PeerError struct{ Msg string }

// Error shows the peer's text with control characters escaped and at most 512 bytes of
// it: a peer's words never forge a line of this side's output or log.
func (e *PeerError) Error() string { return "peer: " + text.Clean(e.Msg, 512) }

// ProtocolError is a frame that is not what the protocol allows.
type ProtocolError struct {
	Msg string
	Err error // a sentinel such as ErrVersion, or nil
}

func (e *ProtocolError) Error() string { return "protocol error: " + e.Msg }
func (e *ProtocolError) Unwrap() error { return e.Err }

// Lost says whether err means the session cannot carry another message: the
// connection broke or timed out, or the peer broke the protocol. An error the peer sent
// (PeerError) is not a loss: the peer said what went wrong and may take another plan.
// Servers and sweeps use it alike to decide whether to go on.
//
// An error with a method SessionLost() returning true is a loss whatever it wraps.
func Lost(err error) bool {
	var over interface{ SessionLost() bool }
	if errors.As(err, &over) && over.SessionLost() {
		return true
	}
	var pe *PeerError
	if err == nil || errors.As(err, &pe) {
		return false
	}
	var ne net.Error
	var proto *ProtocolError
	return errors.As(err, &ne) || errors.As(err, &proto) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ErrVersion is a peer that speaks another protocol version.
var ErrVersion = errors.New("protocol version mismatch")

// Conn is a framed connection. Every receive has a deadline.
type Conn struct {
	c       net.Conn
	Timeout time.Duration
	// Limit bounds a received body below MaxBody (0: MaxBody); a server keeps it small
	// until the peer has authenticated.
	Limit int

	mu          sync.Mutex
	interrupted bool
}

// interruptedWrite bounds each send after Interrupt: a peer that does not read must not
// hold up a shutdown.
const interruptedWrite = 500 * time.Millisecond

// ErrInterrupted is a receive cut short by Interrupt.
var ErrInterrupted = errors.New("interrupted")

// Interrupt makes the receive in progress, and every later one, fail at once with
// ErrInterrupted (a shutdown); sends still work, so that the peer can be told.
func (c *Conn) Interrupt() {
	c.mu.Lock()
	c.interrupted = true
	c.c.SetReadDeadline(time.Now())
	c.c.SetWriteDeadline(time.Now().Add(interruptedWrite))
	c.mu.Unlock()
}

// NewConn wraps c; timeout bounds every receive that is not told otherwise.
func NewConn(c net.Conn, timeout time.Duration) *Conn { return &Conn{c: c, Timeout: timeout} }

func (c *Conn) Close() error               { return c.c.Close() }
func (c *Conn) RemoteAddr() net.Addr       { return c.c.RemoteAddr() }
func (c *Conn) LocalAddr() net.Addr        { return c.c.LocalAddr() }
func (c *Conn) SetTimeout(d time.Duration) { c.Timeout = d }

// Send writes one message.
func (c *Conn) Send(m Msg) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(body) > MaxBody {
		return fmt.Errorf("message %q of %d bytes exceeds the %d-byte limit", m.Type, len(body), MaxBody) // text: local (the message this side sends)
	}
	frame := make([]byte, 10+len(body))
	copy(frame, magic[:])
	binary.BigEndian.PutUint16(frame[4:], Version)
	binary.BigEndian.PutUint32(frame[6:], uint32(len(body)))
	copy(frame[10:], body)
	c.mu.Lock()
	d := c.Timeout
	if c.interrupted {
		d = min(d, interruptedWrite)
	}
	c.c.SetWriteDeadline(time.Now().Add(d))
	c.mu.Unlock()
	_, err = c.c.Write(frame)
	return err
}

// Recv reads one message within the timeout (0 = wait forever).
func (c *Conn) Recv(timeout time.Duration) (Msg, error) {
	var m Msg
	c.mu.Lock()
	if c.interrupted {
		c.mu.Unlock()
		return m, ErrInterrupted
	}
	if timeout > 0 {
		c.c.SetReadDeadline(time.Now().Add(timeout))
	} else {
		c.c.SetReadDeadline(time.Time{})
	}
	c.mu.Unlock()
	var hdr [10]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return m, fmt.Errorf("connection closed by the peer (crashed or stopped?): %w", err)
		}
		return m, err
	}
	if [4]byte(hdr[:4]) != magic {
		return m, &ProtocolError{Msg: fmt.Sprintf("not an rdmabench peer: frame starts with %q (is a perftest or other client talking to this port?)", hdr[:4])}
	}
	if v := binary.BigEndian.Uint16(hdr[4:]); v != Version {
		return m, &ProtocolError{Msg: fmt.Sprintf("peer speaks protocol version %d, this rdmabench speaks %d: run the same rdmabench version on both hosts", v, Version), Err: ErrVersion}
	}
	n := binary.BigEndian.Uint32(hdr[6:])
	limit := MaxBody
	if c.Limit > 0 {
		limit = min(c.Limit, MaxBody)
	}
	if n > uint32(limit) {
		return m, &ProtocolError{Msg: fmt.Sprintf("message of %d bytes exceeds the %d-byte limit", n, limit)}
	}
	// Memory grows with the bytes that arrive, not with what the header claims.
	var body bytes.Buffer
	if _, err := io.CopyN(&body, c.c, int64(n)); err != nil {
		return m, fmt.Errorf("reading a %d-byte message: %w", n, err)
	}
	dec := json.NewDecoder(&body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, &ProtocolError{Msg: "malformed message: " + text.Clean(err.Error(), 200)}
	}
	if dec.More() {
		return m, &ProtocolError{Msg: "malformed message: data after the JSON value"}
	}
	if m.Type == TError {
		return m, &PeerError{m.Error}
	}
	return m, nil
}

// Expect receives one message of type t, with the connection's timeout.
func (c *Conn) Expect(t string) (Msg, error) { return c.ExpectWithin(t, c.Timeout) }

// ExpectWithin receives one message of type t within timeout.
func (c *Conn) ExpectWithin(t string, timeout time.Duration) (Msg, error) {
	m, err := c.Recv(timeout)
	if err != nil {
		return m, err
	}
	if m.Type != t {
		return m, &ProtocolError{Msg: fmt.Sprintf("expected a %q message, got %s", t, text.Quote(m.Type))}
	}
	if !m.complete() {
		return m, &ProtocolError{Msg: fmt.Sprintf("%q message without its body", t)}
	}
	return m, nil
}

func (m Msg) complete() bool {
	switch m.Type {
	case THello:
		return m.Hello != nil
	case TPlan:
		return m.Plan != nil
	case TEndpoint:
		return m.Endpoint != nil
	case TReport:
		return m.Report != nil
	case TChallenge:
		return m.Challenge != nil && len(m.Challenge.Nonce) == NonceBytes
	case TAuth:
		return m.Auth != nil && len(m.Auth.Nonce) == NonceBytes && len(m.Auth.Proof) > 0
	case TTCPBaseline:
		return m.TCPBaseline != nil
	case TTCPPort:
		return m.TCPPort != nil && len(m.TCPPort.Cookie) == CookieBytes && m.TCPPort.Port > 0 && m.TCPPort.Port < 1<<16
	case TTCPDone:
		return m.TCPDone != nil
	case TRun:
		return m.Run != nil && m.Run.Target != ""
	case TRunResult:
		return m.RunResult != nil
	case TRegister:
		return m.Register != nil && m.Register.Port > 0 && m.Register.Port < 1<<16
	}
	return true
}

// SendError tells the peer what went wrong; failures to send are ignored (the peer
// may be gone).
func (c *Conn) SendError(err error) { _ = c.Send(Msg{Type: TError, Error: err.Error()}) }
