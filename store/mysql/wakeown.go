package mysql

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
)

// A send leaves the store's own listeners alone (see wake.go): the engine
// wakes its own process's workers in-process as it commits, and a send
// that found only them found no other process, so the quiet rule holds
// back the sends of a process that works alone. The clients of one
// process opened on the same DSN wake one another's workers in-process
// too (the engine's wake key), so their stores share one token
// (ShareWake): the sends of one leave the listeners of all alone. Stores
// given no key, or another, have a token of their own.
//
// A listener carries its store's token in its statement's text (wakeSQL),
// so a send knows its own listeners from the text it reads with their
// ids, on whichever server they run: no server name, connection id or
// clock tells them apart, so two servers that look alike (Galera nodes
// sharing a host name, port and server id), or a server restarted with
// its connection ids counting from the start again, make no other
// process's listener pass for the store's own.

// tokenBytes is the size of a token in random bytes; it is written as
// twice as many hex digits.
const tokenBytes = 16

// sharedTokens are the process's tokens by wake key.
var sharedTokens sync.Map // string -> string

// newToken returns a new random token.
func newToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// ShareWake implements driver.WakeSharer: the store's own listeners are
// those of every store of the process given the same key. It is called
// before the store notifies or listens.
func (s *Store) ShareWake(key string) {
	token, _ := sharedTokens.LoadOrStore(key, newToken())
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	s.wake.token = token.(string)
}

// ownToken returns the token of the store's own listeners.
func (s *Store) ownToken() string {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	if s.wake.token == "" {
		s.wake.token = newToken()
	}
	return s.wake.token
}

// wakeSQL is the statement of a listener of the tables whose listeners
// run head (listenSQL), for the stores of token.
func wakeSQL(head, token string) string {
	return head + ", '" + token + "' AS listener"
}

// listenerToken returns the token of a listener running info, a
// statement that starts with head; ok is false when info is no
// listener's statement. A listener of a release before tokens runs head
// alone: it has the empty token, which no store has.
func listenerToken(head, info string) (token string, ok bool) {
	rest, found := strings.CutPrefix(info, head)
	if !found {
		return "", false
	}
	if rest == "" {
		return "", true
	}
	rest, found = strings.CutPrefix(rest, ", '")
	if !found {
		return "", false
	}
	token, found = strings.CutSuffix(rest, "' AS listener")
	if !found || len(token) != 2*tokenBytes {
		return "", false
	}
	if _, err := hex.DecodeString(token); err != nil {
		return "", false
	}
	return token, true
}
