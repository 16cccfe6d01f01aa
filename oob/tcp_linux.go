package oob

import (
	"net"
	"syscall"
	"time"
)

// Tune makes a dead peer visible within about timeout: keepalive probes from timeout/3
// of silence, and TCP_USER_TIMEOUT, which aborts the connection when sent data stays
// unacknowledged for timeout (a crashed host sends no FIN or RST).
func Tune(nc net.Conn, timeout time.Duration) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: max(timeout/3, time.Second), Interval: max(timeout/6, time.Second), Count: 3})
	if rc, err := tc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x12 /* TCP_USER_TIMEOUT */, int(timeout.Milliseconds()))
		})
	}
}
