package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/fleet"
	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

// newCmdAgent is `rdmabench agent`: a server that also runs tests on request, as the
// client of another agent, for a fleet's coordinator that proves the same token.
func newCmdAgent(runF func(*serverOptions) error) *cobra.Command {
	opts := &serverOptions{Local: bench.Local{Port: 1, GIDIndex: -1}}
	cmd := &cobra.Command{
		Use:     "agent",
		Example: "  rdmabench agent -d mlx5_0 --token-file ~/.rdmabench-token",
		Short:   "Serve like 'server', and run tests on request as the client of another agent (fleets)",
		Long: `An agent serves rdmabench clients like 'rdmabench server' and, when a fleet's
coordinator asks (authenticated with the same token), runs a test as the client of
another agent and answers with the result. It needs a token (--token-file, --token or
RDMABENCH_TOKEN): without one, anyone who reaches it could aim its traffic anywhere.
The same caps apply to the tests it runs as to the tests it serves.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.check(cmd); err != nil {
				return err
			}
			if opts.Token == "" {
				return flagErrorf("an agent runs tests on request only for a coordinator that proves a token: give it --token-file, --token or RDMABENCH_TOKEN")
			}
			if runF != nil {
				return runF(opts)
			}
			sv, l, err := opts.start(func(sv *bench.Server) { sv.Agent = true })
			if err != nil {
				return err
			}
			defer sv.Close()
			ctx, cancel := signalContext(sv.Log)
			defer cancel()
			return sv.Serve(ctx, l)
		},
	}
	addServerFlags(cmd, opts)
	return cmd
}

type fleetOptions struct {
	serverOptions
	Coordinator string // host[:port] of rank 0's agent
	Advertise   string // the host other members reach this one's agent at
	Rank, World int
	Pattern     string
	Test        string // write-bw, read-bw, write-lat, read-lat
	Config      result.Config
	Retest      int
	MinBW       float64
	MaxLat      float64
	Results     string
	Join        time.Duration // members: how long to wait for the coordinator and the others
	Wait        time.Duration // members: the longest the fleet may take before they give up
	Format      string        // --format of rank 0's matrix: table (default), plain or auto
}

func newCmdFleet(runF func(*fleetOptions) error) *cobra.Command {
	o := &fleetOptions{serverOptions: serverOptions{Local: bench.Local{Port: 1, GIDIndex: -1}}, Rank: fleet.Unset, World: fleet.Unset}
	cmd := &cobra.Command{
		Use: "fleet --coordinator HOST [--pattern P] [--test write-bw] [flags]",
		Example: "  mpirun -np 8 --map-by node rdmabench fleet --coordinator node1 --token-file ~/.rdmabench-token\n" +
			"  rdmabench fleet --coordinator node1 --rank 2 --world 4 --pattern ring --json fleet.ndjson",
		Short: "Run as a fleet member: every pair (or ring, fan-out, incast) measured, slow ones again",
		Long: `Run one member per host, started by the launcher the cluster has (mpirun, srun, a
Kubernetes Indexed Job: 'fleet slurm' and 'fleet k8s' print the recipes). The rank and
the world size come from the launcher's environment (OMPI_COMM_WORLD_RANK/SIZE,
PMI_RANK/SIZE, SLURM_PROCID/NTASKS, JOB_COMPLETION_INDEX with --world) or from
--rank and --world. Every member runs an agent (see 'rdmabench agent'); members register
with rank 0's agent at --coordinator; rank 0 then runs the pattern's rounds (the tests
of a round at once), judges every pair against the fleet (below --min-bw-fraction of the
median bandwidth, or above --max-lat-factor of the median p50 latency, or failed: bad),
runs each bad pair again alone --retest times (bad only if bad every time; else flaky),
writes every result to --results (NDJSON, the result schema with a "fleet" field), prints
the host x host matrix, tells the members the fleet is over, and exits 1 if a pair is
bad. A token is required (all members share it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.serverOptions.check(cmd); err != nil {
				return err
			}
			if o.Token == "" {
				return flagErrorf("a fleet needs a token that every member shares: --token-file, --token or RDMABENCH_TOKEN")
			}
			op, test, ok := strings.Cut(o.Test, "-")
			if _, known := ops.All[op]; !ok || !known || (test != "bw" && test != "lat") {
				return flagErrorf("--test %q: want write-bw, read-bw, write-lat or read-lat", o.Test) // text: local (the command line)
			}
			o.Config.Op, o.Config.Test = op, result.Test(test)
			ops.Defaults(&o.Config)
			o.Config.WarmupIterations = plan.DefaultWarmup(o.Config)
			if err := ops.Validate(o.Config); err != nil {
				return &flagError{err}
			}
			if o.Coordinator == "" {
				return flagErrorf("--coordinator: rank 0's host (every member, rank 0 too, needs it)")
			}
			if o.Retest < 0 || o.MinBW <= 0 || o.MinBW >= 1 || o.MaxLat <= 1 {
				return flagErrorf("--retest must not be negative, --min-bw-fraction within (0, 1), --max-lat-factor above 1")
			}
			if o.Join <= 0 || o.Wait <= 0 {
				return flagErrorf("--join-timeout and --fleet-timeout: want positive durations")
			}
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return fleetRun(o)
		},
	}
	addServerFlags(cmd, &o.serverOptions)
	f := cmd.Flags()
	f.StringVar(&o.Coordinator, "coordinator", "", "rank 0's host, or host:port (default port: --port)")
	f.StringVar(&o.Advertise, "advertise", "", "the host other members reach this member's agent at (default: --bind if it is an address, else the address its registration came from)")
	f.IntVar(&o.Rank, "rank", fleet.Unset, "this member's rank; -1: from the launcher's environment")
	f.IntVar(&o.World, "world", fleet.Unset, "the number of members; -1: from the launcher's environment")
	f.StringVar(&o.Pattern, "pattern", pairs.Pairwise, "pairwise (every pair once), ring, fanout:R or incast:R")
	f.StringVar(&o.Test, "test", "write-bw", "the test every pair runs: write-bw, read-bw, write-lat or read-lat")
	f.VarP(sizeValue{&o.Config.MsgSizeBytes}, "size", "s", "message size (default as the test's)")
	f.Uint64VarP(&o.Config.Iterations, "iters", "n", 0, "iterations (default as the test's)")
	f.Float64VarP(&o.Config.DurationS, "duration", "D", 0, "bandwidth tests: seconds per pair instead of --iters")
	f.IntVarP(&o.Config.NumQPs, "qps", "q", 1, "bandwidth tests: QPs per pair")
	f.IntVar(&o.Retest, "retest", 2, "run each bad pair again, alone, this many times")
	f.Float64Var(&o.MinBW, "min-bw-fraction", pairs.DefaultMinBWFraction, "a pair below this fraction of the fleet's median bandwidth is bad")
	f.Float64Var(&o.MaxLat, "max-lat-factor", pairs.DefaultMaxLatFactor, "a pair above this multiple of the fleet's median p50 latency is bad")
	f.StringVar(&o.Results, "results", "", "results stream, NDJSON (rank 0; default fleet-<time>.ndjson)")
	f.DurationVar(&o.Join, "join-timeout", 2*time.Minute, "how long members wait for the coordinator and the coordinator for the members")
	f.DurationVar(&o.Wait, "fleet-timeout", 6*time.Hour, "members give up on a fleet that has not ended after this long")
	// table by default: the test bed's e2e (under mpirun, not a terminal) reads the boxed matrix.
	addTableFormatFlag(cmd, &o.Format, string(report.FormatTable))
	f.Lookup("format").Usage = "how rank 0 shows the matrix: table, plain (one header line, space-separated, " +
		"one word a cell, for awk) or auto (a table on a terminal, else plain)"
	cmd.AddCommand(newCmdFleetSlurm(), newCmdFleetK8s())
	return cmd
}

