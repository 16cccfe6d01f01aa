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
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/spf13/cobra"
)

type serverOptions struct {
	Local     bench.Local
	Bind      string
	TCPPort   int
	Token     string
	MaxBuffer int
	Timeout   time.Duration
	Idle      time.Duration
	Log       io.Writer
}

func newCmdServer(runF func(*serverOptions) error) *cobra.Command {
	opts := &serverOptions{Local: bench.Local{Port: 1, GIDIndex: -1}}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve rdmabench clients one after another, following each client's plan",
		Long: `Serve rdmabench clients one after another until stopped (Ctrl-C).

The client's command line decides the test; the server allocates, registers and
exposes only the buffer that test needs (at most --max-buffer bytes), with only the
remote access the operation needs, and deregisters it when the test ends. With a
token (--token or RDMABENCH_TOKEN) clients without it are refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Token == "" {
				opts.Token = os.Getenv("RDMABENCH_TOKEN")
			}
			if opts.MaxBuffer < 1 {
				return flagErrorf("--max-buffer must be positive")
			}
			if opts.Timeout <= 0 {
				return flagErrorf("--timeout %v: want a positive duration (it bounds every wait on a client)", opts.Timeout)
			}
			opts.Log = cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return serverRun(opts)
		},
	}
	f := cmd.Flags()
	addLocalFlags(cmd, &opts.Local)
	f.StringVar(&opts.Bind, "bind", "", "address to listen on (default: all)")
	f.IntVarP(&opts.TCPPort, "port", "p", oob.DefaultPort, "TCP port for the control connection")
	f.StringVar(&opts.Token, "token", "", "shared secret clients must present (default $RDMABENCH_TOKEN)")
	opts.MaxBuffer = 1 << 30
	f.Var(sizeValue{&opts.MaxBuffer}, "max-buffer", "largest buffer one test may make this server register (units: 64K, 1G)")
	f.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "bound on each handshake step")
	f.DurationVar(&opts.Idle, "idle", 10*time.Minute, "drop a client silent for this long between tests")
	return cmd
}

func addLocalFlags(cmd *cobra.Command, l *bench.Local) {
	f := cmd.Flags()
	f.StringVarP(&l.Device, "device", "d", "", "RDMA device (default: the first with an ACTIVE port)")
	f.IntVarP(&l.Port, "ib-port", "i", 1, "device port")
	f.IntVarP(&l.GIDIndex, "gid-index", "x", -1, "GID index (default: RoCE v2 IPv4-mapped, like perftest)")
}

func serverRun(o *serverOptions) error {
	sv := &bench.Server{
		Local: o.Local, Token: o.Token, MaxBuffer: int64(o.MaxBuffer), Timeout: o.Timeout, Idle: o.Idle,
		Ops: ops,
		Log: log.New(o.Log, "rdmabench server: ", log.LstdFlags),
	}
	if err := sv.Open(); err != nil {
		return err
	}
	defer sv.Close()
	addr := net.JoinHostPort(o.Bind, strconv.Itoa(o.TCPPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w (another server running? pick one with --port)", addr, err)
	}
	d := sv.Device()
	auth := "no token"
	if o.Token != "" {
		auth = "token required"
	}
	sv.Log.Printf("listening on %s, device %s (%s) port %d GID %d (%s), max buffer %d bytes, %s",
		l.Addr(), d.Name, d.Model, d.Port, d.GIDIndex, d.GIDType, o.MaxBuffer, auth)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sv.Serve(ctx, l)
}
