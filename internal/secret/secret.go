// Package secret holds the rules the UI and the metrics endpoint apply to
// the tokens and passwords they are given: how strong one must be, and
// how it is compared.
package secret

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// MinChars and MinBits are what a token or password needs: this many
// characters, and this many bits by a crude estimate (its length times
// log2 of its number of distinct characters), which refuses a few
// characters repeated. A random hex string of 16 characters passes.
const (
	MinChars = 16
	MinBits  = 48
)

// Check says what is wrong with a token or password named what, or
// returns nil. The error never contains the secret.
func Check(what, v string) error {
	n := utf8.RuneCountInString(v)
	switch {
	case strings.TrimSpace(v) != v:
		return fmt.Errorf("%s starts or ends with whitespace", what)
	case n < MinChars:
		return fmt.Errorf("%s has %d characters, want at least %d (a random one: openssl rand -hex 16)", what, n, MinChars)
	}
	distinct := map[rune]bool{}
	for _, r := range v {
		distinct[r] = true
	}
	if float64(n)*math.Log2(float64(len(distinct))) < MinBits {
		return fmt.Errorf("%s repeats too few characters (%d distinct in %d) to be hard to guess: use a random one (openssl rand -hex 16)",
			what, len(distinct), n)
	}
	return nil
}

// Equal compares a secret in constant time, in its length too: both sides
// are hashed first.
func Equal(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
