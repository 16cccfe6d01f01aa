package read_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/read"
)

// Every test of the op through the client and the server on the fake engine.
func TestOpOverFakeEngine(t *testing.T) { benchtest.TestOp(t, read.Op) }
