package bench

import "testing"

func TestValidHostAndPort(t *testing.T) {
	for _, h := range []string{"10.0.0.2", "::1", "fe80::1%eth0", "node-01", "node_01.cluster.local", "a.b.c.", "X1"} {
		if !validHost(h) {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range []string{"", "h1\nforged", "h\x1b[2J", "-bad", "bad-", "a..b", "a b", "host:1", "fe80::1%eth0\nforged", string(make([]byte, 300))} {
		if validHost(h) {
			t.Errorf("%q accepted", h)
		}
	}
	for p, ok := range map[string]bool{"1": true, "65535": true, "0": false, "65536": false, "018": false, "+1": false, "": false} {
		if validPort(p) != ok {
			t.Errorf("port %q: %v", p, !ok)
		}
	}
}
