package engine

import "github.com/queuety/queuety-go/internal/locks"

// Locks returns the named locks and exception counters of e's store, as
// Queuety's middleware keeps them in its locks table (package
// internal/locks).
func (e *Engine) Locks() *locks.Service { return e.locks }

// checkLockKey checks that key fits the locks table (see locks.CheckKey).
func checkLockKey(key string) error { return locks.CheckKey(key) }
