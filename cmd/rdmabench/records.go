package main

import "github.com/spf13/cobra"

// The records stream of a long command (sweep, hunt): NDJSON, a line per run (and, of a
// hunt, per finding) appended as it is made, which --resume continues from. Both
// commands call it --records; --results, sweep's first name for it, is an alias on both
// (hidden), so that a script written for either keeps working.

// addRecordsFlag adds --records FILE, and --results as its alias, both setting p.
func addRecordsFlag(cmd *cobra.Command, p *string, usage string) {
	f := cmd.Flags()
	f.StringVar(p, "records", "", usage)
	f.StringVar(p, "results", "", "the other name of --records")
	_ = f.MarkHidden("results")
}

// recordsFlag is the name the command line gave the records stream ("--records" or
// "--results"), for the messages that name it; giving both is a flag error.
func recordsFlag(cmd *cobra.Command) (string, error) {
	f := cmd.Flags()
	switch records, results := f.Changed("records"), f.Changed("results"); {
	case records && results:
		return "", flagErrorf("--records and --results are one flag (the records stream): give one")
	case results:
		return "--results", nil
	}
	return "--records", nil
}
