package report

import (
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/result"
)

// VirtualTime is what every report says, once, where it shows a result measured on a
// virtual clock (result.Result.VirtualClock: the test bed's qemu -icount guest, whose
// time counts instructions).
const VirtualTime = "virtual time: figures describe Soft-RoCE's CPU path at a fixed instruction rate, not a NIC or this host's speed"

// VirtualClock says whether any of rs was measured on a virtual clock.
func VirtualClock(rs []result.Result) bool {
	for _, r := range rs {
		if r.VirtualClock() {
			return true
		}
	}
	return false
}

// VirtualClock says whether the tuned report's runs were timed on a virtual clock: its
// client's or its server's host keeps virtual time.
func (t Tuned) VirtualClock() bool { return t.Client.VirtualClock() || t.Server.VirtualClock() }

// virtualTimeAbove writes VirtualTime where a report in f starts, when virtual: first,
// above a boxed table (or perftest's). A plain report says it under its tables
// (virtualTimeUnder): nothing comes above a plain header.
func virtualTimeAbove(w io.Writer, f Format, virtual bool) {
	if virtual && f != FormatPlain {
		fmt.Fprintln(w, VirtualTime)
	}
}

// virtualTimeUnder writes VirtualTime under a plain report, when virtual: a line that
// starts with words and a colon, as the lines under a plain table do.
func virtualTimeUnder(w io.Writer, f Format, virtual bool) {
	if virtual && f == FormatPlain {
		fmt.Fprintln(w, VirtualTime)
	}
}

// ClockMismatch says why a result (or run) a and one b are not compared when one was
// measured on a virtual clock and the other not: "not comparable: a was measured on a
// virtual clock (qemu icount), b on a real or unknown clock". "" where both were
// measured on a virtual clock, or neither.
func ClockMismatch(a string, aVirtual bool, b string, bVirtual bool) string {
	if aVirtual == bVirtual {
		return ""
	}
	return fmt.Sprintf("not comparable: %s was measured on %s, %s on %s", a, clockName(aVirtual), b, clockName(bVirtual))
}

// clockName names the clock a result was measured on.
func clockName(virtual bool) string {
	if virtual {
		return "a virtual clock (qemu icount)"
	}
	return "a real or unknown clock"
}

// notComparableClock is the change cell of a result measured on another clock than
// the one it would be compared with.
const notComparableClock = "not comparable: clock domain differs"
