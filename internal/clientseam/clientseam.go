// Package clientseam is the one place where the packages of this module
// reach what package queuety keeps off its public API: the engine and the
// store a *queuety.Client runs on, its clock, a Client around a store that
// is already open, and a *queuety.Registry's functions in the engine's
// form. The worker, the sweeper, the middleware, the CLI, the benchmarks
// and the conformance suite get them here and nowhere else.
//
// Why a hook: a Go package cannot read another package's unexported
// fields, and queuety does not export its engine (that would put
// internal/engine in its public API). This package cannot import queuety
// either (queuety imports it), so queuety hands it the unwrapping
// functions once, in an init function, through Install. Everything below
// calls them. Because the Client's type lives in queuety, the accessors
// take it as any; handed anything that is not a *queuety.Client (or
// *queuety.Registry), they panic with a message naming the accessor and
// the type they got.
//
// Applications open a Client with queuety.Open, by DSN; a store written
// outside this module registers a driver under its own scheme
// (driver.Register) and is opened the same way.
package clientseam

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// Hooks are the functions package queuety installs to unwrap its own
// types. Each reports ok false for a value of any other type.
type Hooks struct {
	// Client returns the engine and the store of a *queuety.Client.
	Client func(client any) (e *engine.Engine, s driver.Store, ok bool)
	// Registry returns a *queuety.Registry's reducers and repeat
	// conditions in the engine's form.
	Registry func(registry any) (f engine.Functions, ok bool)
	// NewClient returns a *queuety.Client around an open store with opts
	// applied; ok is false, and the client nil, when an opt is not a
	// queuety.Option (bad names its index).
	NewClient func(s driver.Store, opts []any) (client any, bad int, ok bool)
}

var hooks *Hooks

// Install sets the hooks. Package queuety calls it once, in an init
// function; a second call panics.
func Install(h Hooks) {
	if hooks != nil {
		panic("clientseam: Install called twice")
	}
	hooks = &h
}

func installed(accessor string) *Hooks {
	if hooks == nil {
		panic("clientseam." + accessor + ": package queuety has not installed its hooks")
	}
	return hooks
}

func unwrapClient(accessor string, client any) (*engine.Engine, driver.Store) {
	e, s, ok := installed(accessor).Client(client)
	if !ok {
		panic(fmt.Sprintf("clientseam.%s: want a non-nil *queuety.Client, got %T", accessor, client))
	}
	return e, s
}

// Engine returns the engine of a *queuety.Client.
func Engine(client any) *engine.Engine {
	e, _ := unwrapClient("Engine", client)
	return e
}

// StoreOf returns the store a *queuety.Client runs on.
func StoreOf(client any) driver.Store {
	_, s := unwrapClient("StoreOf", client)
	return s
}

// Clock returns the clock of a *queuety.Client (queuety.WithClock; the
// system clock by default).
func Clock(client any) engine.Clock {
	e, _ := unwrapClient("Clock", client)
	return e.Clock()
}

// Functions returns the reducers and repeat conditions of a
// *queuety.Registry, in the engine's form. It reads the registry when
// called on, so functions registered later are seen.
func Functions(registry any) engine.Functions {
	f, ok := installed("Functions").Registry(registry)
	if !ok {
		panic(fmt.Sprintf("clientseam.Functions: want a non-nil *queuety.Registry, got %T", registry))
	}
	return f
}

// NewClient returns a *queuety.Client (as any) around an open store, with
// opts (each a queuety.Option) applied. It does not migrate the store;
// closing the Client closes it.
func NewClient(s driver.Store, opts ...any) any {
	c, bad, ok := installed("NewClient").NewClient(s, opts)
	if !ok {
		panic(fmt.Sprintf("clientseam.NewClient: option %d is a %T, want a queuety.Option", bad, opts[bad]))
	}
	return c
}
