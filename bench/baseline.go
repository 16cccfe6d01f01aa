package bench

// --baseline tcp: after a bandwidth test, the client measures the same transfer over the
// kernel's TCP stack between the same two hosts, so that an RDMA number is compared
// with TCP measured, not quoted. On the control connection, after the test's report:
//
//	client -> tcp_baseline{op, msg_size_bytes, messages}
//	server -> tcp_port{port, cookie}  (or an error: the plan is refused, the session goes on)
//	          it listens on an ephemeral port of the address the control connection
//	          arrived on, for one connection, from the client's address, within --timeout
//	client    connects and sends the 16-byte cookie; then the data flows the way the
//	          RDMA operation moves it:
//	            write: messages x msg_size_bytes to the server, which answers one byte
//	                   (the acknowledgement) once it has read the last one
//	            read:  one byte ("go") to the server, which sends messages x msg_size_bytes
//	server -> tcp_done{bytes, error}  (what it received or sent; the session goes on)
//
// Each message is one write of a msg_size_bytes buffer (pieces of at most 1 MiB for
// larger ones) and the receiver reads it in full (io.ReadFull) into a buffer of that
// size. Only the client times it, on one clock (Go's monotonic clock): write from just
// before its first write until it has read the acknowledgement, read from just before
// it sends "go" until it has read the last byte. Connecting and the cookie are not
// timed.
//
// Every wait has a deadline: connecting, the cookie, "go" and the acknowledgement the
// control --timeout (each side's own), the transfer no progress for --timeout, and the
// whole transfer this server's --max-test-time (the server then closes the connection
// and says so) and the client's Client.BaselineLimit (10 minutes unless set), so that
// a server trickling bytes cannot hold the client either. The data connection is tuned
// as the control connection is (oob.Tune), so that a vanished host is noticed within
// --timeout as well.
//
// Over net.Pipe (tests: bench/benchtest's rig) the control connection has no IP address:
// the server then listens on 127.0.0.1 and takes the data connection from 127.0.0.1
// only, and the client connects to 127.0.0.1.

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// TCPBaseline measures the transfer of a bandwidth test (cfg: its operation and message
// size) over TCP to the server of the session: messages messages, usually the
// messages the RDMA run completed in total (all QPs), so that the TCP transfer is the
// RDMA run's bytes. It runs after Run, on the same connection; the session goes on
// afterwards.
//
// The baseline comes back whatever happened: on failure with what moved before it and
// its Error set (and no rates); RDMAOverTCP is the caller's to set (Baseline.Compare).
// A transfer that moved nothing, or took no time, is an error.
func (c *Client) TCPBaseline(ctx context.Context, cfg result.Config, messages uint64) (*result.Baseline, error) {
	b := &result.Baseline{Transport: "tcp"}
	moved, durNS, err := c.tcpBaseline(ctx, cfg, messages)
	if err != nil {
		if cfg.MsgSizeBytes > 0 {
			b.Messages = moved / uint64(cfg.MsgSizeBytes)
		}
		b.Bytes, b.DurationNS = moved, max(durNS, 0)
		err = fmt.Errorf("TCP baseline: %w", err)
		b.Error = err.Error()
		return b, err
	}
	b.SetThroughput(messages, cfg.MsgSizeBytes, durNS)
	return b, nil
}

