package verbs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmabench/rdmabench/internal/memlock"
)

// Usable says why rdmabench cannot run on a device, when it cannot: its loops run on RC
// queue pairs connected by hand (ibv_modify_qp to RTR and RTS with the peer's QP number
// and address), as perftest does without -R (RDMA-CM). It is asked when a device is
// opened, so that such a device fails at once, naming why, rather than at the first
// QP with advice that also fails. `rdmabench devices` still lists it.
func Usable(d DeviceInfo) error {
	switch {
	case d.Driver == "efa" || d.VendorID == 0x1d0f:
		return fmt.Errorf("%s is an AWS EFA device (driver %s): EFA offers no RC queue pairs, only UD and SRD, and rdmabench measures RC WRITE and READ; measure EFA with libfabric's tools (fi_rma_bw) or perftest's SRD tests", d.Name, d.Driver)
	case d.Transport == "iWARP":
		return fmt.Errorf("%s is an iWARP device (driver %s): iWARP connects queue pairs only through RDMA-CM (perftest's -R), and rdmabench connects them by hand; use a RoCE or InfiniBand device, or perftest -R for iWARP", d.Name, d.Driver)
	case d.Transport == "usNIC" || d.Transport == "unspecified":
		return fmt.Errorf("%s has transport %q (driver %s), not InfiniBand or RoCE: rdmabench's RC queue pairs need one of them", d.Name, d.Transport, d.Driver)
	}
	return nil
}

// CheckMsgSize refuses a message larger than the port's max_msg_sz (ibv_port_attr): the
// NIC would fail the WR, or, on mlx5, read a 2 GiB length's top bit as its inline flag.
func CheckMsgSize(d DeviceInfo, p PortInfo, size int) error {
	if p.MaxMsgSize > 0 && uint64(size) > uint64(p.MaxMsgSize) {
		return fmt.Errorf("message size %d bytes is above %s port %d's max_msg_sz of %d bytes, the largest message the port sends: use --size %d or less", size, d.Name, p.Port, p.MaxMsgSize, p.MaxMsgSize)
	}
	return nil
}

// memlockHint is what an ENOMEM or EAGAIN from ibv_reg_mr adds: registering pins the
// pages, which RLIMIT_MEMLOCK bounds for a process without CAP_IPC_LOCK. need is what
// the registration asked for; soft and hard the limit (memlock.Unlimited: none), known
// when ok.
func memlockHint(need uint64, soft, hard uint64, ok, capIPCLock bool) string {
	switch {
	case !ok:
		return fmt.Sprintf("registering pins %d bytes: check the locked-memory limit (ulimit -l) and free memory", need)
	case capIPCLock || soft == memlock.Unlimited:
		return fmt.Sprintf("the locked-memory limit does not apply (%s), so the %d bytes to pin did not fit in memory: use a smaller --size/--qps/--tx-depth, or free memory", limitWhy(capIPCLock), need)
	}
	raise := "raise it: ulimit -l unlimited (the hard limit allows it)"
	if hard != memlock.Unlimited {
		raise = fmt.Sprintf("raise it: the hard limit is %d KiB, so as root set memlock in /etc/security/limits.conf, LimitMEMLOCK=infinity for a systemd service, or --ulimit memlock=-1 for a container; then ulimit -l unlimited", hard/1024)
	}
	return fmt.Sprintf("RLIMIT_MEMLOCK is %d KiB (ulimit -l) and this registration alone pins %d KiB (the plan's buffer; the queues and other registrations count too): %s, or run as root (CAP_IPC_LOCK)", soft/1024, (need+1023)/1024, raise)
}

func limitWhy(capIPCLock bool) string {
	if capIPCLock {
		return "CAP_IPC_LOCK"
	}
	return "ulimit -l is unlimited"
}

// The link layers of ibv_port_attr (verbs.h's IBV_LINK_LAYER_*).
const (
	linkUnspecified = 0
	linkInfiniBand  = 1
	linkEthernet    = 2
)

// linkLayer names a port's link layer. UNSPECIFIED is InfiniBand on an InfiniBand
// transport (drivers older than the attribute), and nothing known elsewhere: an EFA
// port reports it, and is no InfiniBand port.
func linkLayer(ll int, transport string) string {
	switch {
	case ll == linkEthernet:
		return "Ethernet"
	case ll == linkInfiniBand, ll == linkUnspecified && transport == "InfiniBand":
		return "InfiniBand"
	}
	return "unspecified"
}

// regMRError is err, from ibv_reg_mr of need bytes, with what ENOMEM and EAGAIN
// usually mean: RLIMIT_MEMLOCK, read from this process.
func regMRError(err error, need uint64) error {
	if !errors.Is(err, syscall.ENOMEM) && !errors.Is(err, syscall.EAGAIN) {
		return err
	}
	soft, hard, lerr := memlock.Limit("/")
	return fmt.Errorf("%w: %s", err, memlockHint(need, soft, hard, lerr == nil, memlock.CapIPCLock("/")))
}
