package bench

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Server follows the plans of one client at a time.
type Server struct {
	Local     Local
	Token     string
	MaxBuffer int64         // most bytes one plan may make the server register
	Timeout   time.Duration // bound on each handshake step
	Idle      time.Duration // a client silent for longer between tests is dropped
	Ops       map[string]Op
	Log       *log.Logger

	dev *verbs.Device
	me  result.Device
}

// Open opens the server's device; call it before Serve so that a wrong device fails
// at start-up, not at the first client.
func (sv *Server) Open() error {
	dev, err := verbs.Open(sv.Local.Device, sv.Local.Port, sv.Local.GIDIndex)
	if err != nil {
		return err
	}
	sv.dev, sv.me = dev, identity(dev)
	return nil
}

// Device is the identity of the opened device.
func (sv *Server) Device() result.Device { return sv.me }

// Close releases the device.
func (sv *Server) Close() error { return sv.dev.Close() }

// Serve accepts clients on l one after another until ctx is done.
func (sv *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetKeepAlivePeriod(5 * time.Second)
			tc.SetKeepAlive(true)
		}
		c := oob.NewConn(nc, sv.Timeout)
		if err := sv.session(ctx, c); err != nil {
			sv.Log.Printf("client %s: %v", nc.RemoteAddr(), err)
		}
		c.Close()
	}
}

func (sv *Server) session(ctx context.Context, c *oob.Conn) error {
	m, err := c.Expect(oob.THello)
	if errors.Is(err, io.EOF) {
		return nil // connected and left without a word: a port probe
	}
	if err != nil {
		c.SendError(err)
		return err
	}
	if sv.Token != "" && subtle.ConstantTimeCompare([]byte(m.Hello.Token), []byte(sv.Token)) != 1 {
		err := errors.New("authentication failed: this server requires a token; pass the server's --token (or RDMABENCH_TOKEN) to the client")
		c.SendError(err)
		return err
	}
	if err := c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Tool: Version, Host: sv.me.Host, Device: sv.me}}); err != nil {
		return err
	}
	sv.Log.Printf("client %s (%s, rdmabench %s, %s) connected", c.RemoteAddr(), m.Hello.Host, m.Hello.Tool, m.Hello.Device.Name)
	for ctx.Err() == nil {
		m, err := c.Recv(sv.Idle)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			c.SendError(err)
			return err
		}
		switch m.Type {
		case oob.TBye:
			sv.Log.Printf("client %s: bye", c.RemoteAddr())
			return nil
		case oob.TPlan:
			if m.Plan == nil {
				err := &oob.ProtocolError{Msg: "plan message without a plan"}
				c.SendError(err)
				return err
			}
			if err := sv.test(ctx, c, *m.Plan); err != nil {
				var perr *oob.ProtocolError
				if errors.As(err, &perr) || isNetErr(err) {
					return err
				}
				// The client was told; it may send another plan.
				sv.Log.Printf("client %s: test failed: %v", c.RemoteAddr(), err)
			}
		default:
			err := &oob.ProtocolError{Msg: fmt.Sprintf("expected a plan or bye, got %q", m.Type)}
			c.SendError(err)
			return err
		}
	}
	return nil
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// test serves one plan: the buffer and QPs exist only for its duration.
func (sv *Server) test(ctx context.Context, c *oob.Conn, cfg result.Config) error {
	refuse := func(err error) error { c.SendError(err); return err }
	Defaults(&cfg)
	if err := Validate(cfg); err != nil {
		return refuse(fmt.Errorf("invalid plan: %w", err))
	}
	op, ok := sv.Ops[cfg.Op]
	if !ok {
		return refuse(fmt.Errorf("this server does not serve %q tests", cfg.Op))
	}
	if need := ServerBytes(op, cfg); need > sv.MaxBuffer {
		return refuse(fmt.Errorf("the plan needs a %d-byte buffer on the server, above its --max-buffer of %d bytes: use a smaller --size/--offset or restart the server with a larger --max-buffer", need, sv.MaxBuffer))
	}
	s, err := sv.dev.NewSession(op.ServerSpec(cfg))
	if err != nil {
		return refuse(err)
	}
	defer s.Close() // deregisters the buffer: nothing stays exposed between tests
	sl := bwSlots(cfg)
	if cfg.Verify && !op.ToServer {
		fillSource(s, cfg, sl)
	}
	local := s.Local()
	if err := c.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local}); err != nil {
		return err
	}
	m, err := c.Expect(oob.TEndpoint)
	if err != nil {
		return err
	}
	if err := s.Connect(*m.Endpoint, cfg.MTUBytes); err != nil {
		return refuse(err)
	}
	respErr := make(chan error, 1)
	if cfg.Test == "lat" && op.ServerLatency != nil {
		go func() { respErr <- op.ServerLatency(s, cfg, sv.Timeout) }()
	} else {
		respErr <- nil
	}
	if err := c.Send(oob.Msg{Type: oob.TReady}); err != nil {
		s.Stop()
		<-respErr
		return err
	}
	done, err := c.ExpectWithin(oob.TDone, 0) // as long as the client measures; TCP keepalive notices a dead peer
	s.Stop()
	if rerr := <-respErr; rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return refuse(err)
	}
	rep := oob.Report{}
	if cfg.Verify && op.ToServer {
		var completed []uint64
		if done.Done != nil {
			completed = done.Done.Completed
		}
		rep.Verify = checkDest(s, cfg, sl, completed, "server")
	}
	length := fmt.Sprintf("x %d", cfg.Iterations)
	if cfg.DurationS > 0 {
		length = fmt.Sprintf("for %g s", cfg.DurationS)
	}
	sv.Log.Printf("client %s: %s %s %d B %s done (path MTU %d)", c.RemoteAddr(), cfg.Op, cfg.Test, cfg.MsgSizeBytes, length, s.PathMTU())
	return c.Send(oob.Msg{Type: oob.TReport, Report: &rep})
}
