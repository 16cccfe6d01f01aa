package oob

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// byteConn is a net.Conn that reads the given bytes and then io.EOF, and collects
// what is written to it: a hostile peer's whole side of a connection, with no
// goroutine and no network in between.
type byteConn struct {
	r *bytes.Reader
	w bytes.Buffer
}

func (c *byteConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *byteConn) Write(p []byte) (int, error)      { return c.w.Write(p) }
func (c *byteConn) Close() error                     { return nil }
func (c *byteConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *byteConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *byteConn) SetDeadline(time.Time) error      { return nil }
func (c *byteConn) SetReadDeadline(time.Time) error  { return nil }
func (c *byteConn) SetWriteDeadline(time.Time) error { return nil }

// encode is oob's own encoder (Conn.Send) writing one message into a byte slice.
func encode(tb testing.TB, m Msg) []byte {
	tb.Helper()
	bc := &byteConn{r: bytes.NewReader(nil)}
	if err := NewConn(bc, time.Second).Send(m); err != nil {
		tb.Fatalf("encoding %+v: %v", m, err)
	}
	return bc.w.Bytes()
}

// rawFrame is a frame of this version around any body.
func rawFrame(body string) []byte {
	f := append([]byte("RDMB"), 0, Version, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(f[6:], uint32(len(body)))
	return append(f, body...)
}

// fuzzSeedMsgs are real messages of every type, as a session sends them.
func fuzzSeedMsgs() []Msg {
	dev := result.Device{Name: "mlx5_0", Driver: "mlx5", Model: "ConnectX-5", VendorID: 0x2c9, VendorPartID: 4119,
		FirmwareVer: "16.35.2000", NodeGUID: "b859:9f03:00a1:2b3c", Port: 1, LinkLayer: "Ethernet", RateGbps: 100,
		ActiveMTU: 4096, GIDIndex: 3, GIDType: "RoCE v2", GID: "192.0.2.7", Host: "host-a"}
	plan := result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, Iterations: 5000, WarmupIterations: 500,
		SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1, InlineBytes: -1, Verify: true}
	ep := qp.Endpoint{QPNs: []uint32{17, 18}, PSNs: []uint32{0x1234, 0xabcdef}, GID: "fe80::f870:25ff:febf:b0ac",
		GIDIndex: 1, GIDType: "RoCE v2", GIDNetdev: "ens1f0np0", LinkLayer: "Ethernet", MTU: 1024, RdAtom: 16, Addr: 0x7f0000001000, RKey: 0x1234, Len: 1 << 20}
	nonce := bytes.Repeat([]byte{0xa5}, NonceBytes)
	node := 1
	withFacts := dev
	withFacts.GIDNote = "no RoCE v2 GID of mlx5_0 port 1 holds 127.0.0.1, the control connection's local address: GID 3 (192.0.2.7, ens1f0np0) as without an address"
	withFacts.HostFacts = &host.Facts{Device: "mlx5_0", Driver: "mlx5_core", PCIAddress: "0000:3b:00.0",
		PCIeLink: host.NewPCIeLink(8, 16), PCIeMaxLink: host.NewPCIeLink(16, 16), NUMANode: &node, LocalCPUs: "16-31,48-63",
		CPUGovernors: []string{"powersave"}, KernelRelease: "6.8.0-45-generic", ClockDomain: host.ClockVirtual, Provider: "mlx5", RDMACoreVersion: "50.0",
		Notes: []string{"PCIe current link unknown"}}
	return []Msg{
		{Type: THello, Hello: &Hello{Proto: Version, Tool: "v1.0.0", Host: "host-b", Device: dev}},
		{Type: THello, Hello: &Hello{Proto: Version, Tool: "v1.0.0", Host: "host-b", Device: withFacts}},
		{Type: TChallenge, Challenge: &Challenge{Nonce: nonce}},
		{Type: TAuth, Auth: &Auth{Nonce: nonce, Proof: Proof("s3cret", "client", nonce, nonce)}},
		{Type: THello, Hello: &Hello{Proto: Version, Tool: "v1.0.0", Host: "host-a", Device: dev, Proof: Proof("s3cret", "server", nonce, nonce)}},
		{Type: TPlan, Plan: &plan},
		{Type: TEndpoint, Endpoint: &ep},
		{Type: TReady},
		{Type: TBeat},
		{Type: TDone, Done: &Done{Completed: []uint64{5000, 4999}}},
		{Type: TReport, Report: &Report{Verify: &result.Verify{Side: "server", Slots: 128, CheckedBytes: 128 * 65536, OK: true, FirstBadOffset: -1}}},
		{Type: TReport, Report: &Report{Verify: &result.Verify{Side: "server", FirstBadOffset: 4097, Detail: "QP 0, slot 1: byte 1 differs"}}},
		{Type: TBye},
		{Type: TError, Error: "invalid plan: --size 0: want 1 B to 2 GiB"},
		{Type: TTCPBaseline, TCPBaseline: &TCPBaseline{Op: "write", Size: 65536, Messages: 5000}},
		{Type: TTCPPort, TCPPort: &TCPPort{Port: 40123, Cookie: nonce[:CookieBytes]}},
		{Type: TTCPDone, TCPDone: &TCPDone{Bytes: 5000 * 65536}},
		{Type: TTCPDone, TCPDone: &TCPDone{Bytes: 4096, Error: "receiving, after 4096 of 327680000 bytes: the client closed the connection"}},
	}
}

