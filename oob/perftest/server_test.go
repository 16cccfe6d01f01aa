package perftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// The client's side is written here from perftest 6.06's order (the key rounds of
// ctx_hand_shake, the latency tests' extra key message, xchg_bw_reports, the closing
// barrier), not produced by the machine under test.

// clientKey and serverKey are QP i's keys: the client's READ QPs offer 16 outstanding
// READs (perftest's client sends its device's max), its WRITE QPs one.
func clientKey(i int, read bool) Dest {
	d := Dest{OutReads: 1, QPN: 0x100 + uint32(i), PSN: 0x1000 + uint32(i), RKey: 0xc1, VAddr: 0x7000 + uint64(i)<<20,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 2}}
	if read {
		d.OutReads = 16
	}
	return d
}

func serverKey(i int) Dest {
	return Dest{OutReads: 1, QPN: 0x200 + uint32(i), PSN: 0x2000 + uint32(i), RKey: 0x51, VAddr: 0x9000 + uint64(i)<<20,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 1}}
}

func keys(gid bool, ds ...Dest) []byte {
	var b []byte
	for _, d := range ds {
		b = append(b, d.Marshal(gid)...)
	}
	return b
}

var testReport = BWReport{Size: 65536, Iters: 400, BWAvg: 23, MsgRate: 0.000368}

func reportBytes(r BWReport) []byte { return bytes.Join(r.Encode(6.06), nil) }

// bwClient is what a bandwidth client of q QPs sends: round one, round two, the
// barrier, (its run), the end barrier, its report, the closing barrier.
func bwClient(gid bool, q int, read bool) []byte {
	var ds []Dest
	for i := range q {
		ds = append(ds, clientKey(i, read))
	}
	b := keys(gid, ds...)
	b = append(b, keys(gid, ds...)...)
	b = append(b, keys(gid, ds[0], ds[0])...)
	b = append(b, reportBytes(testReport)...)
	return append(b, keys(gid, ds[0])...)
}

// latClient is what a latency client sends: QP 0's key four times (one more than a
// bandwidth client, at once), and read_lat's closing key after its run.
func latClient(gid bool, read bool) []byte {
	d := clientKey(0, read)
	b := keys(gid, d, d, d, d)
	if read {
		b = append(b, keys(gid, d)...)
	}
	return b
}

// play drives x with the client's bytes in, as bench's driver does (new QPs get
// serverKey, StepWritten gets written), and returns what the server sent and the step
// it stopped on. Bytes run out: the client hung up. A conversation that ends well
// reads all of in.
func play(t testing.TB, x *Server, in []byte, written bool) ([][]byte, Step, error) {
	sent, end, err, left := playSome(t, x, in, written)
	if left > 0 && end.Kind != StepFailed {
		t.Fatalf("%d bytes left after step %d", left, end.Kind)
	}
	return sent, end, err
}

// playSome is play that may leave bytes unread: the exchange ended before them.
func playSome(t testing.TB, x *Server, in []byte, written bool) ([][]byte, Step, error, int) {
	var sent [][]byte
	for steps := 0; steps < 4*len(in)+64; steps++ {
		st := x.Next()
		switch st.Kind {
		case StepRead:
			if st.N <= 0 || st.N > KeySizeGID {
				t.Fatalf("a read of %d bytes", st.N)
			}
			n := min(st.N, len(in))
			err := x.Feed(in[:n])
			in = in[n:]
			if err != nil {
				return sent, st, err, len(in)
			}
		case StepSend:
			sent = append(sent, st.Msg)
		case StepNewQP:
			if err := x.Added(serverKey(x.QPs() - 1)); err != nil {
				return sent, st, err, len(in)
			}
		case StepWritten:
			if err := x.Written(written); err != nil {
				return sent, st, err, len(in)
			}
		default:
			return sent, st, x.Err(), len(in)
		}
	}
	t.Fatal("the exchange does not end")
	return nil, Step{}, nil, 0
}

// answers is what the server sends a client of q QPs: its keys in round one and two,
// then QP 0's to the barrier and each later key message, the report's zeros between.
func answers(gid bool, q, later int, report bool) [][]byte {
	var want [][]byte
	for range 2 {
		for i := range q {
			want = append(want, serverKey(i).Marshal(gid))
		}
	}
	for i := range 1 + later {
		want = append(want, serverKey(0).Marshal(gid))
		if report && i == 1 {
			for _, n := range ReportSizes(6.06) {
				want = append(want, make([]byte, n))
			}
		}
	}
	return want
}

func sameSent(t *testing.T, name string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: sent %d messages, want %d", name, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: message %d is %q, want %q", name, i, got[i], want[i])
		}
	}
}

