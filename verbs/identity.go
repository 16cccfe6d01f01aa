package verbs

import (
	"os"

	hostfacts "github.com/rdmabench/rdmabench/host" // the package's tests have a func host
	"github.com/rdmabench/rdmabench/result"
)

// Identity is what a hello and a result say about an opened device and its host,
// with the host's facts (package host: PCIe link, NUMA node, CPU, governors, kernel,
// firmware, provider, rdma-core) read from "/". Its callers take it once per opened
// device (a client, a fan, a server, a dial) and reuse it for every result, so the
// facts, a few dozen small sysfs and /proc files (a fraction of a millisecond), are
// not read per result.
func (d *Device) Identity() result.Device { return d.identity("/") }

// identity is Identity with the host's facts read below root (tests: a fixture tree).
func (d *Device) identity(root string) result.Device {
	name, _ := os.Hostname()
	facts := hostfacts.Read(root, d.Info.Name)
	return result.Device{
		Name: d.Info.Name, Driver: d.Info.Driver, Model: d.Info.Model, VendorID: d.Info.VendorID,
		VendorPartID: d.Info.VendorPartID, FirmwareVer: d.Info.FirmwareVer, NodeGUID: d.Info.NodeGUID,
		Port: d.Port.Port, LinkLayer: d.Port.LinkLayer, RateGbps: d.Port.RateGbps, ActiveMTU: d.Port.ActiveMTU,
		GIDIndex: d.GID.Index, GIDType: d.GID.Type, GID: d.GID.GID, Host: name, HostFacts: &facts,
	}
}
