package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strconv"

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
		switch {
		case o.Token != "" || o.TokenFile != "":
			return flagErrorf("--token/--token-file with --perftest: a perftest server takes no token")
		case o.Infinite:
			return flagErrorf("--run_infinitely with --perftest: run rdmabench on both sides for this")
		}
		sizes := 1
		if o.All {
			sizes = 23
		}
		if err := bench.CheckPerftest(o.Config, sizes); err != nil {
			return &flagError{err}
		}
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
	_, port, err := net.SplitHostPort(addrs[0])
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return "", flagErrorf("--perftest %q: want HOST or HOST:PORT with a port from 1 to 65535", s) // text: local (the command line)
	}
	return addrs[0], nil
}

// perftestClientRun runs the test (or -a's sizes) against a perftest server and
// writes the results as any run's.
func perftestClientRun(o *testOptions) error {
	addr, err := perftestAddr(o.Perftest)
	if err != nil {
		return err
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
	ctx, stop := interruptible()
	defer stop()
	c := bench.PerftestClient{Engine: bench.Verbs, Addr: addr, Local: o.Local, Timeout: o.Timeout, Gbits: o.Out.Gbits}
	rs, err := c.Run(ctx, o.Op, o.Config, sizes)
	if len(rs) == 0 {
		return err
	}
	return errors.Join(err, o.Out.write(rs))
}

// addPerftestServerFlags is --perftest-port on the server: perftest clients too.
func addPerftestServerFlags(cmd *cobra.Command, o *serverOptions) {
	f := cmd.Flags()
	f.IntVar(&o.PerftestPort, "perftest-port", 0, fmt.Sprintf("also serve plain perftest clients (ib_write_bw, ib_read_bw, "+
		"ib_write_lat, ib_read_lat HOST) on this TCP port, one at a time, next to --port (perftest's is %d); "+
		"they cannot prove a token, so not with --token", perftest.DefaultPort))
	f.Var(sizeValue{&o.PerftestSize}, "perftest-size", "the message size of ib_write_lat clients (their -s), whose server "+
		"sends first (default 2, perftest's)")
	// A perftest server is told these on its command line, as its client is: nothing in
	// perftest's exchange carries them. rdmabench clients' plans say their own.
	f.BoolVar(&o.PerftestNoRelaxed, "perftest-disable-pcie-relaxed", false, "for perftest clients: register without PCIe "+
		"relaxed ordering, as a perftest server started with --disable_pcie_relaxed (and ib_write_lat's, which turns it off itself)")
	f.IntVar(&o.PerftestSL, "perftest-sl", 0, "for perftest clients: the service level of this side's QPs, as a perftest server's -S (0 to 15)")
	f.IntVar(&o.PerftestTClass, "perftest-tclass", 0, "for perftest clients: the traffic class of this side's QPs, as a perftest server's --tclass (0 to 255)")
}

// checkPerftestServer refuses --perftest-port values before any device is opened.
func checkPerftestServer(o *serverOptions) error {
	switch {
	case o.PerftestSL < 0 || o.PerftestSL > 15:
		return flagErrorf("--perftest-sl %d: want a service level from 0 to 15", o.PerftestSL)
	case o.PerftestTClass < 0 || o.PerftestTClass > 255:
		return flagErrorf("--perftest-tclass %d: want a traffic class from 0 to 255", o.PerftestTClass)
	case o.PerftestPort == 0 && (o.PerftestNoRelaxed || o.PerftestSL != 0 || o.PerftestTClass != 0):
		return flagErrorf("--perftest-disable-pcie-relaxed, --perftest-sl and --perftest-tclass apply to perftest clients: add --perftest-port (an rdmabench client's plan carries its own --disable-pcie-relaxed, --sl and --tclass)")
	case o.PerftestPort == 0:
		return nil
	case o.PerftestPort < 1 || o.PerftestPort > 65535:
		return flagErrorf("--perftest-port %d: want 1 to 65535", o.PerftestPort)
	case o.PerftestPort == o.TCPPort:
		return flagErrorf("--perftest-port %d is --port too: give perftest clients a port of their own", o.PerftestPort)
	case o.Token != "":
		return flagErrorf("--perftest-port with --token: perftest clients cannot prove a token, so the port would let anyone in; serve them from a server without one, on a trusted network")
	}
	return nil
}

// servePerftest starts the perftest port's server, which ends with ctx.
func servePerftest(ctx context.Context, o *serverOptions, lg *log.Logger) error {
	if o.PerftestPort == 0 {
		return nil
	}
	addr := net.JoinHostPort(o.Bind, strconv.Itoa(o.PerftestPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--perftest-port: cannot listen on %s: %w", addr, err)
	}
	ps := &bench.PerftestServer{
		Engine: bench.Verbs, Local: o.Local, Timeout: o.Timeout, MaxTest: o.MaxTest, MaxBuffer: int64(o.MaxBuffer),
		LatSize: max(o.PerftestSize, 2), Log: lg,
		DisablePCIeRelaxed: o.PerftestNoRelaxed, SL: o.PerftestSL, TrafficClass: o.PerftestTClass,
	}
	lg.Printf("serving perftest clients on %s (perftest %s's exchange; ib_write_lat clients with -s %d; PCIe relaxed ordering %s, SL %d, traffic class %d)",
		l.Addr(), perftest.Version, ps.LatSize, map[bool]string{true: "off", false: "on"}[ps.DisablePCIeRelaxed], ps.SL, ps.TrafficClass)
	go func() {
		if err := ps.Serve(ctx, l); err != nil {
			lg.Printf("perftest port: %v", err)
		}
	}()
	return nil
}
