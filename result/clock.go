package result

// VirtualClock says whether this side's host keeps virtual time
// (host.Facts.VirtualClock: the test bed's qemu -icount guest). False where its facts
// were not read.
func (d Device) VirtualClock() bool { return d.HostFacts != nil && d.HostFacts.VirtualClock() }

// VirtualClock says whether r was measured where time is virtual: on its client's, its
// server's or a fan-out server's host (Device.VirtualClock). Its durations, rates and
// latencies then describe Soft-RoCE's CPU path at a fixed instruction rate, not a NIC
// or any host's speed, and compare with no result measured on a real clock.
func (r Result) VirtualClock() bool {
	if r.Client.VirtualClock() || r.ServerDevice.VirtualClock() {
		return true
	}
	if r.Fan != nil {
		for _, p := range r.Fan.Peers {
			if p.Device.VirtualClock() {
				return true
			}
		}
	}
	return false
}