func fleetRun(o *fleetOptions) error {
	rk, err := fleet.Discover(os.Getenv, o.Rank, o.World)
	if err != nil {
		return &flagError{err}
	}
	pat, err := pairs.ParsePattern(o.Pattern, rk.World)
	if err != nil {
		return &flagError{err}
	}
	coord := o.Coordinator
	if _, _, err := net.SplitHostPort(coord); err != nil {
		coord = net.JoinHostPort(coord, strconv.Itoa(o.TCPPort))
	}
	o.Concurrent = max(o.Concurrent, rk.World) // incast: every other member at once
	var members *fleet.Members
	ended := make(chan struct{}, 1)
	sv, l, err := o.start(func(sv *bench.Server) {
		sv.Agent = true
		sv.OnFleetDone = func() {
			select {
			case ended <- struct{}{}:
			default:
			}
		}
		if rk.Rank == 0 {
			members = fleet.NewMembers(rk.World, o.self(coord))
			sv.OnRegister = members.Register
		}
	})
	if err != nil {
		return err
	}
	defer sv.Close()
	ctx, cancel := signalContext(sv.Log)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- sv.Serve(ctx, l) }()
	sv.Log.Printf("fleet: rank %d of %d (%s), coordinator %s", rk.Rank, rk.World, rk.Source, coord)
	if rk.Rank != 0 {
		err = o.member(ctx, sv, rk, coord, l, ended)
	} else {
		err = o.coordinate(ctx, sv, pat, members)
	}
	cancel()
	return errors.Join(err, <-served)
}

