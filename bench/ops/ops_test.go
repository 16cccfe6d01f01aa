package ops

import (
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

func TestNamed(t *testing.T) {
	for _, n := range Names {
		op, err := Named(n)
		if err != nil || string(op.Name) != n {
			t.Errorf("%s: %v, %v", n, op.Name, err)
		}
	}
	if len(All) != len(Names) {
		t.Errorf("All has %d operations, Names %d", len(All), len(Names))
	}
	if _, err := Named("send"); err == nil {
		t.Error("send is not an operation rdmabench measures")
	}
}

func TestDefaultsAndValidateFindTheOperation(t *testing.T) {
	c := result.Config{Op: "read", Test: result.BW}
	Defaults(&c)
	if c.Iterations != 1000 || Validate(c) != nil {
		t.Errorf("read bw: %d iterations (want ib_read_bw's 1000), %v", c.Iterations, Validate(c))
	}
	c = result.Config{Op: "write", Test: result.BW}
	Defaults(&c)
	if c.Iterations != 5000 || Validate(c) != nil {
		t.Errorf("write bw: %d iterations (want ib_write_bw's 5000), %v", c.Iterations, Validate(c))
	}
	bad := result.Config{Op: "send"}
	Defaults(&bad)
	if bad != (result.Config{Op: "send"}) || Validate(bad) == nil {
		t.Errorf("an unknown operation must stay as it is and be refused: %+v", bad)
	}
}
