package oob

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Authentication is a challenge-response over HMAC-SHA256, so that the token never
// crosses the wire and each side proves that it knows it:
//
//	client -> hello                    (no secret)
//	server -> challenge{nonce S}       (only when the server has a token)
//	client -> auth{nonce C, Proof(token, "client", S, C)}
//	server -> hello{Proof(token, "server", S, C)}
//
// A replayed auth fails against a fresh S; the server's proof, over the client's fresh
// C, cannot be replayed to a client either.

// NonceBytes is the length of each side's nonce.
const NonceBytes = 32

// NewNonce returns NonceBytes random bytes.
func NewNonce() []byte {
	b := make([]byte, NonceBytes)
	if _, err := rand.Read(b); err != nil {
		panic("oob: no randomness: " + err.Error())
	}
	return b
}

// Proof is what role ("client" or "server") sends to show it knows token.
func Proof(token, role string, serverNonce, clientNonce []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("rdmabench v" + strconv.Itoa(Version) + " " + role + "\x00"))
	m.Write(serverNonce)
	m.Write(clientNonce)
	return m.Sum(nil)
}

// Verify says whether proof is role's proof of token, in constant time.
func Verify(proof []byte, token, role string, serverNonce, clientNonce []byte) bool {
	return hmac.Equal(proof, Proof(token, role, serverNonce, clientNonce))
}

// BeatInterval is how often a measuring client tells the server it is alive; a server
// that hears nothing for max(its --timeout, 3 beats) takes the client for lost.
const BeatInterval = time.Second

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
