//go:build !linux

package oob

import (
	"net"
	"time"
)

// Tune enables keepalive probes from timeout/3 of silence.
func Tune(nc net.Conn, timeout time.Duration) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: max(timeout/3, time.Second), Interval: max(timeout/6, time.Second), Count: 3})
	}
}
