package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Counters around the measured phase. Both sides read their port's counters when the
// measured phase starts (the client says "start" after the warm-up, once the counters'
// cache has expired, and waits until the server has read its own) and after it ends
// (once the cache has expired again); the server sends its deltas in its report. The
// client classifies both sides' deltas with the NIC profiles' classes (the ethtool
// statistics by their names), runs the sanity checks the NICs allow, and marks the
// result tainted when an error counter moved, a check failed, or the side that sends
// the data received pause frames (taints). Congestion counters (CNPs, ECN marks,
// transmit waits) are reported with their rate per million packets and do not taint:
// DCQCN sends CNPs by design, and an InfiniBand port at line rate waits routinely.
// Pause frames anywhere mark the run paused. Every counter is port-wide: other traffic
// on either port moves them too, and a note in the result says so.

// CountersOn says whether a plan reads the NIC's counters.
func CountersOn(c result.Config) bool { return c.Counters != "off" }

// settle is how long after traffic a snapshot of s's counters is fresh.
func settle(s *counters.Snapshot) time.Duration {
	if s == nil {
		return counters.DefaultLifespan + counters.SettleMargin
	}
	return s.Settle()
}

// sideCounters is one side's snapshots around the measured phase.
type sideCounters struct {
	began  bool // the measured phase started
	before *counters.Snapshot
	note   string // why there are none
}

// open takes the opening snapshot, after the counters' cache has expired since the
// warm-up's traffic.
func (sc *sideCounters) open(dev Device, settleFor time.Duration) {
	sc.began = true
	time.Sleep(settleFor)
	s, err := dev.Counters()
	if err != nil {
		sc.note = err.Error()
		return
	}
	sc.before = &s
}

// close takes the closing snapshot (at least settle after the traffic ended) and
// returns the deltas, or why there are none.
func (sc *sideCounters) close(dev Device, trafficEnd time.Time) (*counters.Deltas, string) {
	if sc.before == nil {
		return nil, sc.note
	}
	if wait := settle(sc.before) - time.Since(trafficEnd); wait > 0 {
		time.Sleep(wait)
	}
	after, err := dev.Counters()
	if err != nil {
		return nil, err.Error()
	}
	d, err := counters.Delta(*sc.before, after)
	if err != nil {
		return nil, err.Error()
	}
	return &d, ""
}

