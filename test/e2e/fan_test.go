//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestFanOutFanIn: three servers on the server's device (three TCP ports) and a client
// on the other device: a broadcast WRITE and a gather READ, streamed and in rounds,
// verified at every server (WRITE) or in every landing region (READ); the servers'
// shares add up to the totals and every round reached every server.
func TestFanOutFanIn(t *testing.T) {
	needPair(t)
	var servers []string
	for range 3 {
		servers = append(servers, fmt.Sprintf("%s:%d", srvIP, startServer(t)))
	}
	list := strings.Join(servers, ",")
	for _, c := range []struct {
		op    string
		extra []string
	}{
		{"write", []string{"-s", "16K", "-n", "500", "--verify"}},
		{"write", []string{"-s", "4K", "-n", "200", "--sync", "rounds", "--verify"}},
		{"read", []string{"-s", "16K", "-n", "500", "--verify"}},
		{"read", []string{"-s", "64K", "-n", "100", "--sync", "rounds", "--landing", "per-peer", "--verify"}},
		{"read", []string{"-s", "64K", "-n", "100", "--sync", "rounds", "--landing", "shared"}},
	} {
		r := measure(t, append([]string{c.op, "bw", "-d", cliDev, list}, c.extra...)...)
		f := r.Fan
		if f == nil || len(f.Peers) != 3 || r.Config.Peers != 3 {
			t.Fatalf("%s %v: fan %+v", c.op, c.extra, f)
		}
		var msgs, bytes uint64
		for i, p := range f.Peers {
			msgs += p.Messages
			bytes += p.Bytes
			if p.Server != servers[i] || p.Messages != r.Config.Iterations || p.BWGbps <= 0 || p.Lat.Samples == 0 {
				t.Errorf("%s %v: peer %d: %+v", c.op, c.extra, i, p)
			}
			if r.Config.Verify && (p.Verify == nil || !p.Verify.OK) {
				t.Errorf("%s %v: peer %d verification %+v", c.op, c.extra, i, p.Verify)
			}
		}
		if msgs != r.Iterations || bytes != r.Bytes {
			t.Errorf("%s %v: servers' shares %d msgs %d B, totals %d msgs %d B", c.op, c.extra, msgs, bytes, r.Iterations, r.Bytes)
		}
		if r.Config.Sync == "rounds" && (f.Rounds != r.Config.Iterations || r.Lat.Samples != f.Rounds || r.LatKind != "round") {
			t.Errorf("%s %v: %d rounds, %d %s samples", c.op, c.extra, f.Rounds, r.Lat.Samples, r.LatKind)
		}
		if f.WirePacketsPerMessage == nil || *f.WirePacketsPerMessage < 1 {
			t.Errorf("%s %v: wire packets per message %v (rxe counts sent_pkts and rcvd_pkts)", c.op, c.extra, f.WirePacketsPerMessage)
		} else {
			t.Logf("%s %v: %.1f packets on the client's port per message delivered", c.op, c.extra, *f.WirePacketsPerMessage)
		}
		if f.JainFairness <= 0 || f.JainFairness > 1 {
			t.Errorf("%s %v: fairness %g", c.op, c.extra, f.JainFairness)
		}
		// Runs of a number of messages: every server gets them all, no verdict (timed
		// streams get one: make scenarios shows them).
		if f.Fairness != "" || f.FairnessSpreadMessages != nil {
			t.Errorf("%s %v: fairness verdict %q for a run of -n messages", c.op, c.extra, f.Fairness)
		}
		t.Logf("%s %s sync %s landing %s: %.3f Gb/s in all, slowest %.3f, Jain %.3f, round p50 %s us, registered %d B here, %d B per server",
			c.op, strings.Join(c.extra, " "), r.Config.Sync, r.Config.Landing, r.BWGbps, f.MinPeerGbps, f.JainFairness, us(r.Lat.P50), f.RegisteredBytes, f.ServerRegisteredBytes)
	}
}
