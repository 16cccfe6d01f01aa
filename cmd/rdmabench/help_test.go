package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's help has an Examples section, no line wider than 100 columns, and a
// flag's default said once: pflag's "(default X)", or the usage text, not both.
func TestHelpTexts(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		var out bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		help := out.String()
		if !strings.Contains(help, "\nExamples:\n") {
			t.Errorf("%s --help has no Examples section", c.CommandPath())
		}
		for i, l := range strings.Split(help, "\n") {
			if n := len([]rune(l)); n > 100 {
				t.Errorf("%s --help, line %d: %d columns, want at most 100:\n%s", c.CommandPath(), i+1, n, l)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			shown := !defaultIsZero(f)
			if shown && regexp.MustCompile(`\(default[ :]`).MatchString(f.Usage) {
				t.Errorf("%s --%s: its default is shown twice: %q and (default %s)", c.CommandPath(), f.Name, f.Usage, f.DefValue)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// defaultIsZero says whether pflag leaves out a flag's "(default X)", as its
// FlagUsages does.
func defaultIsZero(f *pflag.Flag) bool {
	fs := pflag.NewFlagSet("one", pflag.ContinueOnError)
	fs.AddFlag(f)
	return !strings.Contains(strings.Replace(fs.FlagUsages(), f.Usage, "", 1), "(default ")
}
