package queuety_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func forEachFn(context.Context, queuety.State, any, int) (queuety.State, error) { return nil, nil }

func reducerFn(context.Context, queuety.State, queuetytype.ForEachResult) (queuety.State, error) {
	return queuety.State{"reduced": true}, nil
}

func conditionFn(context.Context, queuety.State) (bool, error) { return true, nil }

func TestRegistryForEachReducerCondition(t *testing.T) {
	r := queuety.NewRegistry()
	r.HandleStep("step", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	r.HandleForEach("branch", forEachFn)
	r.HandleReducer("reduce", reducerFn)
	r.HandleRepeatCondition("again", conditionFn)

	fns := clientseam.Functions(r)
	reduce, ok := fns.Reducer("reduce")
	require.True(t, ok, "reducer")
	out, err := reduce(context.Background(), nil, queuetytype.ForEachResult{})
	require.NoError(t, err)
	assert.Equal(t, true, out["reduced"])
	_, ok = fns.RepeatCondition("again")
	assert.True(t, ok, "repeat condition")
	_, ok = r.ForEach("branch")
	assert.True(t, ok, "for-each handler")

	_, ok = r.Reducer("branch")
	assert.False(t, ok, "a for-each handler is not a reducer")
	_, ok = r.ForEach("reduce")
	assert.False(t, ok, "a reducer is not a for-each handler")
	_, ok = r.RepeatCondition("missing")
	assert.False(t, ok)

	assert.Equal(t, []string{"branch", "step"}, r.Names(), "Names lists job handlers only")
}

func forEachItemFn(_ context.Context, item any, index int) (queuety.State, error) {
	return queuety.State{"item": item, "index": index}, nil
}

// TestRegistryForEachItem registers a for-each handler that takes no
// state: ForEachItem returns it, ForEach returns it behind a ForEachFunc
// that ignores the state, and Names lists it.
func TestRegistryForEachItem(t *testing.T) {
	r := queuety.NewRegistry()
	r.HandleForEachItem("item", forEachItemFn)
	r.HandleForEach("branch", forEachFn)
	fn, ok := r.ForEachItem("item")
	require.True(t, ok)
	out, err := fn(context.Background(), "x", 3)
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"item": "x", "index": 3}, out)
	each, ok := r.ForEach("item")
	require.True(t, ok)
	out, err = each(context.Background(), queuety.State{"items": []any{"x"}}, "x", 3)
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"item": "x", "index": 3}, out)
	_, ok = r.ForEachItem("branch")
	assert.False(t, ok, "a HandleForEach handler is not an item handler")
	assert.Equal(t, []string{"branch", "item"}, r.Names())
}

func TestRegistryPanics(t *testing.T) {
	tests := map[string]func(r *queuety.Registry){
		"empty for-each name":    func(r *queuety.Registry) { r.HandleForEach("", forEachFn) },
		"nil for-each":           func(r *queuety.Registry) { r.HandleForEach("x", nil) },
		"nil reducer":            func(r *queuety.Registry) { r.HandleReducer("x", nil) },
		"nil condition":          func(r *queuety.Registry) { r.HandleRepeatCondition("x", nil) },
		"reserved reducer":       func(r *queuety.Registry) { r.HandleReducer("__queuety_x", reducerFn) },
		"reserved condition":     func(r *queuety.Registry) { r.HandleRepeatCondition("__queuety_x", conditionFn) },
		"reducer named as step":  func(r *queuety.Registry) { r.HandleReducer("taken", reducerFn) },
		"for-each named as step": func(r *queuety.Registry) { r.HandleForEach("taken", forEachFn) },
		"nil for-each item":      func(r *queuety.Registry) { r.HandleForEachItem("x", nil) },
		"for-each item twice": func(r *queuety.Registry) {
			r.HandleForEach("f", forEachFn)
			r.HandleForEachItem("f", forEachItemFn)
		},
		"condition twice": func(r *queuety.Registry) {
			r.HandleRepeatCondition("c", conditionFn)
			r.HandleRepeatCondition("c", conditionFn)
		},
		"job named as reducer": func(r *queuety.Registry) {
			r.HandleReducer("red", reducerFn)
			r.HandleJob("red", func(context.Context, queuety.Payload) error { return nil })
		},
	}
	for name, register := range tests {
		t.Run(name, func(t *testing.T) {
			r := queuety.NewRegistry()
			r.HandleStep("taken", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
			assert.Panics(t, func() { register(r) })
		})
	}
}

// The engine reads the same reserved key the API names.
func TestTraceOutputKeyIsTheEngines(t *testing.T) {
	if queuety.TraceOutputKey != engine.TraceOutputKey {
		t.Fatalf("TraceOutputKey = %q, the engine reads %q", queuety.TraceOutputKey, engine.TraceOutputKey)
	}
}
