package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

type countersOptions struct {
	Out, Err io.Writer
	// Root is the file system root sysfs is under ("/"; tests pass a fixture tree).
	Root    string
	Local   bench.Local
	Profile string // a profile name or YAML file; "" detects it from sysfs
	Watch   time.Duration
	Count   int // with Watch: stop after this many intervals (0: until Ctrl-C)
	JSON    bool
	Format  string // --format: auto, table or plain
	All     bool   // with Watch: every counter, not only those that changed
	Ctx     context.Context
	// Take and Tick are seams for tests: counters.Take, and a time.Ticker's channel and
	// its Stop.
	Take func(root, dev string, port int) (counters.Snapshot, error)
	Tick func(time.Duration) (<-chan time.Time, func())
}

func newCmdCounters(runF func(*countersOptions) error) *cobra.Command {
	o := &countersOptions{Root: "/", Local: bench.Local{Port: 1, GIDIndex: -1}}
	cmd := &cobra.Command{
		Use:     "counters [-d DEVICE] [-i PORT] [--watch 1s [--count N] [--all]] [--json]",
		Example: "  rdmabench counters -d mlx5_0\n  rdmabench counters -d mlx5_0 --watch 1s --count 10 --all",
		Short:   "Show a port's counters (PMA, driver hw_counters, netdev drops), or watch them move",
		Long: `Show a port's counters from sysfs: the PMA port counters, the driver's hw_counters
(port and device), the drop and error counters of the port's netdev, the pause, discard
and error statistics its driver shows through ethtool (ethtool -S; those whose names say
so: pause = flow control, e.g. rx_pause_ctrl_phy, rx_prio3_pause), and the link state
and rate. It needs no cgo and opens no device. Without -d: the first device whose port
is ACTIVE. The counters are the port's: other traffic on it moves them too.

With --watch INTERVAL, print what moved every interval (like watch(1), but only the
counters that changed; --all shows every one), --count times or until Ctrl-C. Each
counter has a class from the NIC profile (--profile, default: detected from sysfs; the
ethtool ones by their names): error, congestion, pause, sanity (should move with the
traffic) or info; error, congestion and pause counters that move are marked "!". A
value sysfs says is not available ("N/A (no PMA)") is shown as such, never as 0.
port_xmit_data and port_rcv_data count 4-byte words; their deltas are in bytes.

With --json, print NDJSON: one "snapshot" line, then with --watch one "delta" line per
interval (with its flags).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			switch {
			case f.Changed("gid-index"):
				return flagErrorf("--gid-index: counters are per port, not per GID (see '%s --help')", cmd.CommandPath())
			case o.Local.Port < 1:
				return flagErrorf("--ib-port %d: ports are numbered from 1", o.Local.Port)
			case f.Changed("watch") && o.Watch <= 0:
				return flagErrorf("--watch %v: want a positive interval (1s, 500ms)", o.Watch)
			case f.Changed("count") && !f.Changed("watch"):
				return flagErrorf("--count goes with --watch (see '%s --help')", cmd.CommandPath())
			case f.Changed("count") && o.Count < 1:
				return flagErrorf("--count %d: want 1 or more (without --count: until Ctrl-C)", o.Count)
			case f.Changed("all") && !f.Changed("watch"):
				return flagErrorf("--all goes with --watch: a snapshot shows every counter")
			case f.Changed("format") && o.JSON:
				return flagErrorf("--format goes with the tables, not --json")
			}
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			o.Out, o.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if o.Ctx == nil && o.Watch > 0 {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				o.Ctx = ctx
			}
			if runF != nil {
				return runF(o)
			}
			return countersRun(o)
		},
	}
	addLocalFlags(cmd, &o.Local)
	f := cmd.Flags()
	f.MarkHidden("gid-index") // refused: counters are per port
	f.DurationVar(&o.Watch, "watch", 0, "print the counters that moved every INTERVAL")
	f.IntVar(&o.Count, "count", 0, "with --watch: stop after N intervals (default: until Ctrl-C)")
	f.BoolVar(&o.JSON, "json", false, "print NDJSON: a snapshot line, then one line per interval")
	f.BoolVar(&o.All, "all", false, "with --watch: show every counter, not only those that changed")
	f.StringVar(&o.Profile, "profile", "", "NIC profile name or YAML file for the counter classes (default: detected from sysfs)")
	addTableFormatFlag(cmd, &o.Format, "auto")
	f.Lookup("format").Usage = "how the counters are shown: table, plain (one header line, then a line per counter, " +
		"with --watch a line per counter and interval, one word a cell, for awk; the port's line under it, 'link:') " +
		"or auto (a table on a terminal, else plain)"
	return cmd
}

// snapshotLine and deltaLine are the NDJSON lines of --json.
type snapshotLine struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"` // "snapshot"
	Profile       string `json:"profile,omitempty"`
	counters.Snapshot
	// Classes are the classes of the snapshot's counters that are not info.
	Classes map[string]counters.Class `json:"classes,omitempty"`
}

type deltaLine struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"` // "delta"
	Profile       string `json:"profile,omitempty"`
	counters.Deltas
	Flags []counters.Flag `json:"flags,omitempty"`
}

