//go:build linux && cgo

package rdmaserver

const cgoVerbs = true
