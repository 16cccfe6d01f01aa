package oob

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"strconv"
	"time"
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
