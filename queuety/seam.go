package queuety

import (
	"context"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The module's own packages (the worker, the sweeper, the middleware, the
// CLI, the conformance suite) reach a Client's engine and store, and a
// Registry's functions, through internal/clientseam rather than through
// exported identifiers; this installs the functions it unwraps them with.
func init() {
	clientseam.Install(clientseam.Hooks{
		Client: func(v any) (*engine.Engine, driver.Store, bool) {
			c, ok := v.(*Client)
			if !ok || c == nil {
				return nil, nil, false
			}
			return c.engine, c.store, true
		},
		Registry: func(v any) (engine.Functions, bool) {
			r, ok := v.(*Registry)
			if !ok || r == nil {
				return nil, false
			}
			return registryFuncs{r}, true
		},
		NewClient: func(s driver.Store, opts []any) (any, int, bool) {
			all := make([]Option, len(opts))
			for i, o := range opts {
				opt, ok := o.(Option)
				if !ok {
					return nil, i, false
				}
				all[i] = opt
			}
			return newClient(s, newConfig(all)), 0, true
		},
	})
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
