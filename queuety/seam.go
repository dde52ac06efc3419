package queuety

import (
	"context"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The module's own packages (the worker, the CLI, the conformance suite)
// reach a Client's engine and store, and a Registry's functions, through
// internal/clientseam and engine.OfClient rather than through exported
// identifiers.
func init() {
	engine.OfClient = func(c any) *engine.Engine { return c.(*Client).engine }
	clientseam.StoreOf = func(c any) driver.Store { return c.(*Client).store }
	clientseam.NewClient = func(s driver.Store, opts ...any) any {
		all := make([]Option, len(opts))
		for i, o := range opts {
			all[i] = o.(Option)
		}
		return newClient(s, newConfig(all))
	}
	clientseam.Functions = func(r any) engine.Functions { return registryFuncs{r.(*Registry)} }
}

// registryFuncs hands the engine the reducers and repeat conditions of a
// Registry, in the engine's form.
type registryFuncs struct{ r *Registry }

// Reducer returns the for-each reducer registered for name.
func (f registryFuncs) Reducer(name string) (engine.ReducerFunc, bool) {
	fn, ok := f.r.Reducer(name)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, state engine.State, result queuetytype.ForEachResult) (engine.State, error) {
		return fn(ctx, state, result)
	}, true
}

// RepeatCondition returns the repeat condition registered for name.
func (f registryFuncs) RepeatCondition(name string) (engine.ConditionFunc, bool) {
	fn, ok := f.r.RepeatCondition(name)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, state engine.State) (bool, error) { return fn(ctx, state) }, true
}
