package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/spf13/cobra"
)

type serverOptions struct {
	Local      bench.Local
	Bind       string
	TCPPort    int
	Token      string
	TokenFile  string
	MaxBuffer  int
	Concurrent int
	MaxTest    time.Duration
	Timeout    time.Duration
	Idle       time.Duration
	PeerGID    bool
	Log        io.Writer
	// perftest clients (perftest.go)
	PerftestPort int
	PerftestSize int
	// what a perftest server takes on its command line (perftest clients only; an
	// rdmabench client's plan says these for its own tests)
	PerftestNoRelaxed bool
	PerftestSL        int
	PerftestTClass    int
}

func newCmdServer(runF func(*serverOptions) error) *cobra.Command {
	opts := &serverOptions{Local: bench.Local{Port: 1, GIDIndex: -1}}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve rdmabench clients, one test at a time, following each client's plan",
		Long: `Serve rdmabench clients until stopped (Ctrl-C stops within a second and tells a
client whose test is running; a second Ctrl-C exits at once).

The client's command line decides the test; the server allocates, registers and
exposes only the buffer that test needs (at most --max-buffer bytes, queues counted),
with only the remote access the operation needs, for at most --max-test-time, and
deregisters it when the test ends. With a token (--token-file, --token or
RDMABENCH_TOKEN) only clients that prove they know it are served; the token never
crosses the network (challenge-response).

The server's RDMA traffic (READ responses, the WRITE latency answers, a -b test's own
stream) goes to the GID the client's endpoint names, which a client could point at
another host. A server without a token refuses -b plans; --peer-gid-check also refuses
a RoCE endpoint whose GID is not the control connection's address (off by default:
the control connection may run over another network than RoCE). See docs/security.md.`,
		Example: `  rdmabench server -d mlx5_0 --token-file ~/.rdmabench-token
  rdmabench server -d rxe0 --bind 10.0.0.1 -p 18515 --max-test-time 1h   # for --run_infinitely`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return serverRun(opts)
		},
	}
	addServerFlags(cmd, opts)
	addPerftestServerFlags(cmd, opts)
	return cmd
}

// check reads the token and checks the server flags (server, agent, fleet).
func (opts *serverOptions) check(cmd *cobra.Command) error {
	var err error
	if opts.Token, err = token(opts.Token, opts.TokenFile); err != nil {
		return err
	}
	if opts.Idle <= 0 {
		return flagErrorf("--idle %v: want a positive duration", opts.Idle)
	}
	if opts.MaxTest <= 0 {
		return flagErrorf("--max-test-time %v: want a positive duration", opts.MaxTest)
	}
	if opts.MaxBuffer < 1 {
		return flagErrorf("--max-buffer must be positive")
	}
	if err := checkPorts(opts.TCPPort, opts.Local.Port); err != nil {
		return err
	}
	if opts.Concurrent < 1 || opts.Concurrent > 64 {
		return flagErrorf("--concurrent %d: want 1 to 64 tests at a time", opts.Concurrent)
	}
	if opts.Timeout <= 0 {
		return flagErrorf("--timeout %v: want a positive duration (it bounds every wait on a client)", opts.Timeout)
	}
	if err := checkPerftestServer(opts); err != nil {
		return err
	}
	opts.Log = cmd.ErrOrStderr()
	return nil
}

func addServerFlags(cmd *cobra.Command, opts *serverOptions) {
	f := cmd.Flags()
	addLocalFlags(cmd, &opts.Local)
	f.StringVar(&opts.Bind, "bind", "", "address to listen on (default: all)")
	f.IntVarP(&opts.TCPPort, "port", "p", oob.DefaultPort, "TCP port for the control connection")
	f.StringVar(&opts.Token, "token", "", "shared secret clients must prove they know (visible in ps: prefer --token-file or $RDMABENCH_TOKEN)")
	f.StringVar(&opts.TokenFile, "token-file", "", "read the shared secret from FILE")
	f.DurationVar(&opts.MaxTest, "max-test-time", 10*time.Minute, "longest test the server follows, warm-up included (a longer --duration is refused, a longer run stopped)")
	opts.MaxBuffer = 1 << 30
	f.Var(sizeValue{&opts.MaxBuffer}, "max-buffer", "largest buffer one test may make this server register (units: 64K, 1G)")
	f.IntVar(&opts.Concurrent, "concurrent", 1, "tests run at once, from different clients (incast); --max-buffer then bounds their sum too")
	f.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "bound on each handshake step")
	f.DurationVar(&opts.Idle, "idle", 10*time.Minute, "drop a client silent for this long between tests")
	f.BoolVar(&opts.PeerGID, "peer-gid-check", false, "refuse a RoCE endpoint whose GID is not the address the client's control connection came from")
}

