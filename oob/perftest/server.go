package perftest

import (
	"errors"
	"fmt"
)

// Server is a perftest server's side of the conversation after the MTU, as a state
// machine: what each of the client's messages is, which state comes next, what to
// answer and what is not perftest's exchange. It does no I/O and holds no resources:
// its driver reads what Next asks for and Feeds it, creates the QPs it is told of,
// looks at their buffers when asked, and writes what it is given.
//
// perftest 6.06's client does not say which test it runs; the server tells from the
// exchange itself:
//   - the QPs: one per new QP number in the key messages (a QP number seen again
//     starts the second round);
//   - the op: a client that offers more than one outstanding READ runs a READ test;
//   - bandwidth or latency, for one QP: a latency client sends one key message more
//     before its run. Its fourth arrives at once; a bandwidth client's comes after its
//     run. A WRITE bandwidth client has written into the buffer by then (StepWritten
//     asks); a READ one then sends its report, where a read_lat client sends a key
//     message.
//
// The client's messages, after the MTU: round one, each QP's key in turn (a new QP
// number each); round two, the same QPs in the same order; then QP 0's barrier. Then
// its run, and QP 0's key (a latency client's fourth, at once; a bandwidth client's
// end barrier, after its run). Then a bandwidth client's report and its closing
// barrier; read_lat's closing key message; write_lat's server plays the rounds.
// Anything else is refused, so that a client cannot hold the port.
type Server struct {
	gid   bool
	sizes []int // the bandwidth report's pieces, for the peer's version
	ph    phase
	err   error
	// The QPs: the client's keys and this side's, in the client's order.
	rem, mine   []Dest
	round, next int // the key rounds: 1, 2, 3 (the barrier); the QP expected next
	// A pending answer, Next's before anything else.
	out     []byte
	outWhat string
	pieces  [][]byte
	report  BWReport
	// What is known of the test: the barrier passed, the report read, the test's name
	// once told apart from a bandwidth test.
	barrier, reported bool
	test              string
}

type phase int

const (
	phKeys     phase = iota // the key rounds
	phNewQP                 // a new QP's key: waiting for Added
	phRun                   // after the barrier: the client's run, then QP 0's key
	phWritten               // one WRITE QP: waiting for Written
	phEnd                   // one READ QP: read_bw's report or read_lat's key
	phLatKey                // read_lat's closing key message, after its first 8 bytes
	phReport                // the bandwidth report's pieces
	phClose                 // the closing barrier
	phWriteLat              // write_lat: the rounds are the driver's
	phDone                  // "done" and close
	phFailed
)

// StepKind is what a Step asks of the driver.
type StepKind int

const (
	// StepRead: read N bytes (What names them) and Feed them; Long: the client's run
	// comes first, so the wait is the test's length, not an exchange's.
	StepRead StepKind = iota
	// StepSend: write Msg (What names it).
	StepSend
	// StepNewQP: create a QP connected to the client's key Dest and give its own key
	// to Added.
	StepNewQP
	// StepWritten: say with Written whether the client has written into QP 0's buffer.
	StepWritten
	// StepWriteLat: the client runs ib_write_lat; the server plays its rounds, and the
	// exchange is over.
	StepWriteLat
	// StepDone: send "done" and close; the exchange is over.
	StepDone
	// StepFailed: the exchange failed (Err says why).
	StepFailed
)

// Step is the driver's next action.
type Step struct {
	Kind StepKind
	What string
	N    int
	Long bool
	Msg  []byte
	Dest Dest
}

// NewServer is the machine for a client whose key messages have the GID form when gid,
// and whose version (Conn.Peer) is peer.
func NewServer(gid bool, peer float64) *Server {
	return &Server{gid: gid, sizes: ReportSizes(peer), round: 1}
}

func (x *Server) keySize() int {
	if x.gid {
		return KeySizeGID
	}
	return KeySize
}

// Next is the driver's next step. A StepSend is handed out once: Next moves past it.
func (x *Server) Next() Step {
	if x.out != nil {
		s := Step{Kind: StepSend, What: x.outWhat, Msg: x.out}
		x.out = nil
		return s
	}
	return x.want()
}

