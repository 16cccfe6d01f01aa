// Package counters reads an RDMA port's counters from sysfs (no cgo, no verbs): the
// port counters (PMA), the driver's hw_counters for the port and the device, the link
// state and rate, the counters of the netdev under a RoCE port, and that netdev's
// pause, discard and error statistics from its driver (ethtool, ethtool.go). Take reads
// a Snapshot; Delta compares two; Classify flags the error, congestion and pause
// counters that moved, by the classes a NIC profile gives them (the ethtool ones by
// their names' patterns, EthtoolClass).
//
// Every counter is the port's, not the run's: other traffic on the port moves them too.
//
// Every reader takes a file system root ("/" normally; tests pass a fixture tree).
//
// # Around a timed run
//
// The driver's hw_counters are cached for Snapshot.Lifespan (10 ms by default): a read
// within that time of the previous one returns the old values. So take the opening
// snapshot at least Settle() after any traffic that must not count (the warm-up), and
// the closing one at least Settle() after the run's traffic stops; the PMA port counters
// and the netdev's are read live. Each side (client and server) takes its own pair and
// computes its own Deltas; the server ships its Deltas (JSON) to the client, which
// classifies both with Classify and sets each Flag's Side ("local" or "remote").
//
// # What is not a number
//
// A counter's Value is nil when the kernel says it is not available ("N/A (no PMA)")
// or when the file cannot be read or does not hold a number (Status says which, Text
// says why, naming the file): one bad file never fails a snapshot, and never reads as
// 0. Take fails only when the device or the port is absent.
package counters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Scope says where a counter lives.
type Scope string

const (
	// Port: /sys/class/infiniband/DEV/ports/P/counters, the PMA counters (absent on rxe).
	Port Scope = "port"
	// HWPort: /sys/class/infiniband/DEV/ports/P/hw_counters, the driver's per-port counters.
	HWPort Scope = "hw_port"
	// HWDevice: /sys/class/infiniband/DEV/hw_counters, the driver's per-device counters.
	HWDevice Scope = "hw_device"
	// Netdev: /sys/class/net/ND/statistics, the drop and error counters of the port's netdev.
	Netdev Scope = "netdev"
)

// scopeOrder sorts counters: port, hw_port, hw_device, netdev, ethtool.
var scopeOrder = map[Scope]int{Port: 0, HWPort: 1, HWDevice: 2, Netdev: 3, Ethtool: 4}

// Unit is what a counter's value counts.
type Unit string

const (
	Count Unit = "count"
	Bytes Unit = "bytes"
	// Words4 is the PMA data counters' unit (port_xmit_data, port_rcv_data): 4-byte
	// words. Delta converts it to Bytes.
	Words4 Unit = "4_byte_words"
)

// Status says whether a value is usable.
type Status string

const (
	OK Status = "ok"
	// NotAvailable: the kernel says so ("N/A (no PMA)"): not 0, unknown.
	NotAvailable Status = "not_available"
	// Unreadable: the file could not be read or holds no number; Text says which file
	// and why.
	Unreadable Status = "unreadable"
	// Backwards, Appeared and Disappeared are Delta's: the counter went down (a reset, a
	// driver reload), or is in only one of the two snapshots.
	Backwards   Status = "backwards"
	Appeared    Status = "appeared"
	Disappeared Status = "disappeared"
)

// DefaultLifespan is the kernel's hw_counters cache lifetime when the lifespan file is
// absent or unreadable.
const DefaultLifespan = 10 * time.Millisecond

// SettleMargin is added to the lifespan to cover the jiffy it is rounded to (10 ms at
// HZ=100).
const SettleMargin = 20 * time.Millisecond

// Counter is one counter as sysfs shows it.
type Counter struct {
	Name   string  `json:"name"`
	Scope  Scope   `json:"scope"`
	Unit   Unit    `json:"unit"`
	Status Status  `json:"status"`
	Value  *uint64 `json:"value"` // in Unit; nil unless Status is OK
	// Text is what the file held when it is not a number ("N/A (no PMA)"), or why it
	// could not be read, naming the file.
	Text string `json:"text,omitempty"`
}