// FuzzRecv feeds arbitrary bytes to Conn.Recv as a hostile peer's side of the control
// connection. Recv must not panic, must return a message or an error, must not
// allocate much beyond the MaxBody bound before the bytes have arrived, must read no
// further than the one frame it decodes, and a frame it accepts must re-encode (Send)
// and decode to the same message.
func FuzzRecv(f *testing.F) {
	for _, m := range fuzzSeedMsgs() {
		f.Add(encode(f, m))
	}
	hello, bye := encode(f, fuzzSeedMsgs()[0]), encode(f, Msg{Type: TBye})
	f.Add(append(append([]byte{}, hello...), bye...)) // two frames: Recv takes the first only
	f.Add(hello[:len(hello)-1])                       // truncated body
	f.Add(hello[:7])                                  // truncated header
	f.Add([]byte{})
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"))
	f.Add([]byte("RDMB\x00\x07\x00\x00\x00\x02{}"))
	f.Add(hdr("\x00\x10\x00\x00{}")) // exactly MaxBody claimed, 2 bytes sent
	f.Add(hdr("\x00\x10\x00\x01{}")) // MaxBody+1
	f.Add(hdr("\xff\xff\xff\xff"))   // 4 GiB claimed
	f.Add(rawFrame("null"))          // a frame without a message
	f.Add(rawFrame(`{"evil":1}`))    // unknown field
	f.Add(rawFrame(`{"type":"done"}{"type":"bye"}`))
	f.Add(rawFrame(`{"type":"done","done":{"completed_per_qp":[-1]}}`))
	f.Add(rawFrame(`{"type":"plan","plan":{"msg_size_bytes":1e400}}`))
	f.Add(rawFrame("{\"type\":\"hello\",\"hello\":{\"host\":\"\xff\\u0000<&>\\n\",\"proof\":\"\"}}"))
	f.Add(rawFrame("{\"type\":\"error\",\"error\":\"refused\\nrdmabench server: root logged in\\u001b[2J\\u2028\"}"))
	f.Add(rawFrame(`{"type":"auth","auth":{"nonce":"pa\r\nWl","proof":null}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		bc := &byteConn{r: bytes.NewReader(data)}
		c := NewConn(bc, time.Second)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := c.Recv(time.Second)
		runtime.ReadMemStats(&after)

		// What a frame may cost: the body buffer (at most MaxBody, allocated from the
		// header before the body arrives) plus what decoding the bytes that did arrive
		// costs, which is proportional to them.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(MaxBody+64*len(data)+256<<10); got > limit {
			t.Fatalf("Recv of %d bytes allocated %d bytes, more than %d", len(data), got, limit)
		}
		consumed := len(data) - bc.r.Len()
		if err != nil {
			// What a peer sent never forges a line of this side's output or log.
			if i := strings.IndexFunc(err.Error(), func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }); i >= 0 {
				t.Fatalf("error with a raw control character at byte %d: %q", i, err.Error())
			}
		}

		var pe *PeerError
		if errors.As(err, &pe) {
			if m.Type != TError || pe.Msg != m.Error {
				t.Fatalf("peer error %q from a %q message with error %q", pe.Msg, m.Type, m.Error)
			}
		}
		if err != nil && !errors.As(err, &pe) {
			return // refused; the session ends here, so what was read does not matter
		}
		// A decoded frame (a message or a peer's error) is exactly header + body.
		if consumed < 10 {
			t.Fatalf("decoded a frame from %d bytes", consumed)
		}
		if n := int(binary.BigEndian.Uint32(data[6:10])); consumed != 10+n || n > MaxBody {
			t.Fatalf("decoded a frame with a %d-byte body but consumed %d bytes", n, consumed)
		}
		if err != nil {
			return
		}
		if m.Type == TError {
			t.Fatalf("an error message came back as a message: %+v", m)
		}

		// Re-encode with oob's encoder and decode again: the same message.
		frame := &byteConn{r: bytes.NewReader(nil)}
		if err := NewConn(frame, time.Second).Send(m); err != nil {
			// Go's encoder escapes <, >, & and invalid UTF-8, so a body near MaxBody can
			// grow past it; anything else is a failure.
			if body, jerr := json.Marshal(m); jerr == nil && len(body) > MaxBody {
				return
			}
			t.Fatalf("accepted %+v but cannot re-encode it: %v", m, err)
		}
		enc := frame.w.Bytes()
		back := &byteConn{r: bytes.NewReader(enc)}
		m2, err := NewConn(back, time.Second).Recv(time.Second)
		if err != nil {
			t.Fatalf("re-encoded frame %q is refused: %v", enc, err)
		}
		if back.r.Len() != 0 {
			t.Fatalf("re-encoded frame %q: %d bytes left after decoding", enc, back.r.Len())
		}
		if again := encode(t, m2); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable:\n%q\n%q", enc, again)
		}
		_ = m.complete() // what Expect asks of it
		clearEmpty(reflect.ValueOf(&m).Elem())
		clearEmpty(reflect.ValueOf(&m2).Elem())
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n got %#v\nwant %#v", m2, m)
		}
	})
}

// clearEmpty makes every empty slice under v nil: an empty []byte under omitempty
// ("proof":"") re-encodes as no key at all and decodes as nil, the same message to
// every reader of it.
func clearEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			clearEmpty(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				clearEmpty(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
		}
		for i := 0; i < v.Len(); i++ {
			clearEmpty(v.Index(i))
		}
	}
}

// TestCorpusSpeaksThisVersion: the committed FuzzRecv inputs that are frames carry this
// protocol version (except the one about another version), so that after a version bump
// they still reach the decoder instead of all stopping at the version check.
func TestCorpusSpeaksThisVersion(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzRecv/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The file is "go test fuzz v1" and one line []byte("...").
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a one-value corpus file", f)
		}
		in, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.HasPrefix(in, "RDMB") || len(in) < 6 || strings.HasSuffix(f, "wrong_version") {
			continue
		}
		if v := binary.BigEndian.Uint16([]byte(in[4:6])); v != Version {
			t.Errorf("%s: a frame of protocol version %d, this is %d: update its version bytes", f, v, Version)
		}
	}
}