func TestServerBandwidthClients(t *testing.T) {
	for _, gid := range []bool{true, false} {
		for _, tc := range []struct {
			qps  int
			read bool
			want string
		}{
			{1, false, "write_bw, 1 QP"}, {3, false, "write_bw, 3 QP"}, {1, true, "read_bw, 1 QP"}, {2, true, "read_bw, 2 QP"},
		} {
			name := fmt.Sprintf("%s gid %v", tc.want, gid)
			x := NewServer(gid, 6.06)
			if x.Test() != "setup" {
				t.Fatalf("%s: before the barrier the test is %q", name, x.Test())
			}
			sent, end, err := play(t, x, bwClient(gid, tc.qps, tc.read), true)
			if err != nil || end.Kind != StepDone {
				t.Fatalf("%s: stopped at step %d: %v", name, end.Kind, err)
			}
			sameSent(t, name, sent, answers(gid, tc.qps, 2, true))
			if rep, ok := x.Report(); x.Test() != tc.want || !ok || rep != testReport {
				t.Errorf("%s: test %q, report %+v (%v)", name, x.Test(), rep, ok)
			}
		}
	}
}

func TestServerLatencyClients(t *testing.T) {
	for _, gid := range []bool{true, false} {
		x := NewServer(gid, 6.06)
		sent, end, err := play(t, x, latClient(gid, false), false)
		if err != nil || end.Kind != StepWriteLat || x.Test() != "write_lat" {
			t.Fatalf("write_lat, gid %v: step %d, test %q: %v", gid, end.Kind, x.Test(), err)
		}
		sameSent(t, "write_lat", sent, answers(gid, 1, 1, false))
		x = NewServer(gid, 6.06)
		sent, end, err = play(t, x, latClient(gid, true), false)
		if err != nil || end.Kind != StepDone || x.Test() != "read_lat" {
			t.Fatalf("read_lat, gid %v: step %d, test %q: %v", gid, end.Kind, x.Test(), err)
		}
		if _, ok := x.Report(); ok {
			t.Error("read_lat: a report")
		}
		sameSent(t, "read_lat", sent, answers(gid, 1, 2, false))
	}
}

// A peer before 5.33 sends the report's iterations in 4 bytes.
func TestServerOldPeerReport(t *testing.T) {
	in := bwClient(true, 1, false)
	key := KeySizeGID
	in = append(in[:4*key], append(bytes.Join(testReport.Encode(5.32), nil), keys(true, clientKey(0, false))...)...)
	x := NewServer(true, 5.32)
	if _, end, err := play(t, x, in, true); err != nil || end.Kind != StepDone {
		t.Fatalf("stopped at step %d: %v", end.Kind, err)
	}
	if rep, _ := x.Report(); rep != testReport {
		t.Fatalf("report %+v", rep)
	}
}

// Anything but perftest's order, and bytes that are not its messages, are refused with
// an error that names the message the exchange waited for and what was wrong with it.
func TestServerRefusals(t *testing.T) {
	k := func(i int) Dest { return clientKey(i, false) }
	r := func(i int) Dest { return clientKey(i, true) }
	other := k(0)
	other.PSN++
	nan := testReport
	nan.MsgRate = math.NaN()
	garbage := bytes.Repeat([]byte{'z'}, KeySizeGID)
	for _, tc := range []struct {
		name  string
		in    []byte
		sent  int
		where string
		want  string
	}{
		{"QP 1 twice in round one", keys(true, k(0), k(1), k(1)), 2, "first round (2 QP so far)", "QP number 0x101 twice in the first round: not perftest's order"},
		{"round two out of order", keys(true, k(0), k(1), k(0), k(0)), 3, "second round (QP 1's)", "key message 2 of round 2 is not QP 1's again: not perftest's order"},
		{"round two's QP 0 changed", keys(true, k(0), other), 1, "second round (QP 0's)", "key message 1 of round 2 is not QP 0's again"},
		{"barrier not QP 0's", keys(true, k(0), k(1), k(0), k(1), k(1)), 4, "barrier", "key message 1 of round 3 is not QP 0's again"},
		{"latency client of 2 QPs", keys(true, k(0), k(0), k(1)), 2, "barrier", "a latency client with more than one QP (-q)"},
		{"fourth key not QP 0's", keys(true, k(0), k(0), k(0), other), 3, "the client's run", "the client's fourth key message is not its first QP's"},
		{"end barrier not QP 0's", keys(true, k(0), k(1), k(0), k(1), k(0), k(1)), 5, "the client's run", "the client's end barrier is not its first QP's key message"},
		{"read_lat's closing key changed", append(keys(true, r(0), r(0), r(0), r(0)), other.Marshal(true)...), 4, "read_lat's closing key message", "the client's closing key message is not its QP's"},
		{"bad bytes for a key", garbage, 0, "first round (0 QP so far)", "key message \"zzzz"},
		{"a LID form key to a GID server", append(k(0).Marshal(false), make([]byte, KeySizeGID-KeySize)...), 0, "first round", "want 24 (a GID form)"},
		{"bad bytes at the close", append(bwClient(true, 1, false)[:4*KeySizeGID+40], garbage...), 9, "the closing barrier", "is not NUL-terminated"},
		// The report's last piece is answered before it is judged, as perftest
		// exchanges each piece.
		{"a NaN rate", append(bwClient(true, 1, false)[:4*KeySizeGID], reportBytes(nan)...), 9, "", "bandwidth report with a negative or non-finite rate"},
	} {
		x := NewServer(true, 6.06)
		sent, end, err := play(t, x, tc.in, true)
		if err == nil || end.Kind == StepDone || x.Next().Kind != StepFailed || x.Err() != err {
			t.Fatalf("%s: accepted (step %d, %v)", tc.name, end.Kind, err)
		}
		if !strings.Contains(err.Error(), tc.where) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q, want %q naming %q", tc.name, err, tc.want, tc.where)
		}
		if len(sent) != tc.sent {
			t.Errorf("%s: %d messages sent before the refusal, want %d", tc.name, len(sent), tc.sent)
		}
	}
}

