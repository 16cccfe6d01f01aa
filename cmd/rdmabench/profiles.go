package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

type profilesOptions struct {
	Name   string // a profile name or YAML file to show; "" lists them all
	Format string // --format of the list: auto, table or plain
	Out    io.Writer
}

func newCmdProfiles(runF func(*profilesOptions) error) *cobra.Command {
	o := &profilesOptions{}
	cmd := &cobra.Command{
		Use:     "profiles [NAME|FILE]",
		Example: "  rdmabench profiles\n  rdmabench profiles cx6",
		Short:   "List the NIC profiles, or show one (match rules, grid, start point, article values)",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
				if cmd.Flags().Changed("format") {
					return flagErrorf("--format goes with the list: a profile is shown as YAML")
				}
			}
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return profilesRun(o)
		},
	}
	addTableFormatFlag(cmd, &o.Format, "auto")
	cmd.Flags().Lookup("format").Usage = "how the list is shown: table, plain (one header line, space-separated, " +
		"one word a cell, for awk) or auto (a table on a terminal, else plain)"
	return cmd
}

func profilesRun(o *profilesOptions) error {
	if o.Name != "" {
		p, err := profiles.Load(o.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "# %s\n", p.Source)
		e := yaml.NewEncoder(o.Out)
		e.SetIndent(2)
		if err := e.Encode(p); err != nil {
			return err
		}
		return e.Close()
	}
	all, err := profiles.All()
	if err != nil {
		return err
	}
	t := report.NewTab(o.Out, formatFor(o.Out, o.Format), "profile", "description", "drivers", "vendor IDs", "part IDs", "link Gb/s", "grid points (write)")
	for _, p := range all {
		n := 1
		for _, d := range profiles.Dims {
			n *= max(len(p.Grid["write"][d]), 1)
		}
		var vids []string
		for _, v := range p.Match.VendorIDs {
			vids = append(vids, fmt.Sprintf("0x%x", v))
		}
		parts := strings.Trim(fmt.Sprint(p.Match.VendorPartIDs), "[]")
		if t.Plain() { // a list is one word, as the vendor IDs' is
			parts = strings.Join(strings.Fields(parts), ",")
		}
		t.Append(p.Name, p.Description, strings.Join(p.Match.Drivers, ","), strings.Join(vids, ","), parts, linkRate(p), n)
	}
	return t.Render()
}

// linkRate is a profile's nominal port rate in the list, Gb/s: one figure where all its
// parts have the same, else the range its models span ("25-200" for cx6: the family VF
// 25, Lx 50, Dx 100, ConnectX-6 200), so that no single figure understates or overstates
// a family.
func linkRate(p profiles.Profile) string {
	lo, hi := p.LinkGbpsRange()
	if lo == hi {
		return strconv.FormatFloat(lo, 'g', -1, 64)
	}
	return strconv.FormatFloat(lo, 'g', -1, 64) + "-" + strconv.FormatFloat(hi, 'g', -1, 64)
}