// Snapshot is everything Take read about one port at one time.
type Snapshot struct {
	Device    string        `json:"device"`
	Port      int           `json:"port"`
	Time      time.Time     `json:"time"`    // when reading started
	Took      time.Duration `json:"took_ns"` // how long reading took
	State     string        `json:"state"`   // "ACTIVE", from ports/P/state ("4: ACTIVE")
	PhysState string        `json:"phys_state,omitempty"`
	LinkLayer string        `json:"link_layer,omitempty"` // "Ethernet" or "InfiniBand"
	Rate      string        `json:"rate,omitempty"`       // "100 Gb/sec (4X EDR)"
	RateGbps  float64       `json:"rate_gbit_per_s,omitempty"`
	// The port's netdev (RoCE): its MTU and operstate. The port's active MTU is not in
	// sysfs (ibv_query_port has it).
	Netdev          string `json:"netdev,omitempty"`
	NetdevMTU       int    `json:"netdev_mtu_bytes,omitempty"`
	NetdevOperState string `json:"netdev_operstate,omitempty"`
	// Lifespan is how long the hw_counters are cached (0: no hw_counters).
	Lifespan time.Duration `json:"hw_counters_lifespan_ns"`
	Counters []Counter     `json:"counters"`
	// Notes say what is absent or odd: "no PMA port counters (ports/1/counters absent)".
	Notes []string `json:"notes,omitempty"`
}

// Settle is how long to wait after the traffic of interest stops (or before it starts)
// for a snapshot to see it in full: the hw_counters' lifespan and a margin; 0 when the
// port has no hw_counters (the others are read live).
func (s Snapshot) Settle() time.Duration {
	if s.Lifespan == 0 {
		return 0
	}
	return s.Lifespan + SettleMargin
}

// Get returns the counter with this scope and name.
func (s Snapshot) Get(scope Scope, name string) (Counter, bool) {
	for _, c := range s.Counters {
		if c.Scope == scope && c.Name == name {
			return c, true
		}
	}
	return Counter{}, false
}

// ErrNoDevice means sysfs lists no RDMA device.
var ErrNoDevice = errors.New("no RDMA device in sysfs")

// ibDir is where the RDMA devices are.
func ibDir(root string) string { return filepath.Join(root, "sys/class/infiniband") }

// Devices lists the RDMA devices under root, sorted; ErrNoDevice when there are none.
func Devices(root string) ([]string, error) {
	ents, err := os.ReadDir(ibDir(root))
	if errors.Is(err, os.ErrNotExist) || err == nil && len(ents) == 0 {
		return nil, ErrNoDevice
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// FindDevice returns the device to read: name when it is present (its port need not
// be ACTIVE: the counters of a port that is down are worth seeing), or with name "" the
// first device whose port is ACTIVE. Errors name the devices present, or wrap
// ErrNoDevice.
func FindDevice(root, name string, port int) (string, error) {
	names, err := Devices(root)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if name != "" {
			if n == name {
				return n, nil
			}
			continue
		}
		if state, _ := readState(filepath.Join(ibDir(root), n, "ports", strconv.Itoa(port), "state")); state == "ACTIVE" {
			return n, nil
		}
	}
	if name == "" {
		return "", fmt.Errorf("no RDMA device among %s has port %d ACTIVE: pick one with -d and -i", strings.Join(names, ", "), port)
	}
	return "", fmt.Errorf("RDMA device %q not found; available: %s", name, strings.Join(names, ", "))
}

// Take reads every counter of dev's port, and its link and netdev.
func Take(root, dev string, port int) (Snapshot, error) {
	start := time.Now()
	s := Snapshot{Device: dev, Port: port, Time: start}
	devDir := filepath.Join(ibDir(root), dev)
	if _, err := os.Stat(devDir); err != nil {
		return s, fmt.Errorf("RDMA device %s: %w", dev, err)
	}
	portDir := filepath.Join(devDir, "ports", strconv.Itoa(port))
	if _, err := os.Stat(portDir); err != nil {
		return s, fmt.Errorf("RDMA device %s has no port %d%s", dev, port, portList(devDir))
	}
	var err error
	if s.State, err = readState(filepath.Join(portDir, "state")); err != nil {
		s.note("%v", err)
	}
	s.PhysState, _ = readState(filepath.Join(portDir, "phys_state"))
	s.LinkLayer, _ = readLine(filepath.Join(portDir, "link_layer"))
	if s.Rate, err = readLine(filepath.Join(portDir, "rate")); err == nil {
		if f := strings.Fields(s.Rate); len(f) > 0 {
			s.RateGbps, _ = strconv.ParseFloat(f[0], 64)
		}
	}

	rel := func(p string) string { r, _ := filepath.Rel(devDir, p); return r }
	pma := filepath.Join(portDir, "counters")
	if !s.readDir(pma, Port) {
		s.note("no PMA port counters (%s absent)", rel(pma))
	}
	var lifespans []time.Duration
	for _, hw := range []struct {
		dir   string
		scope Scope
	}{{filepath.Join(portDir, "hw_counters"), HWPort}, {filepath.Join(devDir, "hw_counters"), HWDevice}} {
		if !s.readDir(hw.dir, hw.scope) {
			continue
		}
		l, err := readUint(filepath.Join(hw.dir, "lifespan"))
		if err != nil {
			s.note("%s: %v; assuming the kernel's default %v", rel(filepath.Join(hw.dir, "lifespan")), err, DefaultLifespan)
			lifespans = append(lifespans, DefaultLifespan)
			continue
		}
		lifespans = append(lifespans, time.Duration(l)*time.Millisecond)
	}
	for _, l := range lifespans {
		s.Lifespan = max(s.Lifespan, l)
	}
	if len(lifespans) == 0 {
		s.note("no hw_counters (%s absent)", rel(filepath.Join(portDir, "hw_counters")))
	}

	s.Netdev = netdev(devDir, portDir)
	if s.Netdev != "" {
		nd := filepath.Join(root, "sys/class/net", s.Netdev)
		if mtu, err := readUint(filepath.Join(nd, "mtu")); err == nil {
			s.NetdevMTU = int(mtu)
		} else {
			s.note("netdev %s: %v", s.Netdev, err)
		}
		s.NetdevOperState, _ = readLine(filepath.Join(nd, "operstate"))
		for _, n := range NetdevCounters {
			s.Counters = append(s.Counters, readCounter(filepath.Join(nd, "statistics", n), n, Netdev))
		}
		s.readEthtool(root, s.Netdev)
	} else if s.LinkLayer == "Ethernet" {
		s.note("no netdev found for port %d (gid_attrs/ndevs, device/net)", port)
	}
	sort.SliceStable(s.Counters, func(i, j int) bool {
		a, b := s.Counters[i], s.Counters[j]
		if a.Scope != b.Scope {
			return scopeOrder[a.Scope] < scopeOrder[b.Scope]
		}
		return a.Name < b.Name
	})
	s.Took = time.Since(start)
	return s, nil
}

// NetdevCounters are the netdev statistics a snapshot reads.
var NetdevCounters = []string{"rx_dropped", "tx_dropped", "rx_errors", "tx_errors"}

// words4 are the counters sysfs shows in 4-byte words.
var words4 = map[string]bool{"port_xmit_data": true, "port_rcv_data": true}

func (s *Snapshot) note(format string, a ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, a...))
}