func (c *Client) tcpBaseline(ctx context.Context, cfg result.Config, messages uint64) (moved uint64, durNS int64, err error) {
	size := cfg.MsgSizeBytes
	switch {
	case cfg.Op != "write" && cfg.Op != "read":
		return 0, 0, fmt.Errorf("unknown operation %s: want write or read", text.Quote(cfg.Op))
	case size < 1 || size > 1<<31:
		return 0, 0, fmt.Errorf("message size %d: want 1 B to 2 GiB", size)
	case messages == 0:
		return 0, 0, errors.New("the RDMA run completed no message: there is nothing to compare over TCP")
	case messages > math.MaxUint64/uint64(size):
		return 0, 0, fmt.Errorf("%d messages of %d bytes: the byte count overflows 64 bits", messages, size)
	case c.peer.Broken():
		return 0, 0, &oob.LostError{Err: errors.New("the connection to the server was lost in an earlier test")}
	}
	req := oob.TCPBaseline{Op: cfg.Op, Size: size, Messages: messages}
	if err := c.peer.Conn.Send(oob.Msg{Type: oob.TTCPBaseline, TCPBaseline: &req}); err != nil {
		c.peer.Drop()
		return 0, 0, &oob.LostError{Err: err}
	}
	m, err := c.peer.Conn.Expect(oob.TTCPPort)
	var refused *oob.PeerError
	switch {
	case errors.As(err, &refused):
		return 0, 0, fmt.Errorf("the server refused it: %w", err)
	case err != nil:
		c.peer.Drop()
		return 0, 0, &oob.LostError{Err: fmt.Errorf("no answer from the server: %w", err)}
	}
	ip, zone := baselineIP(c.peer.Conn.RemoteAddr())
	addr := net.JoinHostPort(ipZone(ip, zone), strconv.Itoa(m.TCPPort.Port))
	moved, durNS, derr := c.tcpData(ctx, addr, m.TCPPort.Cookie, req)
	// The server may still wait for a connection that never came for its own --timeout.
	dm, err := c.peer.Conn.ExpectWithin(oob.TTCPDone, 2*c.peer.Conn.Timeout)
	switch {
	case errors.As(err, &refused): // e.g. it is shutting down
		return moved, durNS, errors.Join(derr, fmt.Errorf("the server's side: %w", err))
	case err != nil:
		c.peer.Drop()
		return moved, durNS, errors.Join(derr, &oob.LostError{Err: fmt.Errorf("no word from the server after the TCP transfer: %w", err)})
	}
	var serr error
	if e := dm.TCPDone.Error; e != "" {
		serr = fmt.Errorf("the server's side: %s", text.Clean(e, 300))
	}
	if derr != nil || serr != nil {
		return moved, durNS, errors.Join(derr, serr)
	}
	total := messages * uint64(size)
	switch {
	case moved != total || dm.TCPDone.Bytes != total:
		return moved, durNS, fmt.Errorf("the client moved %d bytes and the server %d, want %d", moved, dm.TCPDone.Bytes, total)
	case durNS <= 0:
		return moved, durNS, fmt.Errorf("%d bytes in no measurable time: the clock did not advance", moved)
	}
	return moved, durNS, nil
}

// tcpData is the client's side of the data connection: it returns the bytes it sent
// (write) or received (read) and the time the transfer took.
func (c *Client) tcpData(ctx context.Context, addr string, cookie []byte, req oob.TCPBaseline) (moved uint64, durNS int64, err error) {
	timeout := c.peer.Conn.Timeout
	nc, err := dialTCP(ctx, addr, timeout)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, errors.New("interrupted before the transfer")
		}
		return 0, 0, fmt.Errorf("cannot connect to the server's TCP port %s: %v (does a firewall between the hosts let only the control port through?)", addr, err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() }) // Ctrl-C ends the transfer
	defer stop()
	d := &deadlines{nc: nc, stall: timeout, peer: "the server"}
	limit := cmp.Or(c.BaselineLimit, DefaultBaselineLimit)
	d.bound(time.Now().Add(limit), fmt.Sprintf("this client's bound on a TCP baseline (%v)", limit))
	if _, err := nc.Write(cookie); err != nil {
		return 0, 0, d.explain(err, "sending the cookie")
	}
	buf := make([]byte, req.Size)
	total := req.Messages * uint64(req.Size)
	var start time.Time
	switch req.Op {
	case "write":
		start = time.Now()
		moved, err = sendMessages(d, buf, req.Messages)
		if err != nil {
			err = d.explain(err, fmt.Sprintf("sending, after %d of %d bytes", moved, total))
			break
		}
		var ack [1]byte
		if _, aerr := io.ReadFull(paced{d}, ack[:]); aerr != nil {
			err = d.explain(aerr, "waiting for the server's acknowledgement of the last byte")
		}
	default: // read
		start = time.Now()
		d.push()
		if _, err = nc.Write([]byte{'g'}); err != nil {
			err = d.explain(err, "sending go")
			break
		}
		moved, err = recvMessages(d, buf, req.Messages)
		if err != nil {
			err = d.explain(err, fmt.Sprintf("receiving, after %d of %d bytes", moved, total))
		}
	}
	durNS = time.Since(start).Nanoseconds()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted after %d of %d bytes", moved, total)
	}
	return moved, durNS, err
}

