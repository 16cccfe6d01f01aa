// Package loophook joins a Loopback fabric (package rdma) to the server that serves
// it (package rdmaserver), so that rdma links no server: rdmaserver sets Serve when a
// program or a test links it, as a database/sql driver registers itself.
package loophook

import (
	"net"

	"github.com/rdmabench/rdmabench/rdma/internal/fake"
)

// Serve runs rdmabench's server on dev, a device of a Loopback fabric, accepting
// clients on ln with token ("" for none), until stop is called; stop waits for it.
// It is nil until package rdmaserver is linked.
var Serve func(dev *fake.Device, ln net.Listener, token string) (stop func() error, err error)