func countersRun(o *countersOptions) error {
	if o.Take == nil {
		o.Take = counters.Take
	}
	if o.Tick == nil {
		o.Tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if o.Ctx == nil {
		o.Ctx = context.Background()
	}
	dev, err := counters.FindDevice(o.Root, o.Local.Device, o.Local.Port)
	if errors.Is(err, counters.ErrNoDevice) {
		return verbs.ErrNoDevice
	}
	if err != nil {
		return err
	}
	prof, err := countersProfile(o, dev)
	if err != nil {
		return err
	}
	classes := prof.CounterClasses()

	s, err := o.Take(o.Root, dev, o.Local.Port)
	if err != nil {
		return err
	}
	if o.JSON {
		if err := json.NewEncoder(o.Out).Encode(newSnapshotLine(s, prof.Name, classes)); err != nil {
			return err
		}
	}
	format := formatFor(o.Out, o.Format)
	plain := !o.JSON && format == report.FormatPlain
	if !o.JSON {
		if !plain {
			fmt.Fprintln(o.Out, portLine(s, prof.Name))
		} else {
			// Under the table(s): a plain table's first line is its header.
			defer fmt.Fprintln(o.Out, "link: "+portLine(s, prof.Name))
		}
		if o.Watch <= 0 {
			return snapshotTable(o.Out, s, classes, format)
		}
	}
	if o.Watch <= 0 {
		return nil
	}
	if plain {
		// One header for the whole watch: a line per counter and interval under it.
		if err := report.NewTab(o.Out, format, deltaHead...).Render(); err != nil {
			return err
		}
	}
	if settle := s.Settle(); o.Watch < settle {
		fmt.Fprintf(o.Err, "counters: --watch %v is shorter than the hw_counters' cache (%v): they move at most every %v\n", o.Watch, s.Lifespan, s.Lifespan)
	}
	return countersWatch(o, dev, s, prof.Name, classes, format)
}

// countersProfile is the profile that classes dev's counters: --profile's, or the one
// detected from sysfs. A profile that cannot be detected is a warning on o.Err (the
// counters then have no classes), not an error.
func countersProfile(o *countersOptions, dev string) (profiles.Profile, error) {
	if o.Profile != "" {
		return profiles.Load(o.Profile)
	}
	prof, err := detectProfile(o.Root, dev)
	if err != nil {
		fmt.Fprintf(o.Err, "counters: %v: no counter classes (pass --profile)\n", err)
	}
	return prof, nil
}

// newSnapshotLine is --json's line for the snapshot s, with the classes of its counters
// that are not info.
func newSnapshotLine(s counters.Snapshot, profile string, classes counters.Classification) snapshotLine {
	line := snapshotLine{SchemaVersion: docsSchemaVersion, Kind: "snapshot", Profile: profile, Snapshot: s, Classes: map[string]counters.Class{}}
	for _, c := range s.Counters {
		if k := classes.OfScope(c.Name, c.Scope); k != counters.Info {
			line.Classes[c.Name] = k
		}
	}
	return line
}

// countersWatch takes dev's counters every o.Watch, o.Count times or until o.Ctx ends,
// and prints what moved since the snapshot before (the first: s), flagged by classes:
// a --json delta line, or deltaTable's in format.
func countersWatch(o *countersOptions, dev string, s counters.Snapshot, profile string, classes counters.Classification, format report.Format) error {
	tick, stop := o.Tick(o.Watch)
	defer stop()
	for n := 0; o.Count == 0 || n < o.Count; n++ {
		select {
		case <-o.Ctx.Done():
			return nil
		case <-tick:
		}
		next, err := o.Take(o.Root, dev, o.Local.Port)
		if err != nil {
			return err
		}
		d, err := counters.Delta(s, next)
		if err != nil {
			return err
		}
		s = next
		flags := counters.Classify(classes, d)
		for i := range flags {
			flags[i].Side = "local"
		}
		if !o.All {
			d = d.Changed()
		}
		if o.JSON {
			err = json.NewEncoder(o.Out).Encode(deltaLine{SchemaVersion: docsSchemaVersion, Kind: "delta", Profile: profile, Deltas: d, Flags: flags})
		} else {
			err = deltaTable(o.Out, d, classes, flags, format)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// portLine says which port this is and how its link is.
func portLine(s counters.Snapshot, profile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s port %d: %s", s.Device, s.Port, orDash(s.State))
	if s.PhysState != "" {
		fmt.Fprintf(&b, " (%s)", s.PhysState)
	}
	for _, x := range []string{s.LinkLayer, s.Rate} {
		if x != "" {
			b.WriteString(", " + x)
		}
	}
	if s.Netdev != "" {
		fmt.Fprintf(&b, "; netdev %s %s, MTU %d", s.Netdev, orDash(s.NetdevOperState), s.NetdevMTU)
	}
	if profile != "" {
		fmt.Fprintf(&b, "; profile %s", profile)
	}
	if s.Lifespan > 0 {
		fmt.Fprintf(&b, "; hw_counters cached %v", s.Lifespan)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// snapshotTable writes the counters of s in f (plain: one header line, a line per
// counter, its notes under it).
func snapshotTable(w io.Writer, s counters.Snapshot, classes counters.Classification, f report.Format) error {
	t := report.NewTab(w, f, "counter", "scope", "value", "unit", "class")
	var bad []string
	for _, c := range s.Counters {
		v := ""
		switch c.Status {
		case counters.OK:
			v = strconv.FormatUint(*c.Value, 10)
		case counters.NotAvailable:
			v = c.Text
		default:
			v = string(c.Status)
			bad = append(bad, c.Text)
		}
		t.Append(c.Name, c.Scope, v, unitName(c.Unit), classes.OfScope(c.Name, c.Scope))
	}
	if err := t.Render(); err != nil {
		return err
	}
	return notes(w, append(s.Notes, bad...), t.Plain())
}

// deltaHead are the columns of --watch's plain lines: the interval's end and length, then
// deltaTable's.
var deltaHead = []string{"time", "interval s", "flag", "counter", "scope", "delta", "unit", "per s", "class"}

// deltaTable writes an interval's deltas in f: a table under a line with the time, or
// plain, lines without a header (--watch wrote deltaHead once) that start with the time
// and the interval; nothing for an interval in which no counter moved.
func deltaTable(w io.Writer, d counters.Deltas, classes counters.Classification, flags []counters.Flag, f report.Format) error {
	when := d.Start.Add(d.Interval).Format("15:04:05.000")
	plain := f == report.FormatPlain
	if plain && len(d.Counters) == 0 {
		return notes(w, d.Notes, true)
	}
	if len(d.Counters) == 0 {
		fmt.Fprintf(w, "%s (%.3fs): no counter changed\n", when, d.Interval.Seconds())
		return notes(w, d.Notes, false)
	}
	flagged := map[string]bool{}
	for _, f := range flags {
		flagged[string(f.Scope)+"/"+f.Counter] = true
	}
	var t *report.Tab
	if plain {
		t = report.NewTab(w, f, deltaHead...)
	} else {
		fmt.Fprintf(w, "%s (%.3fs):\n", when, d.Interval.Seconds())
		t = report.NewTab(w, f, deltaHead[2:]...)
	}
	var bad []string
	for _, c := range d.Counters {
		mark, delta, rate := "", string(c.Status), ""
		if flagged[string(c.Scope)+"/"+c.Name] {
			mark = "!"
		}
		switch {
		case c.Status == counters.OK:
			delta = strconv.FormatUint(*c.Delta, 10)
			if s := d.Interval.Seconds(); s > 0 {
				rate = strconv.FormatFloat(float64(*c.Delta)/s, 'f', 1, 64)
			}
			if c.Saturated {
				delta = ">=" + delta + " (saturated)"
			}
		case c.Status == counters.Backwards:
			delta = fmt.Sprintf("backwards %d -> %d", *c.RawBefore, *c.RawAfter)
		case c.Text != "":
			bad = append(bad, c.Name+": "+c.Text)
		}
		row := []any{mark, c.Name, c.Scope, delta, unitName(c.Unit), rate, classes.OfChange(c)}
		if plain {
			row = append([]any{when, strconv.FormatFloat(d.Interval.Seconds(), 'f', 3, 64)}, row...)
		}
		t.Append(row...)
	}
	render := t.Render
	if plain {
		render = t.RenderRows // the header: written once by --watch
	}
	if err := render(); err != nil {
		return err
	}
	return notes(w, append(d.Notes, bad...), plain)
}

func unitName(u counters.Unit) string {
	switch u {
	case counters.Count:
		return ""
	case counters.Words4:
		return "4-byte words"
	}
	return string(u)
}

// notes writes notes under a table: indented, or in plain form (plain), at the start
// of the line, as a plain table's lines under it are.
func notes(w io.Writer, ns []string, plain bool) error {
	prefix := "  note:"
	if plain {
		prefix = "note:"
	}
	for _, n := range ns {
		if _, err := fmt.Fprintln(w, prefix, n); err != nil {
			return err
		}
	}
	return nil
}

// pciVendorIB maps PCI vendor IDs (sysfs) to the IB vendor IDs (IEEE OUIs) that
// ibv_query_device reports and the profiles match: Mellanox's 0x15b3 is 0x02c9.
var pciVendorIB = map[uint32]uint32{0x15b3: 0x02c9}

// detectProfile finds dev's profile from sysfs alone, as profiles.Detect would from
// ibv_query_device: rxe devices have a "parent" attribute (their netdev); a PCI NIC
// has its driver link, and its PCI device ID is its vendor part ID.
func detectProfile(root, dev string) (profiles.Profile, error) {
	dir := filepath.Join(root, "sys/class/infiniband", dev)
	if _, err := os.Stat(filepath.Join(dir, "parent")); err == nil {
		return profiles.Detect("rxe", 0xffffff, 0)
	}
	l, err := os.Readlink(filepath.Join(dir, "device/driver"))
	if err != nil {
		return profiles.Profile{}, fmt.Errorf("cannot tell %s's driver from sysfs", dev)
	}
	hex := func(name string) uint32 {
		b, _ := os.ReadFile(filepath.Join(dir, "device", name))
		v, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
		return uint32(v)
	}
	vendor := hex("vendor")
	if v, ok := pciVendorIB[vendor]; ok {
		vendor = v
	}
	return profiles.Detect(filepath.Base(l), vendor, hex("device"))
}
