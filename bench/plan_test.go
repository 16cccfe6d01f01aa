package bench

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

func TestDefaultsMirrorPerftest(t *testing.T) {
	bw := result.Config{Op: "write"}
	Defaults(&bw)
	if bw.MsgSizeBytes != 65536 || bw.Iterations != 5000 || bw.SQDepth != 128 || bw.CQMod != 100 || bw.PostList != 1 || bw.NumQPs != 1 {
		t.Fatalf("bw defaults: %+v", bw)
	}
	lat := result.Config{Op: "read", Test: "lat"}
	Defaults(&lat)
	if lat.MsgSizeBytes != 2 || lat.Iterations != 1000 {
		t.Fatalf("lat defaults: %+v", lat)
	}
	if err := Validate(bw); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	base := result.Config{Op: "write"}
	Defaults(&base)
	for want, mod := range map[string]func(*result.Config){
		"--cq-mod":          func(c *result.Config) { c.CQMod = c.SQDepth + 1 },
		"--post-list":       func(c *result.Config) { c.PostList = 0 },
		"--mtu":             func(c *result.Config) { c.MTUBytes = 1500 },
		"--duration":        func(c *result.Config) { c.Test = "lat"; c.DurationS = 1 },
		"--inline":          func(c *result.Config) { c.Op = "read"; c.InlineBytes = 64 },
		"--verify":          func(c *result.Config) { c.Test = "lat"; c.Verify = true },
		"--qps":             func(c *result.Config) { c.NumQPs = 0 },
		"unknown operation": func(c *result.Config) { c.Op = "send" },
	} {
		c := base
		mod(&c)
		if err := Validate(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
}
