package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/doctor"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

type doctorOptions struct {
	Local     bench.Local
	Server    string // "": no server checks
	TCPPort   int
	Token     string
	TokenFile string
	Timeout   time.Duration
	JSON      bool
	Format    string // --format of the text: auto, table or plain
	Out       io.Writer

	// Where the checks look; tests replace them.
	Root    string
	Devices func() ([]verbs.DeviceInfo, error)
	Addrs   func(netdev string) ([]net.IP, error) // nil: the host's
	// Conn opens the control connection to addr; Client connects a measuring client.
	Conn   func(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error)
	Client func(ctx context.Context, addr string, local bench.Local, token string, timeout time.Duration) (*bench.Client, error)
}

func newCmdDoctor(runF func(*doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{Local: bench.Local{Port: 1, GIDIndex: -1}, Root: "/", Devices: verbs.Devices, Conn: dialControl, Client: bench.Dial}
	cmd := &cobra.Command{
		Use:     "doctor [-d DEVICE] [-i PORT] [-x INDEX] [--json] [SERVER [-p PORT]]",
		Example: "  rdmabench doctor\n  rdmabench doctor -d mlx5_0 --token-file ~/.rdmabench-token host-a",
		Short:   "Check this host (and a server) for what rdmabench needs, with a fix for each problem",
		Long: `Check this host for what rdmabench needs, and say how to fix what is wrong:

  device       an RDMA device, its port ACTIVE and a GID, as server/write/read pick them
               with the same -d/-i/-x
  link-rate    the port's rate against its NIC profile's nominal rate
  mtu          the RDMA MTU against what the netdev's MTU carries (RoCE)
  netdev       the RoCE port's netdev is up
  roce-v2-gid  a RoCE v2 GID for the netdev's IPv4 address
  soft-roce    for rxe: rdma_rxe loaded and the device on an existing netdev; with no
               device at all, how to create one
  memlock      the locked-memory limit (ulimit -l) against what a default write bw
               registers
  hugepages    hugepages reserved for --hugepages
  clock        whether the timed loops tick on the TSC
  clocksource  the kernel's clocksource, on bare metal or in a VM: whether it demoted
               the TSC, and whether each timestamp costs a system call (hpet, acpi_pm)

With SERVER, also:

  server-reachable  a TCP connection to its control port (-p)
  server-token      the token (--token-file, --token or RDMABENCH_TOKEN) it requires,
                    or that it requires none when none is given
  server-version    its rdmabench version, protocol and device
  write-bw, read-bw a WRITE and a READ bandwidth run of 100 4 KiB messages, which must
                    measure without an error

Each check prints ok, warn, FAIL or skip (not applicable, or an earlier check failed),
what it found and, for a warning or a failure, a fix; --json prints the same as one
JSON object: {"schema_version", "ok", "summary": {verdict: count}, "checks": [{"name",
"verdict", "found", "fix"}]} (docs/schemas/doctor.schema.json).

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 for a bad
command line.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Server = args[0]
			} else {
				for _, f := range []string{"port", "token", "token-file", "timeout"} {
					if cmd.Flags().Changed(f) {
						return flagErrorf("--%s goes with SERVER (see '%s --help')", f, cmd.CommandPath())
					}
				}
			}
			if opts.Timeout <= 0 {
				return flagErrorf("--timeout %v: want a positive duration", opts.Timeout)
			}
			if cmd.Flags().Changed("format") && opts.JSON {
				return flagErrorf("--format goes with the text, not --json")
			}
			if err := checkFormat(opts.Format, report.TableFormats); err != nil {
				return err
			}
			if opts.Server != "" {
				var err error
				if opts.Token, err = token(opts.Token, opts.TokenFile); err != nil {
					return err
				}
			}
			opts.Out = cmd.OutOrStdout()
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(opts)
		},
	}
	f := cmd.Flags()
	addLocalFlags(cmd, &opts.Local)
	f.BoolVar(&opts.JSON, "json", false, "print the checks as JSON")
	f.IntVarP(&opts.TCPPort, "port", "p", oob.DefaultPort, "server's TCP port")
	f.StringVar(&opts.Token, "token", "", "the server's shared secret (visible in ps: prefer --token-file or $RDMABENCH_TOKEN)")
	f.StringVar(&opts.TokenFile, "token-file", "", "read the server's shared secret from FILE")
	f.DurationVar(&opts.Timeout, "timeout", 10*time.Second, "bound on connecting to the server and on each handshake step")
	addTableFormatFlag(cmd, &opts.Format, "auto")
	f.Lookup("format").Usage = "how the checks are shown: table (aligned columns, each fix on a line of its own), " +
		"plain (one header line 'verdict check found fix', a line per check, one word a cell, for awk) " +
		"or auto (a table on a terminal, else plain)"
	return cmd
}

func dialControl(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	nc, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	oob.Tune(nc, timeout)
	return nc, nil
}

func doctorRun(o *doctorOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := doctor.Options{Root: o.Root, Local: o.Local, Devices: o.Devices, Addrs: o.Addrs}
	if o.Server != "" {
		// The runs tick on the clock a test would use (--clock auto).
		if err := applyClock("auto"); err != nil {
			return err
		}
		addr := net.JoinHostPort(o.Server, strconv.Itoa(o.TCPPort))
		d.Server = &doctor.Server{
			Addr: addr, Token: o.Token, Timeout: o.Timeout,
			Conn: func(ctx context.Context) (net.Conn, error) { return o.Conn(ctx, addr, o.Timeout) },
			Client: func(ctx context.Context) (*bench.Client, error) {
				return o.Client(ctx, addr, o.Local, o.Token, o.Timeout)
			},
		}
	}
	r := doctor.NewReport(doctor.Run(ctx, d))
	write := r.WriteText
	switch {
	case o.JSON:
		write = r.WriteJSON
	case formatFor(o.Out, o.Format) == report.FormatPlain:
		write = r.WritePlain
	}
	if err := write(o.Out); err != nil {
		return err
	}
	if n := r.Summary[doctor.Fail]; n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", n, len(r.Checks))
	}
	return nil
}
