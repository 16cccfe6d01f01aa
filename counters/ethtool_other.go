//go:build !linux

package counters

// gstats: the ethtool ioctl is Linux's.
func gstats(string) ([]Stat, error) { return nil, errNoStats }
