package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestRecordsFlag: sweep and hunt name their records stream --records, and take
// --results as the same flag (sweep's first name): either name on either command gives
// the same options; a conflict with --resume names the flag given; both names at once
// are a flag error; the help lists --records, not its alias.
func TestRecordsFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("r.ndjson", nil, 0o644)
	type command struct {
		name string
		// run parses args; it returns the records stream and the options whole.
		run func(args ...string) (string, any, error)
		cmd func() *cobra.Command
	}
	commands := []command{
		{"sweep", func(args ...string) (string, any, error) {
			var got *sweepOptions
			_, err := execute(newCmdSweep(func(o *sweepOptions) error { got = o; return nil }), args...)
			if got == nil {
				return "", nil, err
			}
			got.Out.Stdout, got.Out.Stderr = nil, nil
			return got.Records, *got, err
		}, func() *cobra.Command { return newCmdSweep(nil) }},
		{"hunt", func(args ...string) (string, any, error) {
			var got *huntOptions
			_, err := execute(newCmdHunt(func(o *huntOptions) error { got = o; return nil }), args...)
			if got == nil {
				return "", nil, err
			}
			got.Out.Stdout, got.Out.Stderr = nil, nil
			return got.Records, *got, err
		}, func() *cobra.Command { return newCmdHunt(nil) }},
	}
	for _, c := range commands {
		var first any
		for _, name := range []string{"--records", "--results"} {
			for _, args := range [][]string{{"host", name, "s.ndjson"}, {"host", name + "=s.ndjson"}} {
				records, o, err := c.run(args...)
				if err != nil || records != "s.ndjson" {
					t.Errorf("%s %q: records %q, %v", c.name, args, records, err)
					continue
				}
				if first == nil {
					first = o
				} else if !reflect.DeepEqual(o, first) {
					t.Errorf("%s %q: the options differ from --records':\n got %+v\nwant %+v", c.name, args, o, first)
				}
			}
			_, _, err := c.run("host", "--resume", "r.ndjson", name, "other.ndjson")
			if err == nil || !strings.Contains(err.Error(), "drop "+name) || exitCode(err) != 2 {
				t.Errorf("%s --resume with %s: want a flag error naming %s, got %v", c.name, name, name, err)
			}
			if records, _, err := c.run("host", "--resume", "r.ndjson", name, "r.ndjson"); err != nil || records != "r.ndjson" {
				t.Errorf("%s --resume r.ndjson %s r.ndjson: %q, %v", c.name, name, records, err)
			}
		}
		_, _, err := c.run("host", "--records", "a.ndjson", "--results", "b.ndjson")
		if err == nil || !strings.Contains(err.Error(), "--records and --results are one flag") || exitCode(err) != 2 {
			t.Errorf("%s --records --results: want a flag error, got %v", c.name, err)
		}
		help := c.cmd().Flags().FlagUsages()
		if !strings.Contains(help, "--records string") || strings.Contains(help, "--results string") {
			t.Errorf("%s's help must list --records and not its alias:\n%s", c.name, help)
		}
	}
}
