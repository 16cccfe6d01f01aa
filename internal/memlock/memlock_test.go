package memlock

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCapIPCLock(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	p := filepath.Join(root, "proc/self/status")
	for _, c := range []struct {
		eff  string
		want bool
	}{{"0000000000000000", false}, {"000001ffffffffff", true}, {"0000000000004000", true}, {"0000000000002000", false}, {"zz", false}} {
		os.WriteFile(p, []byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t"+c.eff+"\n"), 0o644)
		if got := CapIPCLock(root); got != c.want {
			t.Errorf("CapEff %s: %v, want %v", c.eff, got, c.want)
		}
	}
	if CapIPCLock(t.TempDir()) {
		t.Error("no status file: want false")
	}
}

func TestLimit(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/self"), 0o755)
	p := filepath.Join(root, "proc/self/limits")
	os.WriteFile(p, []byte("Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         65536                unlimited            bytes\n"), 0o644)
	if soft, hard, err := Limit(root); err != nil || soft != 65536 || hard != Unlimited {
		t.Fatalf("got %d %d %v", soft, hard, err)
	}
	os.WriteFile(p, []byte("Max open files 1024 4096 files\n"), 0o644)
	if _, _, err := Limit(root); err == nil {
		t.Fatal("no memlock line must be an error")
	}
	if _, _, err := Limit("/"); err != nil { // this machine's own
		t.Fatal(err)
	}
}
