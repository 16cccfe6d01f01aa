package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError marks bad command-line usage: exit code 2 rather than 1.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func flagErrorf(format string, a ...any) error { return &flagError{fmt.Errorf(format, a...)} }

func newRootCmd() *cobra.Command {
	result.Version = version
	root := &cobra.Command{
		Use:           "rdmabench",
		Short:         "Measure RDMA WRITE and READ: bandwidth, message rate, latency histograms, tuned parameters",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		Example: `  rdmabench server -d mlx5_0 --token-file ~/.rdmabench-token      # on host-a
  rdmabench write bw -d mlx5_0 --token-file ~/.rdmabench-token host-a
  rdmabench sweep -d mlx5_0 --token-file ~/.rdmabench-token host-a --json tuned.json`,
	}
	// --version prints what 'rdmabench version' does (a template: no braces in it).
	root.SetVersionTemplate(strings.NewReplacer("{", "{{`{`}}", "}", "{{`}`}}").Replace(versionLine()) + "\n")
	root.Flags().Bool("version", false, "print the version, as 'rdmabench version'")
	root.AddCommand(newCmdVersion(nil), newCmdDevices(nil), newCmdServer(nil), newCmdAgent(nil), newCmdFleet(nil), newCmdOp("write"), newCmdOp("read"),
		newCmdSweep(nil), newCmdHunt(nil), newCmdProfiles(nil), newCmdReport(), newCmdCounters(nil), newCmdDoctor(nil), newCmdMR(nil))
	root.InitDefaultCompletionCmd()
	completionExamples(root)
	root.SetHelpCommand(newCmdHelp())
	// Flag help wrapped to fit 100 columns (cobra's template does not wrap).
	root.SetUsageTemplate(strings.NewReplacer(".LocalFlags.FlagUsages", "wrappedFlags .LocalFlags",
		".InheritedFlags.FlagUsages", "wrappedFlags .InheritedFlags").Replace(root.UsageTemplate()))
	usageErrors(root)
	return root
}

// helpColumns is the width help texts keep within.
const helpColumns = 100

func init() {
	cobra.AddTemplateFunc("wrappedFlags", func(f *pflag.FlagSet) string { return f.FlagUsagesWrapped(helpColumns) })
}

// completionExamples gives cobra's completion commands an Examples section, as every
// command has.
func completionExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = "  rdmabench completion bash > /etc/bash_completion.d/rdmabench"
		for _, sh := range c.Commands() {
			sh.Example = fmt.Sprintf("  source <(rdmabench completion %s)", sh.Name())
			if sh.Name() == "powershell" {
				sh.Example = "  rdmabench completion powershell | Out-String | Invoke-Expression"
			}
		}
	}
}

// usageErrors makes every bad command line under c a *flagError (exit 2): flags that do
// not parse, and arguments a command's Args refuses, an unknown command included. A
// command that only groups others shows its help when called alone.
func usageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &flagError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			// cobra would show the help for any arguments: they are an unknown command.
			c.Args = unknownCommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &flagError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
}

// newCmdHelp is cobra's help command, except that a topic it does not know is a usage
// error (exit 2), not a usage text and exit 0.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return flagErrorf("no help topic %q: 'rdmabench --help' lists the commands", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// unknownCommand refuses arguments to a command that only groups others.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
	}
	return errors.New(msg)
}

// sizeValue is a pflag value that accepts units (result.ParseSize).
type sizeValue struct{ p *int }

func (v sizeValue) String() string {
	if v.p == nil {
		return "0"
	}
	return result.FormatSize(*v.p)
}
func (v sizeValue) Set(s string) error {
	n, err := result.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (v sizeValue) Type() string { return "size" }

// sizeListValue is a comma-separated list of sizes with units, ascending.
type sizeListValue struct{ p *[]int }

func (v sizeListValue) String() string {
	if v.p == nil {
		return ""
	}
	var s []string
	for _, n := range *v.p {
		s = append(s, result.FormatSize(n))
	}
	return strings.Join(s, ",")
}

func (v sizeListValue) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := result.ParseSize(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		if n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			return fmt.Errorf("%q: want ascending sizes of at least 1 byte", s)
		}
		out = append(out, n)
	}
	*v.p = out
	return nil
}

func (v sizeListValue) Type() string { return "sizes" }
