//go:build linux

package mrbench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHasCap(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		eff  string
		want bool
	}{{"0000000000000000", false}, {"000001ffffffffff", true}, {"0000000000004000", true}, {"0000000000002000", false}, {"zz", false}} {
		p := filepath.Join(dir, "status")
		os.WriteFile(p, []byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t"+c.eff+"\n"), 0o644)
		if got := hasCap(p, capIPCLock); got != c.want {
			t.Errorf("CapEff %s: %v, want %v", c.eff, got, c.want)
		}
	}
	if hasCap(filepath.Join(dir, "none"), capIPCLock) {
		t.Error("no status file: want false")
	}
	if _, _, err := Limits(); err != nil {
		t.Error(err)
	}
}
