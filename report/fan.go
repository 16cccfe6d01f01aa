package report

import (
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// fanTables writes, for each run against several servers, each server's share and a
// line on how evenly they were served and what was registered. A result file is
// input: its strings are cleaned.
func fanTables(w io.Writer, rs []result.Result) error {
	for _, r := range rs {
		f := r.Fan
		if f == nil {
			continue
		}
		c := r.Config
		fmt.Fprintf(w, "%s to %d servers (sync %s", ConfigKey(c), max(c.Peers, len(f.Peers)), text.Clean(c.Sync, 16))
		if c.Landing != "" {
			fmt.Fprintf(w, ", landing %s", text.Clean(c.Landing, 16))
		}
		fmt.Fprintln(w, "):")
		if len(f.Peers) == 0 {
			fmt.Fprintln(w, "(no per-server rows: the file holds the fan's summary only, as CSV does)")
		} else if err := peerTable(w, f.Peers); err != nil {
			return err
		}
		if f.JainFairness > 0 {
			fmt.Fprintf(w, "fan: %s Gb/s in all, slowest server %s Gb/s, Jain's fairness %.3f", f3(r.BWGbps), f3(f.MinPeerGbps), f.JainFairness)
			switch f.Fairness {
			case result.FairnessUneven:
				fmt.Fprintf(w, " (uneven: the servers' shares differ by %s messages, more than the run's edges make, %d)", spread(f), f.FairnessEdgeMessages)
			case result.FairnessCannotTell:
				fmt.Fprintf(w, " (cannot tell: the servers' shares differ by %s messages, within what the run's edges make, %d = 2 send queues + cq-mod; run longer or with a smaller -t)", spread(f), f.FairnessEdgeMessages)
			}
		} else {
			fmt.Fprint(w, "fan: nothing measured per server")
		}
		if f.Rounds > 0 {
			fmt.Fprintf(w, "; %d rounds, round p50 %s us, p99 %s us", f.Rounds, usp(r.Lat.P50), usp(r.Lat.P99))
		}
		fmt.Fprintf(w, "; registered %d B here, %d B on each server", f.RegisteredBytes, f.ServerRegisteredBytes)
		if f.WireBytesPerByte != nil {
			fmt.Fprintf(w, "; %.3f B on the client's port per byte delivered", *f.WireBytesPerByte)
		}
		if f.WirePacketsPerMessage != nil {
			fmt.Fprintf(w, "; %.1f packets on the client's port per message", *f.WirePacketsPerMessage)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// peerTable lists each server's share.
func peerTable(w io.Writer, peers []result.Peer) error {
	t := NewTable(w)
	t.Header("server", "device", "msgs", "Gb/s", "p50 us", "p99 us", "verified")
	for _, p := range peers {
		ok := p.Messages > 0 && p.DurationNS > 0
		v := "-"
		if p.Verify != nil {
			v = map[bool]string{true: "ok", false: "FAILED"}[p.Verify.OK]
		}
		t.Append(text.Clean(p.Server, 80), text.Clean(p.Device.Host, 64)+"/"+text.Clean(p.Device.Name, 32), p.Messages,
			ifMeasured(ok, f3(p.BWGbps)), usp(p.Lat.P50), usp(p.Lat.P99), v)
	}
	return t.Render()
}

// spread is the fairness verdict's spread in messages, "?" where the file lacks it.
func spread(f *result.Fan) string {
	if f.FairnessSpreadMessages == nil {
		return "?"
	}
	return fmt.Sprintf("%.0f", *f.FairnessSpreadMessages)
}