// A client that hangs up anywhere (between messages or inside one) ends the exchange
// with an error naming the message it left in and how far.
func TestServerHangup(t *testing.T) {
	full := bwClient(true, 2, false)
	for cut := 0; cut < len(full); cut++ {
		x := NewServer(true, 6.06)
		_, _, err := play(t, x, full[:cut], true)
		if err == nil || !strings.Contains(err.Error(), "the client hung up after") {
			t.Fatalf("cut at %d of %d bytes: %v", cut, len(full), err)
		}
	}
	for _, tc := range []struct {
		cut  int
		want string
	}{
		{0, "the key messages' first round (0 QP so far): the client hung up after 0 of 108 bytes"},
		{3*KeySizeGID + 5, "the key messages' second round (QP 1's): the client hung up after 5 of 108 bytes"},
		{4 * KeySizeGID, "the barrier after the key messages: the client hung up after 0 of 108 bytes"},
		{5 * KeySizeGID, "the client's run (then QP 0's key message): the client hung up after 0 of 108 bytes"},
		{6*KeySizeGID + 20, "the bandwidth report, piece 3 of 5: the client hung up after 4 of 8 bytes"},
		{6*KeySizeGID + 40, "the closing barrier: the client hung up after 0 of 108 bytes"},
	} {
		_, _, err := play(t, NewServer(true, 6.06), full[:tc.cut], true)
		if err == nil || err.Error() != tc.want {
			t.Errorf("cut at %d: %v, want %q", tc.cut, err, tc.want)
		}
	}
	// read_lat's closing key, cut after its first 8 bytes.
	in := latClient(false, true)
	if _, _, err := play(t, NewServer(false, 6.06), in[:4*KeySize+8], false); err == nil ||
		err.Error() != "read_lat's closing key message: the client hung up after 0 of 51 bytes" {
		t.Errorf("read_lat's close: %v", err)
	}
	// The driver's read failed (the connection's error): Fail names where, and keeps it.
	x := NewServer(true, 6.06)
	x.Feed(clientKey(0, false).Marshal(true))
	x.Added(serverKey(0))
	err := x.Fail(io.EOF)
	if !errors.Is(err, io.EOF) || err.Error() != "the key messages' first round (1 QP so far): EOF" || x.Next().Kind != StepFailed {
		t.Errorf("Fail: %v", err)
	}
}

// The driver's steps out of turn are refused, not obeyed.
func TestServerDriverOutOfTurn(t *testing.T) {
	x := NewServer(true, 6.06)
	if err := x.Added(serverKey(0)); err == nil {
		t.Error("a QP added before any key message")
	}
	x = NewServer(true, 6.06)
	if err := x.Written(true); err == nil {
		t.Error("Written before the run")
	}
	x = NewServer(true, 6.06)
	if err := x.Feed(clientKey(0, false).Marshal(true)); err != nil || x.Next().Kind != StepNewQP {
		t.Fatalf("a new QP's key: %v", err)
	}
	if err := x.Feed(clientKey(1, false).Marshal(true)); err == nil || !strings.Contains(err.Error(), "bytes fed where the exchange does not read") {
		t.Errorf("bytes fed where a QP was asked for: %v", err)
	}
	x = NewServer(true, 6.06)
	x.Feed(clientKey(0, false).Marshal(true))
	x.Next()
	x.Added(serverKey(0))
	if err := x.Feed(clientKey(0, false).Marshal(true)); err == nil {
		t.Error("bytes fed before the answer was sent")
	}
}

// The report's pieces for a peer of 6.06 are all 8 bytes: the test's offsets above
// rely on it.
func TestServerReportPieces(t *testing.T) {
	for _, n := range ReportSizes(6.06) {
		if n != 8 {
			t.Fatal(ReportSizes(6.06))
		}
	}
	if b := reportBytes(testReport); binary.BigEndian.Uint64(b) != 65536 {
		t.Fatalf("report %x", b)
	}
}
