package verbs

import (
	"os"

	"github.com/rdmabench/rdmabench/result"
)

// Identity is what a hello and a result say about an opened device and its host.
func (d *Device) Identity() result.Device {
	host, _ := os.Hostname()
	return result.Device{
		Name: d.Info.Name, Driver: d.Info.Driver, Model: d.Info.Model, VendorID: d.Info.VendorID,
		VendorPartID: d.Info.VendorPartID, FirmwareVer: d.Info.FirmwareVer, NodeGUID: d.Info.NodeGUID,
		Port: d.Port.Port, LinkLayer: d.Port.LinkLayer, RateGbps: d.Port.RateGbps, ActiveMTU: d.Port.ActiveMTU,
		GIDIndex: d.GID.Index, GIDType: d.GID.Type, Host: host,
	}
}