// baseline serves a tcp_baseline message. The outcome is the client's to hear (in
// tcp_done or an error message) and is logged; it returns an error only when the
// session cannot go on.
func (sv *Server) baseline(ctx context.Context, c *oob.Conn, m oob.Msg) error {
	if m.TCPBaseline == nil {
		err := &oob.ProtocolError{Msg: "tcp_baseline message without its body"}
		c.SendError(err)
		return err
	}
	req := *m.TCPBaseline
	moved, err := sv.tcpBaseline(ctx, c, req)
	var refused refusal
	var lost *oob.LostError
	switch {
	case errors.As(err, &refused):
		c.SendError(refused.err)
		sv.logf(&sv.said, "session lines", "client %s: TCP baseline refused: %v", c.RemoteAddr(), refused.err)
		if ctx.Err() != nil {
			return errShutdown
		}
		return nil
	case errors.As(err, &lost): // the control connection; the data connection's errors are reported
		return err
	}
	done := oob.TCPDone{Bytes: moved}
	if err != nil {
		done.Error = err.Error()
		sv.logf(&sv.said, "session lines", "client %s: TCP baseline %s %d B x %d failed: %v", c.RemoteAddr(), text.Quote(req.Op), req.Size, req.Messages, err)
	} else {
		sv.logf(&sv.said, "session lines", "client %s: TCP baseline %s %d B x %d done", c.RemoteAddr(), text.Clean(req.Op, 16), req.Size, req.Messages)
	}
	if err := c.Send(oob.Msg{Type: oob.TTCPDone, TCPDone: &done}); err != nil {
		return err
	}
	return nil
}

// refusal is a baseline the server does not start: the client gets an error message.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// tcpBaseline checks the request against the server's limits, takes a test slot (the
// TCP transfer competes with RDMA tests as another test would), listens, answers
// tcp_port and moves the data. A refusal is a refusal; a lost control connection is
// oob.Lost; any other error is the transfer's.
func (sv *Server) tcpBaseline(ctx context.Context, c *oob.Conn, req oob.TCPBaseline) (uint64, error) {
	switch {
	case req.Op != "write" && req.Op != "read":
		return 0, refusal{fmt.Errorf("TCP baseline: unknown operation %s: want write or read", text.Quote(req.Op))}
	case req.Size < 1 || req.Size > 1<<31:
		return 0, refusal{fmt.Errorf("TCP baseline: message size %d: want 1 B to 2 GiB", req.Size)}
	case req.Messages < 1:
		return 0, refusal{errors.New("TCP baseline: no messages to move")}
	case req.Messages > math.MaxUint64/uint64(req.Size):
		return 0, refusal{fmt.Errorf("TCP baseline: %d messages of %d bytes: the byte count overflows 64 bits", req.Messages, req.Size)}
	case int64(req.Size) > sv.MaxBuffer:
		return 0, refusal{fmt.Errorf("the TCP baseline's %d-byte messages need a buffer above this server's --max-buffer of %d bytes", req.Size, sv.MaxBuffer)}
	}
	release, err := sv.hold(ctx, int64(req.Size), "the TCP baseline")
	if err != nil {
		return 0, refusal{err}
	}
	defer release()
	ip, zone := baselineIP(c.LocalAddr())
	peer, _ := baselineIP(c.RemoteAddr())
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Zone: zone})
	if err != nil {
		return 0, refusal{fmt.Errorf("TCP baseline: cannot listen on %s: %w", ipZone(ip, zone), err)}
	}
	defer ln.Close()
	cookie := make([]byte, oob.CookieBytes)
	if _, err := rand.Read(cookie); err != nil {
		return 0, refusal{fmt.Errorf("TCP baseline: no randomness for a cookie: %w", err)}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := c.Send(oob.Msg{Type: oob.TTCPPort, TCPPort: &oob.TCPPort{Port: port, Cookie: cookie}}); err != nil {
		return 0, &oob.LostError{Err: err}
	}
	moved, err := sv.tcpData(ctx, ln, peer, cookie, req)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (after %d bytes)", errShutdown, moved)
	}
	return moved, err
}

