//go:build e2e

package e2e

import "testing"

// TestTCPBaseline: the same transfer over TCP between the same hosts, both directions,
// after a verified RDMA run; the ratio is the RDMA run's Gb/s over TCP's.
func TestTCPBaseline(t *testing.T) {
	needPair(t)
	p := startServer(t)
	for _, op := range []string{"write", "read"} {
		for _, size := range []string{"4K", "256K"} {
			r := measure(t, client(op, "bw", cliDev, p, "-s", size, "-n", "300", "--verify", "--baseline", "tcp")...)
			b := r.Baseline
			if b == nil || b.Error != "" || b.Transport != "tcp" {
				t.Fatalf("%s %s: baseline %+v", op, size, b)
			}
			if b.Messages != r.Iterations || b.Bytes != r.Bytes || b.BWGbps <= 0 || b.RDMAOverTCP <= 0 {
				t.Errorf("%s %s: tcp %d msgs %d B %.3f Gb/s (ratio %.2f), rdma %d msgs %d B", op, size, b.Messages, b.Bytes, b.BWGbps, b.RDMAOverTCP, r.Iterations, r.Bytes)
			}
			t.Logf("%s bw %s: RDMA %.3f Gb/s, TCP %.3f Gb/s: RDMA/TCP %.2f", op, size, r.BWGbps, b.BWGbps, b.RDMAOverTCP)
		}
	}
}