func addLocalFlags(cmd *cobra.Command, l *bench.Local) {
	addDeviceFlags(cmd, l)
	cmd.Flags().IntVarP(&l.GIDIndex, "gid-index", "x", -1, "GID index for every connection; -1: the RoCE v2 GID of each control connection's local address, else the IPv4-mapped RoCE v2 GID perftest picks")
}

// addDeviceFlags adds the device and port flags, for commands that make no connection
// (no GID to choose: mr); the GID index stays -1.
func addDeviceFlags(cmd *cobra.Command, l *bench.Local) {
	f := cmd.Flags()
	f.SetNormalizeFunc(perftestNames) // --ib-dev, as perftest's
	f.StringVarP(&l.Device, "device", "d", "", "RDMA device (default: the first with an ACTIVE port)")
	f.IntVarP(&l.Port, "ib-port", "i", 1, "device port")
	l.GIDIndex = -1
}

func serverRun(o *serverOptions) error {
	if err := checkPerftestServer(o); err != nil {
		return err
	}
	sv, l, err := o.start(nil)
	if err != nil {
		return err
	}
	defer sv.Close()
	ctx, cancel := signalContext(sv.Log)
	defer cancel()
	if err := servePerftest(ctx, o, sv.Log); err != nil {
		return err
	}
	return sv.Serve(ctx, l)
}

// start opens the device and the listener of a server (agent: set up by configure).
func (o *serverOptions) start(configure func(*bench.Server)) (*bench.Server, net.Listener, error) {
	sv := &bench.Server{
		Local: o.Local, Token: o.Token, MaxBuffer: int64(o.MaxBuffer), MaxTestTime: o.MaxTest, Timeout: o.Timeout, Idle: o.Idle,
		Concurrent: o.Concurrent, PeerGIDCheck: o.PeerGID,
		Ops: ops.All,
		Log: log.New(o.Log, "rdmabench server: ", log.LstdFlags),
	}
	if configure != nil {
		configure(sv)
	}
	if err := sv.Open(); err != nil {
		return nil, nil, err
	}
	addr := net.JoinHostPort(o.Bind, strconv.Itoa(o.TCPPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		sv.Close()
		return nil, nil, fmt.Errorf("cannot listen on %s: %w (another server running? pick one with --port)", addr, err)
	}
	d := sv.Device()
	auth := "no token"
	if o.Token != "" {
		auth = "token required"
	}
	gid := "each client on the GID of the address it reached, else " // RoCE: verbs.GIDForAddr
	if o.Local.GIDIndex >= 0 || d.LinkLayer != "Ethernet" {
		gid = ""
	}
	sv.Log.Printf("listening on %s, device %s (%s) port %d, %sGID %d (%s), max buffer %d bytes, max test time %v, %s",
		l.Addr(), d.Name, d.Model, d.Port, gid, d.GIDIndex, d.GIDType, o.MaxBuffer, o.MaxTest, auth) // text: local (this host's device)
	if o.Token == "" && !loopback(l.Addr()) {
		sv.Log.Printf("warning: no token: any host that reaches %s can make this server register up to %d bytes with remote %s access for up to %v per test; use --token-file on a shared network", l.Addr(), o.MaxBuffer, "WRITE/READ", o.MaxTest)
	}
	return sv, l, nil
}

// signalContext is cancelled by the first SIGINT/SIGTERM (a server then stops, telling
// a client whose test is running); a second one exits at once.
func signalContext(lg *log.Logger) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			signal.Stop(sigs)
			return
		}
		lg.Printf("stopping (again to exit at once)")
		cancel()
		<-sigs
		lg.Printf("exiting at once")
		os.Exit(130)
	}()
	return ctx, func() { cancel() }
}

func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// token is the shared secret: --token-file, else --token, else $RDMABENCH_TOKEN.
func token(flag, file string) (string, error) {
	switch {
	case file != "" && flag != "":
		return "", flagErrorf("--token and --token-file: give one")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", file)
		}
		return t, nil
	case flag != "":
		return flag, nil
	}
	return strings.TrimSpace(os.Getenv("RDMABENCH_TOKEN")), nil
}
