// Package locks holds Queuety's locks table as its middleware uses it:
// the named locks of WithoutOverlapping and UniqueJob (Acquire, Release)
// and the exception counters of ThrottlesExceptions (Count, Increment).
// It reads and writes the same rows as Queuety PHP, so Go and PHP
// middleware respect each other's locks.
//
// A Service is built by New from a driver.Store and a clock; the engine
// builds one in its constructor and serves it through Engine.Locks,
// which package middleware calls. Each call is one transaction.
package locks