// keep narrows deltas to the counters a --counters list names (auto and all keep all).
func keep(d *counters.Deltas, list string) {
	if d == nil || list == "" || list == "auto" || list == "all" {
		return
	}
	names := strings.Split(list, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	d.Counters = slices.DeleteFunc(d.Counters, func(c counters.Change) bool { return !slices.Contains(names, c.Name) })
}

// classesOf are the counter classes of a device's NIC profile (none for a NIC no
// profile knows: its counters are reported, not judged).
func classesOf(d result.Device) counters.Classification {
	p, err := profiles.Detect(d.Driver, d.VendorID, d.VendorPartID)
	if err != nil {
		return nil
	}
	return p.CounterClasses()
}

// judge fills the result's counters, flags and taint from both sides' deltas.
func judge(r *result.Result, requestsCounter string, local, remote *counters.Deltas, notes []string) {
	cfg := r.Config
	keep(local, cfg.Counters)
	keep(remote, cfg.Counters)
	r.Counters = &result.Counters{Local: local, Remote: remote, Notes: notes}
	var flags []counters.Flag
	oneDevice := sameDevice(r, local, remote)
	if oneDevice {
		remote = nil // one device's counters, seen twice: flag them once
	}
	for _, side := range []struct {
		name string
		d    *counters.Deltas
		dev  result.Device
	}{{"local", local, r.Client}, {"remote", remote, r.ServerDevice}} {
		if side.d == nil {
			continue
		}
		for _, f := range counters.Classify(classesOf(side.dev), *side.d) {
			f.Side = side.name
			flags = append(flags, f)
		}
	}
	r.Paused = false
	for i := range flags {
		f := &flags[i]
		switch f.Class {
		case counters.Error:
			f.Taints = true
		case counters.Pause:
			r.Paused = true
			f.Taints = counters.PauseReceived(f.Counter) && sendsData(r.Config, f.Side, oneDevice)
		}
	}
	sf, sn := sanity(r, requestsCounter, local, remote)
	for i := range sf {
		sf[i].Taints = true
	}
	r.Counters.Notes = append(r.Counters.Notes, sn...)
	if local != nil || remote != nil {
		r.Counters.Notes = append(r.Counters.Notes, PortWideNote)
	}
	for _, side := range []struct {
		name string
		d    *counters.Deltas
		dev  result.Device
	}{{"client", local, r.Client}, {"server", remote, r.ServerDevice}} {
		if side.d != nil && side.dev.LinkLayer == "Ethernet" && side.dev.Driver != "rxe" && !hasScope(side.d, counters.Ethtool) {
			r.Counters.Notes = append(r.Counters.Notes, fmt.Sprintf("%s: no pause or discard counters read (its netdev's driver shows none through ethtool): pause frames would go unseen", side.name))
		}
	}
	for _, side := range []*counters.Deltas{local, remote} {
		if side == nil {
			continue
		}
		for _, c := range side.Counters {
			if c.Saturated {
				r.Counters.Notes = append(r.Counters.Notes, fmt.Sprintf("%s: %s is saturated (stopped at its maximum): whether it moved cannot tell; clear the port's counters", side.Device, c.Name))
			}
		}
	}
	r.CountersFlags = append(flags, sf...)
	r.Tainted = slices.ContainsFunc(r.CountersFlags, func(f counters.Flag) bool { return f.Taints })
}

// PortWideNote is the note every result with counters carries.
const PortWideNote = "counters are port-wide: other traffic on either port moves them too"

// sendsData says whether the side ("local": the client, "remote": the server) sends
// the data of a run of c, the side whose transmitter pause frames hold off the
// measurement itself: WRITE's client, READ's server (the responses), both in a
// bidirectional run and in latency tests (every sample waits for both directions);
// both when one device is both sides.
func sendsData(c result.Config, side string, oneDevice bool) bool {
	if oneDevice || c.Test != result.BW || c.Bidirectional {
		return true
	}
	switch c.Op {
	case "write":
		return side == "local"
	case "read":
		return side == "remote"
	}
	return true
}

func hasScope(d *counters.Deltas, s counters.Scope) bool {
	return slices.ContainsFunc(d.Counters, func(c counters.Change) bool { return c.Scope == s })
}

// sameDevice says whether both sides measured on one device (RDMA loopback): its node
// GUID and name on both sides, or the same name on the same host when the GUID is
// unknown.
func sameDevice(r *result.Result, local, remote *counters.Deltas) bool {
	if local == nil || remote == nil || local.Device != remote.Device {
		return false
	}
	if g := r.Client.NodeGUID; g != "" && r.ServerDevice.NodeGUID != "" {
		return g == r.ServerDevice.NodeGUID
	}
	return r.Client.Host == r.ServerDevice.Host
}

// sanityTolerance is how far counts that should match may differ (packets in flight
// when a snapshot is read, a peer's unrelated traffic).
const sanityTolerance = 0.01

// sanity compares counters that should match the traffic, where the NICs allow it:
// on two Soft-RoCE devices, each side's sent_pkts with the other's rcvd_pkts; on mlx5,
// the responder's rx_write_requests or rx_read_requests with the messages completed
// (bandwidth tests; requestsCounter is the op's, Op.Requests). It returns the failed
// checks as flags and what it compared.
func sanity(r *result.Result, requestsCounter string, local, remote *counters.Deltas) (flags []counters.Flag, notes []string) {
	if local == nil || remote == nil {
		return nil, nil
	}
	value := func(d *counters.Deltas, name string) (uint64, bool) {
		for _, c := range d.Counters {
			if c.Name == name && c.Status == counters.OK && c.Delta != nil {
				return *c.Delta, true
			}
		}
		return 0, false
	}
	check := func(what string, got, want uint64) {
		diff := max(got, want) - min(got, want)
		notes = append(notes, fmt.Sprintf("sanity: %s: %d vs %d", what, got, want))
		if float64(diff) > sanityTolerance*float64(max(got, want)) && diff > 2 {
			flags = append(flags, counters.Flag{Counter: what, Scope: counters.HWPort, Side: "both",
				Class: counters.Sanity, Unit: counters.Count, Status: counters.OK, Delta: &diff})
		}
	}
	same := sameDevice(r, local, remote)
	if !same {
		for _, pair := range [][2]*counters.Deltas{{local, remote}, {remote, local}} {
			sent, ok1 := value(pair[0], "sent_pkts")
			rcvd, ok2 := value(pair[1], "rcvd_pkts")
			if ok1 && ok2 {
				who := map[bool]string{true: "client", false: "server"}[pair[0] == local]
				check(fmt.Sprintf("%s sent_pkts / %s rcvd_pkts", who, map[string]string{"client": "server", "server": "client"}[who]), sent, rcvd)
			}
		}
	}
	if r.Config.Test == result.BW && !same {
		name := requestsCounter
		if v, ok := value(remote, name); ok && r.Iterations > 0 {
			what := fmt.Sprintf("server %s / messages completed", name)
			f, note := requests(what, v, r.Iterations)
			notes = append(notes, note)
			if f != nil {
				flags = append(flags, *f)
			}
		}
	}
	return flags, notes
}

// requests judges the responder's request counter (mlx5's rx_write_requests or
// rx_read_requests, a per-port count) against the messages the requester saw complete.
// Only fewer requests than completed messages is a fault: a message completes only
// when the responder acknowledged it. More can be other traffic on the server's port,
// or a count per packet rather than per message (not checked on a ConnectX here), and
// none at all a port that does not count them (introduced for InfiniBand, not RoCE).
func requests(what string, got, msgs uint64) (*counters.Flag, string) {
	note := fmt.Sprintf("sanity: %s: %d vs %d", what, got, msgs)
	switch short := msgs - min(got, msgs); {
	case got == 0:
		return nil, note + ": the counter did not move (not counted on this port?): no check"
	case float64(short) > sanityTolerance*float64(msgs) && short > 2:
		return &counters.Flag{Counter: what, Scope: counters.HWPort, Side: "both", Class: counters.Sanity,
			Unit: counters.Count, Status: counters.OK, Delta: &short}, note
	case got > msgs+msgs/100+2:
		return nil, note + ": more requests than messages (other traffic on the port, or counted per packet): cannot tell"
	}
	return nil, note
}

// maxRemoteCounters bounds the counters a server's report may carry.
const maxRemoteCounters = 1024

// cleanDeltas makes a server's deltas fit to show: strings cleaned and bounded, at most
// maxRemoteCounters counters, and no delta without the status that gives it one (the
// server is another machine: its report is input). It returns nil and why when the
// deltas cannot be used.
func cleanDeltas(d *counters.Deltas) (*counters.Deltas, string) {
	if d == nil {
		return nil, ""
	}
	if len(d.Counters) > maxRemoteCounters {
		return nil, fmt.Sprintf("its report has %d counters, more than %d: not used", len(d.Counters), maxRemoteCounters)
	}
	out := *d
	out.Device = text.Clean(d.Device, 64)
	out.Counters = make([]counters.Change, 0, len(d.Counters))
	for _, c := range d.Counters {
		c.Name, c.Text = text.Clean(c.Name, 64), text.Clean(c.Text, 200)
		c.Scope, c.Unit, c.Status = counters.Scope(text.Clean(string(c.Scope), 16)), counters.Unit(text.Clean(string(c.Unit), 16)), counters.Status(text.Clean(string(c.Status), 16))
		if c.Status != counters.OK {
			c.Delta = nil
		} else if c.Delta == nil {
			c.Status = counters.Unreadable
		}
		out.Counters = append(out.Counters, c)
	}
	out.Notes = nil
	for _, n := range d.Notes[:min(len(d.Notes), 16)] {
		out.Notes = append(out.Notes, text.Clean(n, 200))
	}
	return &out, ""
}

// serverCounters is the server's side: the opening snapshot on start, the deltas in
// the report.
func serverCounters(sc *sideCounters, dev Device, cfg result.Config, ended time.Time, rep *oob.Report) {
	if !CountersOn(cfg) {
		return
	}
	rep.Counters, rep.CountersNote = sc.close(dev, ended)
	if rep.Counters == nil && rep.CountersNote == "" {
		rep.CountersNote = "the client never said when the measured phase started"
	}
}
