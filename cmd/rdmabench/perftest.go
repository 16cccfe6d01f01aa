package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob/perftest"
	"github.com/spf13/cobra"
)

// addPerftestFlag is --perftest on the test commands: run against a plain perftest
// server (ib_write_bw and the like) instead of an rdmabench server.
func addPerftestFlag(cmd *cobra.Command, o *testOptions) {
	cmd.Flags().StringVar(&o.Perftest, "perftest", "", fmt.Sprintf("HOST[:PORT]: run against a perftest server "+
		"(ib_write_bw, ib_read_bw, ib_write_lat, ib_read_lat, started with the same test and flags) instead of SERVER; "+
		"port %d unless given", perftest.DefaultPort))
}

// server takes SERVER, or --perftest's host: one of the two.
func (o *testOptions) server(args []string) error {
	switch {
	case len(args) == 1 && o.Perftest != "":
		return flagErrorf("SERVER %q and --perftest %q: give one (SERVER is an rdmabench server, --perftest a perftest one)", args[0], o.Perftest) // text: local (the command line)
	case len(args) == 1:
		o.Server = args[0]
	case o.Perftest == "":
		return flagErrorf("SERVER missing: give an rdmabench server's address, or a perftest server's with --perftest HOST (see '--help')")
	default:
		o.Server = o.Perftest
	}
	return nil
}

// perftestAddr is --perftest's host with perftest's port unless it names one.
func perftestAddr(s string) (string, error) {
	addrs, err := bench.SplitServers(s, perftest.DefaultPort)
	switch {
	case err != nil:
		return "", flagErrorf("--perftest: %v", err)
	case len(addrs) > 1:
		return "", flagErrorf("--perftest %q: one perftest server (perftest serves one client)", s) // text: local (the command line)
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return "", flagErrorf("--perftest %q: want HOST or HOST:PORT with a port from 1 to 65535", s) // text: local (the command line)
	}
	return net.JoinHostPort(host, port), nil
}

// perftestClientRun runs the test (or -a's sizes) against a perftest server and
// writes the results as any run's.
func perftestClientRun(cmd *cobra.Command, o *testOptions) error {
	addr, err := perftestAddr(o.Perftest)
	if err != nil {
		return err
	}
	if o.Token != "" || o.TokenFile != "" {
		return flagErrorf("--token/--token-file with --perftest: a perftest server takes no token")
	}
	if o.Infinite {
		return flagErrorf("--run_infinitely with --perftest: run rdmabench on both sides for this")
	}
	if err := o.prepare(); err != nil {
		return err
	}
	if err := o.Out.openResults(); err != nil {
		return err
	}
	defer o.Out.close()
	var sizes []int
	for _, p := range o.Plans { // -a
		sizes = append(sizes, p.MsgSizeBytes)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	c := bench.PerftestClient{Engine: bench.Verbs, Addr: addr, Local: o.Local, Timeout: o.Timeout}
	rs, err := c.Run(ctx, o.Op, o.Config, sizes)
	if len(rs) == 0 {
		return err
	}
	return errors.Join(err, o.Out.write(rs))
}
