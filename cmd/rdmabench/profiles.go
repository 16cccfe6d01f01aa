package main

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

func newCmdProfiles() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles [NAME|FILE]",
		Short: "List the NIC profiles, or show one (its match rules, grid, start point, article values)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				p, err := profiles.Load(args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "# %s\n", p.Source)
				e := yaml.NewEncoder(out)
				e.SetIndent(2)
				return e.Encode(p)
			}
			all, err := profiles.All()
			if err != nil {
				return err
			}
			t := report.NewTable(out)
			t.Header("profile", "description", "drivers", "vendor IDs", "part IDs", "link Gb/s", "grid points (write)")
			for _, p := range all {
				n := 1
				for _, d := range profiles.Dims {
					n *= len(p.Grid["write"][d])
				}
				var vids []string
				for _, v := range p.Match.VendorIDs {
					vids = append(vids, fmt.Sprintf("0x%x", v))
				}
				t.Append(p.Name, p.Description, strings.Join(p.Match.Drivers, ","), strings.Join(vids, ","),
					strings.Trim(fmt.Sprint(p.Match.VendorPartIDs), "[]"), p.LinkGbps, n)
			}
			return t.Render()
		},
	}
}
