package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/docgen"
	"github.com/spf13/pflag"
)

// usageDocsPath is docs/usage.md, from this package's directory.
var usageDocsPath = filepath.Join("..", "..", "docs", "usage.md")

// TestPerftestFlagMapDocs keeps docs/usage.md's flag map and its table of refused flags
// what perftestFlagMap and refusedFlags say: it fails while they are stale, and
// rewrites them with -update (make docs).
func TestPerftestFlagMapDocs(t *testing.T) {
	for _, s := range []struct {
		name string
		body []byte
	}{
		{"perftest flag map", genFlagMap()},
		{"perftest refused flags", genRefusedFlags()},
	} {
		if err := docgen.Region(usageDocsPath, s.name, s.body, *updateDocs); err != nil {
			t.Error(err)
		}
	}
}

// mdRow is a Markdown table's row of cells, '|' in them escaped, also in code spans
// (GitHub's rule).
func mdRow(cells ...string) string {
	r := "|"
	for _, c := range cells {
		if c != "" {
			r += " " + strings.ReplaceAll(c, "|", `\|`)
		}
		r += " |"
	}
	return r + "\n"
}

func genFlagMap() []byte {
	var b bytes.Buffer
	b.WriteString("| perftest | rdmabench | difference |\n|---|---|---|\n")
	for _, r := range perftestFlagMap {
		b.WriteString(mdRow(r.perftest, r.rdmabench, r.difference))
	}
	return b.Bytes()
}

func genRefusedFlags() []byte {
	var b bytes.Buffer
	b.WriteString("| perftest's flag | what to do instead (the error's words) |\n|---|---|\n")
	for _, r := range refusedFlags {
		name := "--" + r.name
		if r.short != "" {
			name = "-" + r.short + "/" + name
		}
		if r.value {
			name += " VALUE"
		}
		b.WriteString(mdRow("`"+name+"`", r.instead))
	}
	return b.Bytes()
}

// flagToken is a flag a row of the flag map names: -x, --name, --name* (every flag
// whose name starts so), or -x/--name (one flag, both names).
var flagToken = regexp.MustCompile("(?:^|[\\s`(/])(-[A-Za-z](?:/--[A-Za-z][A-Za-z0-9_-]*)?|--[A-Za-z][A-Za-z0-9_-]*\\*?)")

// TestPerftestFlagMap checks every flag the flag map names against the test commands:
// each is one of their flags (by the name as written, perftest's normalised, and its
// shorthand, the same flag), not refused, except in the refused row, where each is one
// of refusedFlags; and every perftest name that is an alias of another rdmabench flag
// is in the map.
func TestPerftestFlagMap(t *testing.T) {
	var sets []*pflag.FlagSet
	for _, op := range []string{"write", "read"} {
		for _, test := range []string{"bw", "lat"} {
			sets = append(sets, newCmdTest(op, test, nil).Flags())
		}
	}
	refused := map[string]bool{}
	for _, r := range refusedFlags {
		refused[r.name] = true
	}
	// find is the flag tok names on one of the commands, and whether it is refused.
	find := func(tok string) (*pflag.Flag, bool) {
		short, long, _ := strings.Cut(strings.TrimPrefix(tok, "-"), "/--")
		if strings.HasPrefix(tok, "--") {
			short, long = "", strings.TrimPrefix(tok, "--")
		}
		for _, f := range sets {
			var fl *pflag.Flag
			if long != "" {
				fl = f.Lookup(long) // normalised by perftestNames
				if short != "" && (fl == nil || fl.Shorthand != short) {
					continue
				}
			} else {
				fl = f.ShorthandLookup(short)
			}
			if fl != nil {
				return fl, refused[fl.Name] && fl.Hidden
			}
		}
		return nil, false
	}
	named := map[string]bool{}
	for _, r := range perftestFlagMap {
		refusedRow := strings.HasPrefix(r.rdmabench, "refused")
		for col, text := range map[string]string{"perftest": r.perftest, "rdmabench": r.rdmabench, "difference": r.difference} {
			for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
				tok := m[1]
				if prefix, ok := strings.CutSuffix(tok, "*"); ok {
					n := 0
					for _, rf := range refusedFlags {
						if strings.HasPrefix(rf.name, string(perftestNames(nil, strings.TrimPrefix(prefix, "--")))) {
							n++
						}
					}
					if n == 0 || !refusedRow || col != "perftest" {
						t.Errorf("flag map row %q: %s matches %d refused flags", r.perftest, tok, n)
					}
					continue
				}
				fl, isRefused := find(tok)
				switch {
				case fl == nil:
					t.Errorf("flag map row %q, %s: %s is no flag of the test commands", r.perftest, col, tok)
				case col == "difference":
				case isRefused != (refusedRow && col == "perftest"):
					t.Errorf("flag map row %q, %s: %s is refused: %v", r.perftest, col, tok, isRefused)
				}
				if fl != nil && col == "perftest" {
					named[fl.Name] = true
					if _, long, ok := strings.Cut(tok, "--"); ok {
						named[string(perftestNames(nil, long))] = true
					}
				}
			}
		}
	}
	for alias, to := range perftestAliases {
		if !named[alias] && !named[to] {
			t.Errorf("perftest's --%s (rdmabench's --%s) is not in the flag map", alias, to)
		}
	}
}
