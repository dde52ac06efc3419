// Package clientseam gives the packages of this module what package
// queuety keeps off its public API: a Client around a store that is
// already open. Applications open a Client with queuety.Open, by DSN; a
// store written outside this module registers a driver under its own
// scheme (driver.Register) and is opened the same way.
package clientseam

import (
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/store/driver"
)

// NewClient returns a *queuety.Client (as any) around an open store, with
// opts (each a queuety.Option) applied. It does not migrate the store;
// closing the Client closes it. Package queuety sets it in an init
// function.
var NewClient func(s driver.Store, opts ...any) any

// StoreOf returns the store a *queuety.Client runs on. Package queuety
// sets it in an init function.
var StoreOf func(client any) driver.Store

// Functions returns the engine's view of a *queuety.Registry: the
// reducers and repeat conditions it holds, in the engine's form. Package
// queuety sets it in an init function.
var Functions func(registry any) engine.Functions
