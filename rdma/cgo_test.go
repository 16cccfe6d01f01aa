//go:build linux && cgo

package rdma

const cgoVerbs = true
