// Package ops names the operations rdmabench measures, each a room of its own:
// RDMA WRITE (bench/write) and READ (bench/read). A command, a server or a check that
// has an operation's name in hand finds its rules here.
package ops

import (
	"fmt"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/read"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// All is every operation by name ("write", "read"), as a server serves them. It is
// read-only.
var All = map[string]bench.Op{"write": write.Op, "read": read.Op}

// Names are the operations' names, in the order rdmabench runs and shows them.
var Names = []string{"write", "read"}

// Named is the operation called name, or an error that lists the known ones.
func Named(name string) (bench.Op, error) {
	if op, ok := All[name]; ok {
		return op, nil
	}
	return bench.Op{}, fmt.Errorf("unknown operation %q: want write or read", name)
}

// Defaults fills what a plan leaves unset the way its operation does (plan.Defaults).
// A plan for an unknown operation stays as it is, for Validate to refuse.
func Defaults(c *result.Config) { plan.Defaults(c) }

// Validate says what is wrong with a plan, by its operation's rules (plan.Validate).
func Validate(c result.Config) error { return plan.Validate(c) }
