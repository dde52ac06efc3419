package advance

import (
	"context"

	"github.com/queuety/queuety-go/queuetytype"
)

// ReducerFunc turns a settled for-each aggregate into the keys to merge
// into the workflow state.
type ReducerFunc func(ctx context.Context, state map[string]any, result queuetytype.ForEachResult) (map[string]any, error)

// ConditionFunc decides a repeat step from the workflow's public state.
type ConditionFunc func(ctx context.Context, state map[string]any) (bool, error)

// Functions looks up the user functions the engine calls while it records
// a step's result: for-each reducers and repeat conditions. A worker
// passes its own with each result.
type Functions interface {
	Reducer(name string) (ReducerFunc, bool)
	RepeatCondition(name string) (ConditionFunc, bool)
}