// want is what the machine waits for, the answer to send aside.
func (x *Server) want() Step {
	switch x.ph {
	case phKeys:
		return Step{Kind: StepRead, What: "keys", N: x.keySize()}
	case phNewQP:
		return Step{Kind: StepNewQP, Dest: x.rem[len(x.rem)-1]}
	case phRun:
		return Step{Kind: StepRead, What: "the client's run", N: x.keySize(), Long: true}
	case phWritten:
		return Step{Kind: StepWritten}
	case phEnd:
		return Step{Kind: StepRead, What: "the client's end", N: 8, Long: true}
	case phLatKey:
		return Step{Kind: StepRead, What: "the client's end", N: x.keySize() - 8}
	case phReport:
		return Step{Kind: StepRead, What: "bandwidth report", N: x.sizes[len(x.pieces)]}
	case phClose:
		return Step{Kind: StepRead, What: "close", N: x.keySize()}
	case phWriteLat:
		return Step{Kind: StepWriteLat}
	case phDone:
		return Step{Kind: StepDone}
	}
	return Step{Kind: StepFailed}
}

// Err is why the exchange failed, nil while it has not.
func (x *Server) Err() error { return x.err }

// Test is what the client runs, as far as the exchange has told: "setup" until its
// barrier, then "write_bw, 2 QP" and the like, "read_lat" or "write_lat".
func (x *Server) Test() string {
	switch {
	case x.test != "":
		return x.test
	case !x.barrier:
		return "setup"
	}
	return fmt.Sprintf("%s_bw, %d QP", map[bool]string{true: "read", false: "write"}[x.read()], len(x.rem))
}

// Report is a bandwidth client's report, once read.
func (x *Server) Report() (BWReport, bool) { return x.report, x.reported }

// QPs is how many QPs the client has announced.
func (x *Server) QPs() int { return len(x.rem) }

func (x *Server) read() bool { return x.rem[0].OutReads > 1 }

func (x *Server) fail(err error) error {
	x.ph, x.err, x.out = phFailed, err, nil
	return err
}

// Fail ends the exchange on the driver's error (a read or a write that failed, a QP it
// could not create), naming where the exchange was.
func (x *Server) Fail(err error) error {
	if x.ph == phFailed {
		return x.err
	}
	return x.fail(fmt.Errorf("%s: %w", x.where(), err))
}

// where names the message the exchange waits for.
func (x *Server) where() string {
	switch x.ph {
	case phKeys:
		switch x.round {
		case 1:
			return fmt.Sprintf("the key messages' first round (%d QP so far)", len(x.rem))
		case 2:
			return fmt.Sprintf("the key messages' second round (QP %d's)", x.next)
		}
		return "the barrier after the key messages"
	case phNewQP:
		return fmt.Sprintf("QP %d, new in the first round", len(x.rem)-1)
	case phRun, phWritten:
		return "the client's run (then QP 0's key message)"
	case phEnd:
		return "the client's end (read_bw's report or read_lat's closing key message)"
	case phLatKey:
		return "read_lat's closing key message"
	case phReport:
		return fmt.Sprintf("the bandwidth report, piece %d of %d", len(x.pieces)+1, len(x.sizes))
	case phClose:
		return "the closing barrier"
	}
	return "the end of the exchange"
}

// Feed gives the machine the bytes its StepRead asked for. Fewer bytes mean the client
// hung up after them.
func (x *Server) Feed(b []byte) error {
	if x.ph == phFailed {
		return x.err
	}
	st := x.want()
	if st.Kind != StepRead || x.out != nil {
		return x.fail(fmt.Errorf("%s: bytes fed where the exchange does not read (step %d, an answer unsent %v)", x.where(), st.Kind, x.out != nil))
	}
	if len(b) != st.N {
		if len(b) < st.N {
			return x.fail(fmt.Errorf("%s: the client hung up after %d of %d bytes", x.where(), len(b), st.N))
		}
		return x.fail(fmt.Errorf("%s: fed %d bytes, want %d", x.where(), len(b), st.N))
	}
	var err error
	switch x.ph {
	case phKeys, phRun, phClose:
		var d Dest
		if d, err = ParseDest(b, x.gid); err == nil {
			err = x.key(d)
		}
	case phEnd:
		err = x.end(b)
	case phLatKey:
		err = x.latKey(b)
	case phReport:
		err = x.piece(b)
	}
	if err != nil {
		return x.fail(fmt.Errorf("%s: %w", x.where(), err))
	}
	return nil
}

func (x *Server) answer(q int) {
	x.out, x.outWhat = x.mine[q].Marshal(x.gid), "keys"
}

