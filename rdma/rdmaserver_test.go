package rdma

// The package's tests meet rdmabench's own server on a Loopback fabric: they link it,
// as a program that serves on a Loopback does.
import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/rdma/internal/loophook"
	_ "github.com/rdmabench/rdmabench/rdma/rdmaserver"
)

// Without package rdmaserver linked, a Loopback's Listen says what to import instead of
// serving nothing.
func TestLoopbackWithoutTheServer(t *testing.T) {
	linked := loophook.Serve
	loophook.Serve = nil
	defer func() { loophook.Serve = linked }()
	if _, err := NewLoopback().Listen(""); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "rdma/rdmaserver") {
		t.Fatalf("want ErrNoServer naming the package to import, got %v", err)
	}
}
