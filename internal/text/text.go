// Package text makes text that came from a peer or a file safe to print: in a log
// line, a terminal table, an HTML page's caption. Both the protocol (oob, bench, fleet)
// and the readers (report) use it, so it depends on nothing of theirs.
package text

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote makes a peer-supplied name safe for a log line: quoted, control characters
// escaped, at most 80 bytes of it.
func Quote(s string) string { return strconv.Quote(truncate(s, 80)) }

// Clean makes a peer-supplied text safe to print: control characters escaped (so that
// it cannot start a new line), at most n bytes of it.
func Clean(s string, n int) string {
	var b strings.Builder
	for _, r := range truncate(s, n) {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncate cuts s, made valid UTF-8, to at most n bytes on a rune boundary, and says
// how much it cut.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "... (" + strconv.Itoa(len(s)-cut) + " more bytes)"
}
