package benchtest

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Device is an opened fake device.
type Device struct {
	e      *Engine
	port   int
	closed atomic.Bool
}

// Identity: the fake counts packets as Soft-RoCE does (sent_pkts, rcvd_pkts), so it
// says it is rxe: the rxe profile classifies its counters.
func (d *Device) Identity() result.Device {
	host, _ := os.Hostname()
	return result.Device{Name: d.e.name(), Driver: "rxe", Model: "fake engine", VendorID: 0xffffff, Port: d.port,
		LinkLayer: "Ethernet", ActiveMTU: 1024, GIDType: "RoCE v2", Host: host}
}

// Counters is a snapshot of the device's packet counters, as sysfs would show rxe's.
func (d *Device) Counters() (counters.Snapshot, error) {
	if d.e.NoCounters.Load() {
		return counters.Snapshot{}, errors.New("no counters under /sys/class/infiniband/" + d.e.name())
	}
	s := counters.Snapshot{Device: d.e.name(), Port: d.port, Time: time.Now(), State: "ACTIVE"}
	for _, c := range []struct {
		name string
		v    uint64
	}{{"sent_pkts", d.e.sent.Load()}, {"rcvd_pkts", d.e.rcvd.Load()}, {"retry_exceeded_err", d.e.retries.Load()}} {
		v := c.v
		s.Counters = append(s.Counters, counters.Counter{Name: c.name, Scope: counters.HWPort, Unit: counters.Count, Status: counters.OK, Value: &v})
	}
	return s, nil
}

// traffic counts packets from s's device to the peer's (and the peer's answers).
func traffic(from, to *Engine, pkts, answers uint64) {
	lost := min(from.Lose.Load(), pkts)
	from.sent.Add(pkts)
	to.rcvd.Add(pkts - lost)
	to.sent.Add(answers)
	from.rcvd.Add(answers)
	from.retries.Add(from.Retries.Load())
}

// pkts is how many MTU-sized packets a message of size bytes takes (at least one).
func pkts(size int) uint64 { return uint64(max(1, (size+1023)/1024)) }

func (d *Device) Clock() (string, string) { return "fake", "synthetic times from a test engine" }

func (d *Device) Close() error { d.closed.Store(true); return nil }

// Closed says whether Close was called.
func (d *Device) Closed() bool { return d.closed.Load() }

func (d *Device) NewSession(spec verbs.Spec) (bench.Session, error) {
	e := d.e
	if e.FailSession != nil {
		return nil, e.FailSession
	}
	if spec.NumQP < 1 || spec.SQDepth < 1 || spec.BufSize < 1 {
		return nil, fmt.Errorf("fake: bad spec %+v", spec)
	}
	if _, err := qp.Split(spec.NumQP, max(spec.Threads, 1)); err != nil {
		return nil, err
	}
	if spec.Threads > 1 && spec.Events { // as verbs refuses it
		return nil, fmt.Errorf("fake: completion events with %d loop threads", spec.Threads)
	}
	f := e.Fabric
	s := &Session{e: e, Spec: spec, buf: make([]byte, spec.BufSize)}
	f.mu.Lock()
	for range spec.NumQP {
		f.next++
		s.qpns = append(s.qpns, f.next)
		f.qps[f.next] = s
	}
	f.mu.Unlock()
	e.mu.Lock()
	e.sessions = append(e.sessions, s)
	e.mu.Unlock()
	return s, nil
}