// readDir adds the counters in dir (every regular file but lifespan); false when dir
// is absent.
func (s *Snapshot) readDir(dir string, scope Scope) bool {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		s.note("%s: %v", dir, err)
		return true
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "lifespan" {
			continue
		}
		s.Counters = append(s.Counters, readCounter(filepath.Join(dir, e.Name()), e.Name(), scope))
	}
	return true
}

func readCounter(path, name string, scope Scope) Counter {
	c := Counter{Name: name, Scope: scope, Unit: Count, Status: OK}
	if scope == Port && words4[name] {
		c.Unit = Words4
	}
	b, err := os.ReadFile(path)
	if err != nil {
		c.Status, c.Text = Unreadable, err.Error()
		return c
	}
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "N/A") {
		c.Status, c.Text = NotAvailable, text
		return c
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		c.Status, c.Text = Unreadable, fmt.Sprintf("%s: not a counter value: %q", path, clip(text))
		return c
	}
	c.Value = &v
	return c
}

// netdev finds the port's netdev: the first GID entry's (gid_attrs/ndevs/N; empty
// entries do not read), else the device's netdev when it has only one (device/net/*).
func netdev(devDir, portDir string) string {
	ndevs := filepath.Join(portDir, "gid_attrs/ndevs")
	ents, _ := os.ReadDir(ndevs)
	sort.Slice(ents, func(i, j int) bool { return atoi(ents[i].Name()) < atoi(ents[j].Name()) })
	for _, e := range ents {
		if n, err := readLine(filepath.Join(ndevs, e.Name())); err == nil && n != "" {
			return n
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(devDir, "device/net")); len(ents) == 1 {
		return ents[0].Name()
	}
	return ""
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}

// portList says which ports a device has: ": it has ports 1, 2".
func portList(devDir string) string {
	ents, err := os.ReadDir(filepath.Join(devDir, "ports"))
	if err != nil || len(ents) == 0 {
		return " (it lists no ports)"
	}
	var ps []string
	for _, e := range ents {
		ps = append(ps, e.Name())
	}
	return ": it has port " + strings.Join(ps, ", ")
}

func readLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readUint(path string) (uint64, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not a number: %q", path, clip(s))
	}
	return v, nil
}

// readState reads "4: ACTIVE" as "ACTIVE".
func readState(path string) (string, error) {
	s, err := readLine(path)
	if err != nil {
		return "", err
	}
	if _, name, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(name), nil
	}
	return s, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
