package rdmaserver

import (
	"context"
	"errors"
	"net"
	"testing"
)

// Without cgo (or off Linux) Serve says so; with cgo and no device, it says how to get
// one. Either way it returns at once instead of listening without a device.
func TestServeWithoutDevice(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = Serve(context.Background(), l, Config{Device: "no-such-device", GIDIndex: -1})
	if err == nil {
		t.Fatal("Serve without the device must fail")
	}
	if !cgoVerbs && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
	if cgoVerbs && errors.Is(err, ErrUnsupported) {
		t.Fatalf("a cgo build must try the device, got %v", err)
	}
}
