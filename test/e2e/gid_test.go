//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// The GID of the address dialled (issue 35, item 4): with a second address, 10.0.0.9,
// on the server's netdev, a client that dials 10.0.0.9 runs on the server's GID of
// 10.0.0.9, not on 10.0.0.1's (the lowest-index IPv4 RoCE v2 GID, which the server
// used to take once at start-up for every client); a client of the same server that
// dials 10.0.0.1 runs on 10.0.0.1's; one that comes over loopback runs on the GID
// chosen without an address, and the result says why. The client runs on the GID of
// its own end, 10.0.0.2. In the bed only: it adds an address and routes to its veths.
func TestGIDOfTheAddressDialled(t *testing.T) {
	needDevice(t)
	if cliDev == "" || cliDev == srvDev {
		t.Skip("needs the two-device shape")
	}
	for _, nd := range []string{"vethA", "vethB"} {
		if _, err := net.InterfaceByName(nd); err != nil {
			t.Skip("not the test bed (no vethA/vethB): this test adds an address and routes to them")
		}
	}
	const second = "10.0.0.9"
	// As rxe_setup_pair routes 10.0.0.1 (test/rxevm/guest-lib.sh): from rxe1's vethB
	// over the veth wire, not through lo, which rxe drops.
	for _, c := range [][2][]string{
		{{"ip", "addr", "add", second + "/24", "dev", "vethA"}, {"ip", "addr", "del", second + "/24", "dev", "vethA"}},
		{{"ip", "route", "add", second + "/32", "dev", "vethB", "src", "10.0.0.2", "table", "101"}, {"ip", "route", "del", second + "/32", "table", "101"}},
		{{"ip", "rule", "add", "pref", "22", "to", second, "lookup", "101"}, {"ip", "rule", "del", "pref", "22"}},
	} {
		if out, err := exec.Command(c[0][0], c[0][1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", strings.Join(c[0], " "), err, out)
		}
		undo := c[1]
		t.Cleanup(func() { exec.Command(undo[0], undo[1:]...).Run() })
	}
	gids := func() map[string]int { // rxe0's RoCE v2 GIDs by address
		out, code := run(t, "devices", "--json")
		if code != 0 {
			t.Fatalf("devices --json: exit %d\n%s", code, out)
		}
		var doc struct {
			Devices []verbs.DeviceInfo `json:"devices"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, d := range doc.Devices {
			if d.Name == srvDev && len(d.Ports) > 0 {
				for _, g := range d.Ports[0].GIDs {
					if g.Type == "RoCE v2" {
						m[g.GID] = g.Index
					}
				}
			}
		}
		return m
	}
	var table map[string]int
	for i := 0; i < 100; i++ { // rxe adds the address's GID asynchronously
		if table = gids(); table[second] > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if table[second] == 0 || table[srvIP] == 0 || table[second] == table[srvIP] {
		t.Fatalf("%s: want GIDs of %s and %s, got %v", srvDev, srvIP, second, table)
	}
	t.Logf("%s's RoCE v2 GIDs: %v", srvDev, table)
	p := startServer(t, "--bind", "0.0.0.0")
	for _, c := range []struct {
		dial, dev string
		server    int    // the server's GID index
		note      string // in both sides' gid_note ("" none)
	}{
		{second, cliDev, table[second], ""},
		{srvIP, cliDev, table[srvIP], ""},
		{"127.0.0.1", srvDev, table[srvIP], "holds 127.0.0.1"},
	} {
		t.Run(c.dial, func(t *testing.T) {
			r := measure(t, "write", "bw", "-d", c.dev, "-p", fmt.Sprint(p), c.dial, "-s", "4K", "-n", "200", "--verify")
			if r.Verify == nil || !r.Verify.OK {
				t.Fatalf("verification: %+v", r.Verify)
			}
			s := r.ServerDevice
			if s.GIDIndex != c.server || (c.note == "" && s.GID != c.dial) {
				t.Errorf("dialled %s: the server ran on GID %d (%s), want %d", c.dial, s.GIDIndex, s.GID, c.server)
			}
			if c.note == "" && (r.Client.GID != "10.0.0.2" || s.GIDNote != "" || r.Client.GIDNote != "") {
				t.Errorf("dialled %s: client GID %q, notes %q %q; want 10.0.0.2 and none", c.dial, r.Client.GID, r.Client.GIDNote, s.GIDNote)
			}
			if c.note != "" && (!strings.Contains(s.GIDNote, c.note) || !strings.Contains(r.Client.GIDNote, c.note)) {
				t.Errorf("dialled %s: want both sides' gid_note to say %q: %q %q", c.dial, c.note, r.Client.GIDNote, s.GIDNote)
			}
		})
	}
}
