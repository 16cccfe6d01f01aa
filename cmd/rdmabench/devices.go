package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

type devicesOptions struct {
	Out  io.Writer
	JSON bool
	// GID: print only what server, write and read would use with Local's -d/-i/-x.
	GID    bool
	Format string // --format: auto, table or plain
	Local  bench.Local
	List   func() ([]verbs.DeviceInfo, error)
}

func newCmdDevices(runF func(*devicesOptions) error) *cobra.Command {
	opts := &devicesOptions{List: verbs.Devices}
	cmd := &cobra.Command{
		Use:     "devices [--json] [--gid [-d DEVICE] [-i PORT] [-x INDEX]]",
		Example: "  rdmabench devices\n  rdmabench devices --gid -d rxe0     # rxe0 1 1 10.0.0.1 RoCE v2",
		Short:   "List RDMA devices: identity, limits, ports and GID tables",
		Long: `List RDMA devices: identity, limits, ports and GID tables.

With --gid, print only the device, port and GID that server, write and read would use
with the same -d/-i/-x (without -x: the GID perftest would pick), on one line:
DEVICE PORT GID_INDEX GID TYPE (the type, "RoCE v2" say, is last), or as a JSON object
with --json. It fails, as they would, when the device is absent or its port not ACTIVE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			if cmd.Flags().Changed("format") && (opts.GID || opts.JSON) {
				return flagErrorf("--format goes with the list: --gid prints one line, --json a JSON document")
			}
			if err := checkFormat(opts.Format, report.TableFormats); err != nil {
				return err
			}
			if !opts.GID {
				for _, f := range []string{"device", "ib-port", "gid-index"} {
					if cmd.Flags().Changed(f) {
						return flagErrorf("--%s goes with --gid (see '%s --help')", f, cmd.CommandPath())
					}
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return devicesRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON instead of a table")
	cmd.Flags().BoolVar(&opts.GID, "gid", false, "print only the device, port and GID that server/write/read would use with the same -d/-i/-x (without -x: on a connection whose local address no GID holds)")
	addLocalFlags(cmd, &opts.Local)
	addTableFormatFlag(cmd, &opts.Format, "auto")
	cmd.Flags().Lookup("format").Usage = "how the list is shown: table (a line per device and port, a GID table each), " +
		"plain (one header line, then a line per GID, one word a cell, for awk) or auto (a table on a terminal, else plain)"
	return cmd
}

func devicesRun(o *devicesOptions) error {
	devs, err := o.List()
	if err != nil {
		return err
	}
	if o.GID {
		c, err := verbs.Choose(devs, o.Local.Device, o.Local.Port, o.Local.GIDIndex)
		if err != nil {
			return err
		}
		if o.JSON {
			return json.NewEncoder(o.Out).Encode(gidDoc{SchemaVersion: docsSchemaVersion, Choice: c})
		}
		_, err = fmt.Fprintf(o.Out, "%s %d %d %s %s\n", c.Device, c.Port, c.Index, c.GID, c.Type) // text: local (this host's sysfs)
		return err
	}
	if o.JSON {
		e := json.NewEncoder(o.Out)
		e.SetIndent("", "  ")
		return e.Encode(devicesDoc{SchemaVersion: docsSchemaVersion, Devices: devs})
	}
	if f := formatFor(o.Out, o.Format); f == report.FormatPlain {
		return devicesPlain(o.Out, devs)
	}
	for _, d := range devs {
		fmt.Fprintf(o.Out, "%s: %s, driver %s, %s, node GUID %s, fw %s, vendor 0x%x part %d\n",
			d.Name, d.Model, d.Driver, d.Transport, d.NodeGUID, d.FirmwareVer, d.VendorID, d.VendorPartID) // text: local (this host's sysfs)
		fmt.Fprintf(o.Out, "  max_qp_wr %d, max_cqe %d, max_qp_rd_atom %d, max_mr_size %d\n",
			d.MaxQPWR, d.MaxCQE, d.MaxQPRdAtom, d.MaxMRSize)
		for _, p := range d.Ports {
			fmt.Fprintf(o.Out, "  port %d: %s (%s), %s, active MTU %d (max %d), %dX %g Gb/s = %g Gb/s, LID %d\n",
				p.Port, p.State, p.PhysState, p.LinkLayer, p.ActiveMTU, p.MaxMTU, p.Width, p.LaneGbps, p.RateGbps, p.LID) // text: local (this host's sysfs)
			t := report.NewTable(o.Out)
			t.Header("GID index", "GID", "type", "netdev")
			for _, g := range p.GIDs {
				t.Append(g.Index, g.GID, g.Type, g.Netdev) // text: local (this host's sysfs)
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	}
	return nil
}

// devicesPlain writes the devices as one plain table (report.Tab): a line per GID, with
// its device and port; a port without a GID, and a device without a port, have a line
// of their own, "-" where they have nothing. --json has the rest (limits, GUIDs).
func devicesPlain(w io.Writer, devs []verbs.DeviceInfo) error {
	t := report.NewTab(w, report.FormatPlain, "device", "model", "driver", "fw", "port", "state", "link layer", "active mtu",
		"Gb/s", "GID index", "GID", "type", "netdev")
	for _, d := range devs { // text: local (this host's sysfs)
		dev := []any{d.Name, d.Model, d.Driver, d.FirmwareVer}
		if len(d.Ports) == 0 {
			t.Append(append(dev, "-", "-", "-", "-", "-", "-", "-", "-", "-")...)
		}
		for _, p := range d.Ports {
			port := append(append([]any{}, dev...), p.Port, p.State, p.LinkLayer, p.ActiveMTU, p.RateGbps)
			if len(p.GIDs) == 0 {
				t.Append(append(port, "-", "-", "-", "-")...)
			}
			for _, g := range p.GIDs {
				t.Append(append(append([]any{}, port...), g.Index, g.GID, g.Type, g.Netdev)...)
			}
		}
	}
	return t.Render()
}
