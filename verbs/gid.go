package verbs

import (
	"fmt"
	"net"
)

// pickGID returns the GID entry at index, or with index -1 the one perftest would pick
// on RoCE: an IPv4-mapped RoCE v2 GID, else a RoCE v2 GID that is not link-local, else
// an IPv4-mapped RoCE v1 GID, else the first entry. InfiniBand ports use index 0.
func pickGID(p PortInfo, index int) (GIDEntry, error) {
	if len(p.GIDs) == 0 {
		return GIDEntry{}, fmt.Errorf("the GID table is empty (no IP address on the netdev?)")
	}
	if index >= 0 {
		for _, g := range p.GIDs {
			if g.Index == index {
				return g, nil
			}
		}
		return GIDEntry{}, fmt.Errorf("GID index %d is not a valid entry (see 'rdmabench devices')", index)
	}
	if p.LinkLayer != "Ethernet" {
		return p.GIDs[0], nil
	}
	score := func(g GIDEntry) int {
		ip := net.ParseIP(g.GID)
		v4 := ip != nil && ip.To4() != nil
		switch {
		case g.Type == "RoCE v2" && v4:
			return 4
		case g.Type == "RoCE v2" && !ip.IsLinkLocalUnicast():
			return 3
		case g.Type == "RoCE v1" && v4:
			return 2
		}
		return 1
	}
	best := p.GIDs[0]
	for _, g := range p.GIDs[1:] {
		if score(g) > score(best) {
			best = g
		}
	}
	return best, nil
}