// tcpData is the server's side of the data connection: it accepts one connection
// within --timeout, from peer only, checks its cookie and moves the data. It returns
// the bytes it received (write) or sent (read).
func (sv *Server) tcpData(ctx context.Context, ln *net.TCPListener, peer net.IP, cookie []byte, req oob.TCPBaseline) (uint64, error) {
	var mu sync.Mutex
	var data net.Conn
	stop := context.AfterFunc(ctx, func() { // a shutdown ends the wait and the transfer
		mu.Lock()
		defer mu.Unlock()
		ln.Close()
		if data != nil {
			data.Close()
		}
	})
	defer stop()
	ln.SetDeadline(time.Now().Add(sv.Timeout))
	nc, err := ln.AcceptTCP()
	ln.Close() // exactly one data connection
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, fmt.Errorf("the client did not connect to the TCP port within %v", sv.Timeout)
		}
		return 0, fmt.Errorf("accepting the data connection: %w", err)
	}
	defer nc.Close()
	mu.Lock()
	data = nc
	mu.Unlock()
	if ctx.Err() != nil {
		return 0, errShutdown
	}
	if from := nc.RemoteAddr().(*net.TCPAddr).IP; !from.Equal(peer) {
		return 0, fmt.Errorf("the data connection came from %s, not from the client's address %s: closed", from, peer)
	}
	oob.Tune(nc, sv.Timeout)
	d := &deadlines{nc: nc, stall: sv.Timeout, peer: "the client"}
	d.push()
	got := make([]byte, oob.CookieBytes)
	if _, err := io.ReadFull(nc, got); err != nil {
		return 0, d.explain(err, "reading the cookie")
	}
	if subtle.ConstantTimeCompare(got, cookie) != 1 {
		return 0, errors.New("the data connection did not start with the cookie: closed")
	}
	d.bound(time.Now().Add(sv.MaxTestTime), fmt.Sprintf("this server's --max-test-time %v", sv.MaxTestTime))
	buf := make([]byte, req.Size)
	total := req.Messages * uint64(req.Size)
	if req.Op == "write" {
		moved, err := recvMessages(d, buf, req.Messages)
		if err != nil {
			return moved, d.explain(err, fmt.Sprintf("receiving, after %d of %d bytes", moved, total))
		}
		d.push()
		if _, err := nc.Write([]byte{'a'}); err != nil {
			return moved, d.explain(err, "acknowledging the last byte")
		}
		return moved, nil
	}
	var goByte [1]byte
	if _, err := io.ReadFull(paced{d}, goByte[:]); err != nil {
		return 0, d.explain(err, "waiting for the client's go")
	}
	moved, err := sendMessages(d, buf, req.Messages)
	if err != nil {
		return moved, d.explain(err, fmt.Sprintf("sending, after %d of %d bytes", moved, total))
	}
	return moved, nil
}

// baselineIP is the IP address (and zone) of a control connection's end, or 127.0.0.1
// where it has none (net.Pipe in tests).
func baselineIP(a net.Addr) (net.IP, string) {
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP != nil && !ta.IP.IsUnspecified() {
		if ip4 := ta.IP.To4(); ip4 != nil {
			return ip4, ""
		}
		return ta.IP, ta.Zone
	}
	return net.IPv4(127, 0, 0, 1).To4(), ""
}

func ipZone(ip net.IP, zone string) string {
	if zone != "" {
		return ip.String() + "%" + zone
	}
	return ip.String()
}

// writePiece is the most one write carries: a larger message is written in pieces, so
// that the deadline moves with the progress.
const writePiece = 1 << 20

// deadlines bounds a transfer: no progress for stall, or (when end is set) the whole
// transfer past end, fails the read or write in progress. push moves the connection's
// deadline before each read and write, at most once per stall/8.
type deadlines struct {
	nc    net.Conn
	stall time.Duration
	end   time.Time // zero: no bound on the whole transfer
	limit string    // what end is, for the error
	peer  string    // "the client" or "the server"
	set   time.Time
}

func (d *deadlines) push() {
	now := time.Now()
	if now.Sub(d.set) < d.stall/8 {
		return
	}
	dl := now.Add(d.stall)
	if !d.end.IsZero() && d.end.Before(dl) {
		dl = d.end
	}
	d.nc.SetDeadline(dl)
	d.set = now
}

// bound limits the whole transfer to end, from now on.
func (d *deadlines) bound(end time.Time, limit string) {
	d.end, d.limit, d.set = end, limit, time.Time{}
	d.push()
}

// explain says what a failed read or write of the transfer means.
func (d *deadlines) explain(err error, what string) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && !d.end.IsZero() && !time.Now().Before(d.end):
		return fmt.Errorf("%s: the transfer ran past %s", what, d.limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: no progress for %v (is %s still there?)", what, d.stall, d.peer)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: %s closed the connection", what, d.peer)
	}
	return fmt.Errorf("%s: %v", what, err) // %v: the data connection's errors are not the session's (oob.Lost)
}

// paced reads with the deadline moved before each read.
type paced struct{ d *deadlines }

func (p paced) Read(b []byte) (int, error) {
	p.d.push()
	return p.d.nc.Read(b)
}

// sendMessages writes n messages of len(buf) bytes, each one write (pieces of at most
// writePiece), and returns the bytes written.
func sendMessages(d *deadlines, buf []byte, n uint64) (uint64, error) {
	var sent uint64
	for range n {
		for off := 0; off < len(buf); {
			d.push()
			k, err := d.nc.Write(buf[off:min(len(buf), off+writePiece)])
			sent += uint64(k)
			off += k
			if err != nil {
				return sent, err
			}
		}
	}
	return sent, nil
}

// recvMessages reads n messages of len(buf) bytes, each in full, and returns the bytes
// read.
func recvMessages(d *deadlines, buf []byte, n uint64) (uint64, error) {
	var got uint64
	for range n {
		k, err := io.ReadFull(paced{d}, buf)
		got += uint64(k)
		if err != nil {
			return got, err
		}
	}
	return got, nil
}