// key is a key message in the rounds, after the run or at the close.
func (x *Server) key(d Dest) error {
	switch x.ph {
	case phRun:
		return x.run(d)
	case phClose:
		x.answer(0) // perftest's closing barrier: any key message
		x.ph = phDone
		return nil
	}
	if x.round == 3 && len(x.rem) == 1 && d != x.rem[0] && d.QPN != x.rem[0].QPN {
		// A latency client opens with QP 0's key once more: what looked like round
		// two was its first round, and this is its second QP.
		return errors.New("a latency client with more than one QP (-q): perftest's latency tests are served with one; run the client with -q 1")
	}
	if x.round == 1 && len(x.rem) > 0 && d.QPN == x.rem[0].QPN {
		x.round, x.next = 2, 0 // round two begins: QP 0 again
	}
	if x.round == 1 {
		for _, r := range x.rem {
			if r.QPN == d.QPN {
				return fmt.Errorf("QP number %#x twice in the first round: not perftest's order", d.QPN)
			}
		}
		x.rem = append(x.rem, d)
		x.ph = phNewQP
		return nil
	}
	if x.next >= len(x.rem) || d != x.rem[x.next] {
		return fmt.Errorf("key message %d of round %d is not QP %d's again: not perftest's order", x.next+1, x.round, x.next)
	}
	x.answer(x.next)
	switch {
	case x.round == 3:
		x.ph, x.barrier = phRun, true
	case x.next+1 == len(x.rem):
		x.round, x.next = 3, 0
	default:
		x.next++
	}
	return nil
}

// Added is the key of the QP StepNewQP asked for, which the machine answers with.
func (x *Server) Added(mine Dest) error {
	if x.ph != phNewQP {
		return x.fail(fmt.Errorf("%s: a QP added where none was asked for", x.where()))
	}
	x.mine = append(x.mine, mine)
	x.answer(len(x.mine) - 1)
	x.ph = phKeys
	return nil
}

// run is QP 0's key after the barrier: a latency client's fourth (at once) or a
// bandwidth client's end barrier (after its run).
func (x *Server) run(d Dest) error {
	if len(x.rem) > 1 {
		if d != x.rem[0] {
			return errors.New("the client's end barrier is not its first QP's key message")
		}
		x.answer(0)
		x.ph = phReport // several QPs: bandwidth
		return nil
	}
	if d != x.rem[0] {
		return errors.New("the client's fourth key message is not its first QP's")
	}
	if x.read() {
		x.answer(0)
		x.ph = phEnd
		return nil
	}
	x.ph = phWritten
	return nil
}

// Written says whether the client has written into QP 0's buffer by its fourth key
// message: a write_bw client has; a write_lat client waits for the server's first
// message.
func (x *Server) Written(w bool) error {
	if x.ph != phWritten {
		return x.fail(fmt.Errorf("%s: told of the buffer where the exchange does not ask", x.where()))
	}
	x.answer(0)
	x.ph = phReport
	if !w {
		x.ph, x.test = phWriteLat, "write_lat"
	}
	return nil
}

// end is the first 8 bytes after a READ client's run: read_bw's report's size (its top
// byte 0, big-endian) or read_lat's closing key message's text.
func (x *Server) end(b []byte) error {
	if b[0] != 0 {
		x.pieces = [][]byte{b}
		x.ph = phLatKey
		return nil
	}
	x.ph = phReport
	return x.piece(b)
}

func (x *Server) latKey(rest []byte) error {
	d, err := ParseDest(append(x.pieces[0], rest...), x.gid)
	if err != nil {
		return err
	}
	if d != x.rem[0] {
		return errors.New("the client's closing key message is not its QP's")
	}
	x.pieces = nil
	x.answer(0)
	x.ph, x.test = phDone, "read_lat"
	return nil
}

// piece is one of the report's pieces, which the server answers with zeros (it
// measured nothing).
func (x *Server) piece(b []byte) error {
	x.pieces = append(x.pieces, b)
	x.out, x.outWhat = make([]byte, len(b)), "bandwidth report"
	if len(x.pieces) < len(x.sizes) {
		return nil
	}
	r, err := ParseBWReport(x.pieces)
	if err != nil {
		// The last piece is answered all the same (each piece is an exchange): the
		// failure comes after it.
		x.ph, x.err = phFailed, err
		return nil
	}
	x.report, x.reported, x.ph = r, true, phClose
	return nil
}
