package perftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Conn is one side of the exchange over TCP. The client writes each exchange first
// and then reads the peer's; the server reads first. Every exchange is bounded by
// Timeout.
type Conn struct {
	NC      net.Conn
	Client  bool
	Timeout time.Duration
	// Ctx, when set, ends the conversation: an exchange does not start after it is
	// done (its cancellation also sets the connection's deadline, which each exchange
	// would otherwise reset).
	Ctx context.Context
	// PeerVersion is the peer's, once Versions has run.
	PeerVersion string
	peer        float64
}

// Exchange sends mine and reads n bytes of the peer's, in the side's order.
func (c *Conn) Exchange(what string, mine []byte, n int) ([]byte, error) {
	if c.Client {
		if err := c.Write(what, mine); err != nil {
			return nil, err
		}
		return c.Read(what, n)
	}
	got, err := c.Read(what, n)
	if err != nil {
		return nil, err
	}
	return got, c.Write(what, mine)
}

func (c *Conn) ended(what string) error {
	if c.Ctx != nil && c.Ctx.Err() != nil {
		return fmt.Errorf("perftest exchange (%s): %w", what, context.Cause(c.Ctx))
	}
	return nil
}

func readFull(nc net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := nc.Read(b[n:])
		n += m
		if err != nil {
			if n > 0 && n < len(b) && errors.Is(err, io.EOF) {
				return n, fmt.Errorf("the peer closed the connection after %d of %d bytes", n, len(b))
			}
			return n, err
		}
	}
	return n, nil
}

func explain(err error, timeout time.Duration) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the peer said nothing for %v (--timeout): does it run the same test with the same flags (-q, -s, -a, -D)?", timeout)
	}
	if errors.Is(err, io.EOF) {
		return errors.New("the peer closed the connection: its own output says why (a flag it refused, a different test, a crash)")
	}
	return err
}

// Versions exchanges the version messages and refuses a peer perftest 6.06 would.
func (c *Conn) Versions() error {
	b, err := c.Exchange("version", EncodeVersion(Version), VersionSize)
	if err != nil {
		return err
	}
	s, v, err := ParseVersion(b)
	if err != nil {
		return err
	}
	c.PeerVersion, c.peer = s, v
	return CheckPeerVersion(v)
}

// Peer is the peer's version as perftest reads it (atof).
func (c *Conn) Peer() float64 { return c.peer }

// SysData exchanges the cycle buffer and the cache line size; both sides then use the
// larger of each (peers before 5.32 send none: then ours stand).
func (c *Conn) SysData(cycle, cacheLine int) (int, int, error) {
	if c.peer < 5.32 {
		return cycle, cacheLine, nil
	}
	b, err := c.Exchange("cycle buffer", EncodeInt32(int32(cycle)), 4)
	if err != nil {
		return 0, 0, err
	}
	rc := int(ParseInt32(b))
	b, err = c.Exchange("cache line size", EncodeInt32(int32(cacheLine)), 4)
	if err != nil {
		return 0, 0, err
	}
	rl := int(ParseInt32(b))
	// perftest's are the page size (4 to 64 KiB) and the CPU's cache line: anything far
	// beyond would make this side register what the peer chose.
	if rc < 0 || rc > 1<<20 || rl < 0 || rl > 1024 || max(cacheLine, rl) > max(cycle, rc) {
		return 0, 0, fmt.Errorf("the peer's cycle buffer %d or cache line %d is out of range (perftest's are the page size and the CPU's cache line)", rc, rl)
	}
	return max(cycle, rc), max(cacheLine, rl), nil
}

// MTU exchanges the active MTUs and returns the one both use: the smaller, or ours
// when the peer's is not an MTU (as perftest).
func (c *Conn) MTU(mine int) (int, error) {
	if c.peer < 5.31 {
		return 0, fmt.Errorf("the peer runs perftest %s: its MTU exchange (before 5.31) is not spoken", c.PeerVersion)
	}
	msg, err := EncodeMTU(mine)
	if err != nil {
		return 0, err
	}
	b, err := c.Exchange("MTU", msg, mtuSize)
	if err != nil {
		return 0, err
	}
	if r, ok := ParseMTU(b); ok && r < mine {
		return r, nil
	}
	return mine, nil
}

// Keys exchanges one key message each way.
func (c *Conn) Keys(what string, mine Dest, gid bool) (Dest, error) {
	n := KeySize
	if gid {
		n = KeySizeGID
	}
	b, err := c.Exchange(what, mine.Marshal(gid), n)
	if err != nil {
		return Dest{}, err
	}
	d, err := ParseDest(b, gid)
	if err != nil {
		return Dest{}, fmt.Errorf("perftest exchange (%s): %w", what, err)
	}
	return d, nil
}

// Read reads n bytes of the peer's, bounded by Timeout (a server's half of an
// exchange, when what it writes back depends on what it read).
func (c *Conn) Read(what string, n int) ([]byte, error) {
	if err := c.ended(what); err != nil {
		return nil, err
	}
	c.NC.SetReadDeadline(time.Now().Add(c.Timeout))
	defer c.NC.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := readFull(c.NC, b); err != nil {
		return nil, fmt.Errorf("perftest exchange (%s): reading the peer's %d bytes: %w", what, n, explain(err, c.Timeout))
	}
	return b, nil
}

// Write writes b, bounded by Timeout.
func (c *Conn) Write(what string, b []byte) error {
	if err := c.ended(what); err != nil {
		return err
	}
	c.NC.SetWriteDeadline(time.Now().Add(c.Timeout))
	defer c.NC.SetWriteDeadline(time.Time{})
	if _, err := c.NC.Write(b); err != nil {
		return fmt.Errorf("perftest exchange (%s): %w", what, explain(err, c.Timeout))
	}
	return nil
}

// Report exchanges bandwidth reports (perftest's xchg_bw_reports: both sides send
// theirs; a server's is zeros).
func (c *Conn) Report(mine BWReport) (BWReport, error) {
	var pieces [][]byte
	for _, p := range mine.Encode(c.peer) {
		b, err := c.Exchange("bandwidth report", p, len(p))
		if err != nil {
			return BWReport{}, err
		}
		pieces = append(pieces, b)
	}
	return ParseBWReport(pieces)
}

// Done ends the conversation as perftest 6.06 does: "done" and close. A newer peer
// may have closed already; that is not an error.
func (c *Conn) Done() error {
	c.NC.SetWriteDeadline(time.Now().Add(c.Timeout))
	c.NC.Write([]byte(doneMsg))
	return c.NC.Close()
}
