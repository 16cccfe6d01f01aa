package counters

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// # The netdev's ethtool statistics
//
// PFC pause frames and the port's discards are not in sysfs: the NIC driver shows them
// through ethtool (ETHTOOL_GSTATS, `ethtool -S NETDEV`), each driver with names of its
// own (mlx5: rx_pause_ctrl_phy, rx_prio3_pause, rx_discards_phy; bnxt_en:
// rx_pause_frames, rx_pfc_ena_frames_pri3, rx_discard_packets_cos0; ice, under irdma:
// link_xoff_rx.nic, rx_priority_3_xoff.nic, rx_dropped.nic). A snapshot reads every
// statistic the driver offers and keeps the ones EthtoolClass judges: the names are
// matched by pattern, never assumed. Under a root other than "/" (a fixture tree) they
// come from ROOT/ethtool/NETDEV, a recorded `ethtool -S NETDEV`.

// Ethtool: the port's netdev's driver statistics (ETHTOOL_GSTATS), those EthtoolClass
// judges.
const Ethtool Scope = "ethtool"

// EthtoolDir is where a fixture tree holds its recorded `ethtool -S` outputs, one file
// per netdev.
const EthtoolDir = "ethtool"

// Stat is one ethtool statistic, by the driver's name.
type Stat struct {
	Name  string
	Value uint64
}

// ethtoolStats reads a netdev's statistics through the kernel (ethtool_linux.go); a
// variable so that tests of Take under "/" can replace it.
var ethtoolStats = gstats

// errNoStats: the netdev's driver offers no statistics (veth, lo, ...).
var errNoStats = errors.New("its driver offers no statistics")

// readEthtool adds the netdev's judged ethtool statistics; a netdev whose statistics
// cannot be read leaves a note, never a failure.
func (s *Snapshot) readEthtool(root, netdev string) {
	var stats []Stat
	var err error
	if filepath.Clean(root) == "/" {
		stats, err = ethtoolStats(netdev)
	} else {
		stats, err = ReadEthtoolS(filepath.Join(root, EthtoolDir, netdev))
		if errors.Is(err, os.ErrNotExist) {
			s.note("no ethtool statistics recorded for %s (%s absent)", netdev, filepath.Join(EthtoolDir, netdev))
			return
		}
	}
	if err != nil {
		s.note("ethtool statistics of %s: %v: no pause or discard counters", netdev, err)
		return
	}
	kept := 0
	for _, st := range stats {
		if EthtoolClass(st.Name) == Info {
			continue
		}
		v := st.Value
		s.Counters = append(s.Counters, Counter{Name: st.Name, Scope: Ethtool, Unit: Count, Status: OK, Value: &v})
		kept++
	}
	if kept == 0 {
		s.note("ethtool statistics of %s: none of its %d is a pause, discard or error counter of the port", netdev, len(stats))
	}
}

// ReadEthtoolS reads a recorded `ethtool -S NETDEV` ("NIC statistics:" and then one
// "name: value" a line). Lines that are not a name and a number are skipped.
func ReadEthtoolS(path string) ([]Stat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Stat
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		i := strings.LastIndex(line, ":")
		if i <= 0 {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(line[i+1:]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Stat{Name: strings.TrimSpace(line[:i]), Value: v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Pause is the class of the link-level flow control counters (802.3x global pause and
// PFC per priority): the fabric, or the peer's NIC, held a transmitter off. Not an
// error: a lossless RoCE fabric works this way. What it means for a run is the
// caller's (bench: a paused run, tainted when the side that sends the data received
// pauses).
const Pause Class = "pause"

// Per-queue, per-ring and per-channel statistics are the host's Ethernet traffic
// (RoCE bypasses the netdev's queues): "[3]: rx_discards" (bnxt_en), "rx3_dropped",
// "ch2_...", "tx_queue_0_drops", "rx-5.packets".
var perQueue = regexp.MustCompile(`^\[\d+\]|^(rx|tx|ch|xdp|ptp|rq|sq)\d+_|queue_\d+|^(rx|tx)q\d+|^(rx|tx)-\d+`)

// The port's own statistics, as the drivers mark them: mlx5's physical-port counters
// end in _phy and its per-priority ones have prio; ice and i40e's end in .nic or start
// with port.; bnxt_en's MAC counters end in _frames or name a CoS queue or a priority
// (_cos0, _pri3) or a port event; and every pause, PFC or XOFF counter is the port's.
var portLevel = regexp.MustCompile(`_phy$|\.nic$|^port\.|prio|_pri\d|_cos\d|_frames|^(rx|tx)_stat_|pause|pfc|xoff|link_down|fec`)

// EthtoolClass classifies an ethtool statistic by its name: Pause for pause, PFC and
// XOFF frame counts (received or sent; not their durations or transitions), Congestion
// for ECN and CNP counts, Error for the port's discards, drops, CRC, symbol and frame
// errors, link faults and pause storms, and Info for everything else: per-queue counters, the host
// stack's, packet and byte counts, FEC-corrected bits (routine on a healthy link).
func EthtoolClass(name string) Class {
	n := strings.ToLower(name)
	if perQueue.MatchString(n) || !portLevel.MatchString(n) {
		return Info
	}
	switch {
	case strings.Contains(n, "storm"):
		return Error
	case strings.Contains(n, "pause") || strings.Contains(n, "pfc") || strings.Contains(n, "xoff"):
		for _, skip := range []string{"duration", "transition", "_us", "time", "resume"} {
			if strings.Contains(n, skip) {
				return Info
			}
		}
		return Pause
	case strings.Contains(n, "ecn") || strings.Contains(n, "cnp") || strings.Contains(n, "marked"):
		return Congestion
	case strings.Contains(n, "uncorrect"):
		return Error
	case strings.Contains(n, "corrected") || strings.Contains(n, "err_lane"):
		return Info // pre-FEC bit errors the FEC fixed: a healthy link has them
	}
	for _, bad := range []string{"discard", "drop", "err", "crc", "fcs", "jabber", "undersize", "undrsz", "oversize",
		"ovrsz", "fragment", "runt", "symbol", "illegal", "link_down", "fault"} {
		if strings.Contains(n, bad) {
			return Error
		}
	}
	return Info
}

// PauseReceived says whether a pause counter counts frames the port received (its
// transmitter was held off): rx_pause_ctrl_phy, rx_prio3_pause, link_xoff_rx.nic,
// rx_pfc_ena_frames_pri3. A name that says neither rx nor tx reads as not received.
func PauseReceived(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "rx") || strings.Contains(n, "_rx")
}
