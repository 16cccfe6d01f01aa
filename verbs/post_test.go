package verbs

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// The C twins (rb_post.h) have these sizes; post.go checks them against C at build time.
func TestPostLayout(t *testing.T) {
	if unsafe.Sizeof(WR{}) != 40 || unsafe.Sizeof(WC{}) != 32 {
		t.Fatalf("WR %d bytes, WC %d bytes; want 40 and 32", unsafe.Sizeof(WR{}), unsafe.Sizeof(WC{}))
	}
}

func TestWCErr(t *testing.T) {
	ok := WC{Status: WCSuccess}
	if err := ok.Err("IBV_WC_RDMA_WRITE"); err != nil {
		t.Fatalf("a successful completion: %v", err)
	}
	wc := WC{WRID: 7, Status: WCRemAccessErr, VendorErr: 0x88, QPNum: 0x1234}
	var ce *CompletionError
	if err := wc.Err("IBV_WC_RDMA_READ"); !errors.As(err, &ce) {
		t.Fatalf("want a CompletionError, got %v", err)
	}
	if ce.Status != "IBV_WC_REM_ACCESS_ERR" || ce.Opcode != "IBV_WC_RDMA_READ" || ce.WRID != 7 || ce.VendorErr != 0x88 || ce.QPNum != 0x1234 || ce.Detail == "" {
		t.Fatalf("%+v", ce)
	}
	if msg := ce.Error(); !strings.Contains(msg, "QP 0x1234") || !strings.Contains(msg, "vendor error 0x88") {
		t.Fatal(msg)
	}
	if name, _ := wcStatusText(99); name != "status 99" {
		t.Fatalf("an unknown status is %q", name)
	}
}

// A failed completion names its status and QP; its opcode is undefined (ibv_poll_cq(3))
// and is not named. An unexpected successful one names its opcode.
func TestCompletionErrorNamesStatusAndQP(t *testing.T) {
	failed := (&CompletionError{Status: "IBV_WC_REM_INV_REQ_ERR", Detail: "remote invalid request error", QPNum: 0x11, WRID: 7}).Error()
	if !strings.Contains(failed, "IBV_WC_REM_INV_REQ_ERR (remote invalid request error) on QP 0x11") || strings.Contains(failed, "opcode") {
		t.Errorf("failed completion: %s", failed)
	}
	stray := (&CompletionError{Status: "IBV_WC_SUCCESS", Opcode: "IBV_WC_RDMA_WRITE", QPNum: 0x11, Unexpected: true}).Error()
	if !strings.Contains(stray, "opcode IBV_WC_RDMA_WRITE") {
		t.Errorf("unexpected completion: %s", stray)
	}
}
