package verbs

import (
	"reflect"
	"testing"

	hostfacts "github.com/rdmabench/rdmabench/host"
)

// An opened device's identity carries its host's facts, read for that device (here
// from a fixture tree: a ConnectX-6 trained at Gen3 x16 though it can do Gen4), next
// to what the device itself says. No NIC is needed: the device is only its Info, Port
// and GID.
func TestIdentityCarriesTheHostFacts(t *testing.T) {
	const root = "../host/testdata/cx6-gen3"
	d := &Device{Info: DeviceInfo{Name: "mlx5_0", Driver: "mlx5", Model: "ConnectX-6", FirmwareVer: "20.39.1002"},
		Port: PortInfo{Port: 1, LinkLayer: "Ethernet", RateGbps: 200, ActiveMTU: 4096}, GID: GIDEntry{Index: 3, Type: "RoCE v2"}}
	id := d.identity(root)
	if id.Name != "mlx5_0" || id.Port != 1 || id.RateGbps != 200 || id.GIDIndex != 3 || id.Host == "" {
		t.Errorf("the device's own identity: %+v", id)
	}
	f := id.HostFacts
	if f == nil {
		t.Fatal("no host facts")
	}
	if want := hostfacts.Read(root, "mlx5_0"); !reflect.DeepEqual(*f, want) {
		t.Errorf("host facts\n got %+v\nwant %+v", *f, want)
	}
	if f.Device != "mlx5_0" || f.PCIeLink.String() != "8.0 GT/s x16 (Gen3, 126 Gb/s)" || f.PCIeMaxLink.Generation != 4 ||
		f.NUMANode == nil || *f.NUMANode != 1 || f.RDMACoreVersion != "50.0" || f.Provider != "mlx5" {
		t.Errorf("the fixture's facts: %+v", *f)
	}
	// A device the root does not know still gets the host's own facts, and a note.
	other := (&Device{Info: DeviceInfo{Name: "mlx5_9"}}).identity(root)
	if f := other.HostFacts; f == nil || f.PCIeLink != nil || f.KernelRelease != "6.8.0-45-generic" || len(f.Notes) == 0 {
		t.Errorf("an unknown device's facts: %+v", f)
	}
}
