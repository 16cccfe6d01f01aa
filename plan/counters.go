package plan

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
)

// ValidateCounters checks --counters: auto, all, off or a list of counter names.
func ValidateCounters(s string) error {
	switch s {
	case "", "auto", "all", "off":
		return nil
	}
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n == "" || strings.ContainsAny(n, "/ \t") || n == "." || n == ".." {
			return fmt.Errorf("--counters %s: want auto, all, off or a comma-separated list of counter names", text.Quote(s))
		}
	}
	return nil
}
