//go:build linux

package counters

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// The ethtool ioctl (linux/ethtool.h, linux/sockios.h): ETHTOOL_GDRVINFO for the number
// of statistics, ETHTOOL_GSTRINGS for their names, ETHTOOL_GSTATS for their values.
const (
	siocEthtool     = 0x8946
	ethtoolGDrvinfo = 0x03
	ethtoolGStrings = 0x1b
	ethtoolGStats   = 0x1d
	ethSSStats      = 1
	ethGStringLen   = 32
	// drvinfoNStats is the offset of n_stats in struct ethtool_drvinfo: cmd, five
	// 32-byte strings, 12 reserved bytes, n_priv_flags.
	drvinfoNStats = 4 + 5*32 + 12 + 4
	drvinfoSize   = drvinfoNStats + 4*4
	// statsSlack: the kernel writes as many names and values as the driver has at the
	// time of each call, whatever the buffer holds; the count can grow between calls
	// (ethtool -L), so each buffer has room for more, and a count that changed fails
	// the read.
	statsSlack = 256
)

// ifreq is struct ifreq with ifr_data (40 bytes on 64-bit Linux).
type ifreq struct {
	name [16]byte
	data unsafe.Pointer
	_    [16]byte
}

// gstats reads every statistic of netdev through the ethtool ioctl.
func gstats(netdev string) ([]Stat, error) {
	if len(netdev) >= 16 {
		return nil, fmt.Errorf("netdev name %q too long", netdev)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	ioctl := func(what string, buf []byte) error {
		req := &ifreq{data: unsafe.Pointer(&buf[0])}
		copy(req.name[:], netdev)
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocEthtool, uintptr(unsafe.Pointer(req))); e != 0 {
			if e == syscall.EOPNOTSUPP {
				return errNoStats
			}
			return fmt.Errorf("ioctl(SIOCETHTOOL, %s): %w", what, e)
		}
		return nil
	}
	u32 := func(b []byte) uint32 { return *(*uint32)(unsafe.Pointer(&b[0])) }
	put := func(b []byte, v uint32) { *(*uint32)(unsafe.Pointer(&b[0])) = v }

	info := make([]byte, drvinfoSize)
	put(info, ethtoolGDrvinfo)
	if err := ioctl("ETHTOOL_GDRVINFO", info); err != nil {
		return nil, err
	}
	n := int(u32(info[drvinfoNStats:]))
	if n == 0 {
		return nil, errNoStats
	}
	capacity := n + statsSlack

	names := make([]byte, 12+capacity*ethGStringLen)
	put(names, ethtoolGStrings)
	put(names[4:], ethSSStats)
	put(names[8:], uint32(n))
	if err := ioctl("ETHTOOL_GSTRINGS", names); err != nil {
		return nil, err
	}
	values := make([]byte, 8+capacity*8)
	put(values, ethtoolGStats)
	put(values[4:], uint32(n))
	if err := ioctl("ETHTOOL_GSTATS", values); err != nil {
		return nil, err
	}
	if got, vals := int(u32(names[8:])), int(u32(values[4:])); got != n || vals != n {
		return nil, errors.New("the number of statistics changed while they were read (channels reconfigured?): read again")
	}
	out := make([]Stat, n)
	for i := range out {
		s := names[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		out[i] = Stat{Name: string(s), Value: *(*uint64)(unsafe.Pointer(&values[8+i*8]))}
	}
	return out, nil
}