// self is the address rank 0's own agent is reached at: --advertise, else the
// coordinator's host, with this agent's port.
func (o *fleetOptions) self(coord string) string {
	host, _, _ := net.SplitHostPort(coord)
	if o.Advertise != "" {
		host = o.Advertise
	}
	return net.JoinHostPort(host, strconv.Itoa(o.TCPPort))
}

// listenHost is where this member's agent can be reached, when the flags say: its
// --advertise, else its --bind address (not a wildcard); "" leaves it to the
// coordinator (the address the registration came from).
func (o *fleetOptions) listenHost() string {
	if o.Advertise != "" {
		return o.Advertise
	}
	if ip := net.ParseIP(o.Bind); ip != nil && !ip.IsUnspecified() {
		return o.Bind
	}
	return ""
}

// member registers with the coordinator (retrying until --join-timeout: members start
// in any order) and serves until the coordinator says the fleet is over.
func (o *fleetOptions) member(ctx context.Context, sv *bench.Server, rk fleet.Rank, coord string, l net.Listener, ended <-chan struct{}) error {
	port := l.Addr().(*net.TCPAddr).Port
	deadline := time.Now().Add(o.Join)
	for {
		a, err := bench.DialAgent(ctx, coord, sv.Device(), o.Token, o.Timeout, nil)
		if err == nil {
			err = a.Register(oob.Register{Rank: rk.Rank, World: rk.World, Port: port, Host: o.listenHost()})
			a.Close()
			var pe *oob.PeerError
			if errors.As(err, &pe) { // refused: retrying will not help
				return fmt.Errorf("the coordinator at %s refused rank %d: %w", coord, rk.Rank, err)
			}
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("could not register with the coordinator at %s within --join-timeout %v: %w", coord, o.Join, err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	sv.Log.Printf("fleet: registered with %s; serving until the fleet is over", coord)
	select {
	case <-ended:
		sv.Log.Printf("fleet: over")
		return nil
	case <-ctx.Done():
		return errors.New("interrupted before the fleet was over")
	case <-time.After(o.Wait):
		return fmt.Errorf("the fleet did not end within --fleet-timeout %v", o.Wait)
	}
}

// coordinate waits for the members, runs the fleet, writes the stream and the matrix,
// and ends the fleet; a bad pair makes it exit 1.
func (o *fleetOptions) coordinate(ctx context.Context, sv *bench.Server, pat pairs.Pattern, members *fleet.Members) error {
	hosts, err := members.Wait(ctx, o.Join)
	if err != nil {
		return err
	}
	path := o.Results
	if path == "" {
		path = fmt.Sprintf("fleet-%s.ndjson", time.Now().Format("20060102-150405"))
	}
	stream, err := openStream(path)
	if err != nil {
		return err
	}
	defer stream.Close()
	enc := result.NewNDJSONEncoder(stream)
	c := &fleet.Coordinator{Pattern: pat, Plan: o.Config, Retest: o.Retest,
		Outliers: pairs.OutlierOpts{MinBWFraction: o.MinBW, MaxLatFactor: o.MaxLat},
		Token:    o.Token, Timeout: o.Timeout, MaxTest: o.MaxTest, Me: sv.Device(),
		Record: func(r result.Result) error { return enc.Encode(r) }, Log: sv.Log.Printf}
	sv.Log.Printf("fleet: %d members: %s; pattern %s, %s %s, results -> %s", len(hosts), strings.Join(hosts, " "), pat, o.Config.Op, o.Config.Test, path) // text: local (this fleet's flags)
	out, err := c.Run(ctx, hosts)
	errs := []error{err, c.End(context.Background(), hosts)}
	metric := pairs.MetricBW
	if o.Config.Test == result.Lat {
		metric = pairs.MetricLat
	}
	if len(out.Verdicts) > 0 {
		errs = append(errs, pairs.WriteMatrixFormat(os.Stdout, hosts, pairs.Matrix(len(hosts), out.Results, out.Verdicts, metric), metric, formatFor(os.Stdout, o.Format)))
	}
	if n := out.Bad(); n > 0 {
		errs = append(errs, fmt.Errorf("%d pairs bad after %d retests each (see the matrix and %s)", n, o.Retest, path))
	}
	return errors.Join(errs...)
}
