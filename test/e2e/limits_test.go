//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Limits checked when a device is opened (issue 35, item 7): a message above the
// port's max_msg_sz is refused with the size to use, and a registration that
// RLIMIT_MEMLOCK stops says what the limit is and how to raise it; both exit 1.
func TestMaxMsgSizeAndMemlockExplained(t *testing.T) {
	needDevice(t)
	out, code := run(t, "devices", "--json")
	var doc struct {
		Devices []verbs.DeviceInfo `json:"devices"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("devices --json: exit %d\n%s", code, out)
	}
	var max uint32
	for _, d := range doc.Devices {
		if d.Name == srvDev {
			max = d.Ports[0].MaxMsgSize
		}
	}
	p := startServer(t)
	t.Run("max_msg_sz", func(t *testing.T) {
		if max == 0 || max > 64<<20 {
			t.Skipf("%s's max_msg_sz is %d: too large a buffer to test", srvDev, max)
		}
		out, code := run(t, client("write", "bw", srvDev, p, "-s", fmt.Sprint(max+1), "-n", "5")...)
		if code != 1 || !strings.Contains(out, fmt.Sprintf("above %s port 1's max_msg_sz of %d bytes", srvDev, max)) || !strings.Contains(out, fmt.Sprintf("--size %d or less", max)) {
			t.Fatalf("--size %d: want exit 1 naming max_msg_sz %d, got %d:\n%s", max+1, max, code, out)
		}
	})
	t.Run("memlock", func(t *testing.T) {
		// As root, CAP_IPC_LOCK lifts the limit: drop it from the bounding set (as
		// TestDoctor does), so that the client runs as an unprivileged user would.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args := append([]string{"--bounding-set", "-ipc_lock", "prlimit", "--memlock=65536:65536", bin}, client("write", "bw", srvDev, p, "-s", "1M", "-n", "5")...)
		b, err := exec.CommandContext(ctx, "setpriv", args...).CombinedOutput()
		out := string(b)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("want exit 1, got %v:\n%s", err, out)
		}
		for _, want := range []string{"ibv_reg_mr", "RLIMIT_MEMLOCK is 64 KiB (ulimit -l)", "hard limit is 64 KiB", "CAP_IPC_LOCK"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in:\n%s", want, out)
			}
		}
	})
}
