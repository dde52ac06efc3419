package engine

import "context"

// ReducerFunc turns a settled for-each aggregate into the keys to merge
// into the workflow state.
type ReducerFunc func(ctx context.Context, state State, result ForEachResult) (State, error)

// ConditionFunc decides a repeat step from the workflow's public state.
type ConditionFunc func(ctx context.Context, state State) (bool, error)

// Functions looks up the user functions the engine calls while it records
// a step's result: for-each reducers and repeat conditions. A worker
// passes its own with each Result.
type Functions interface {
	Reducer(name string) (ReducerFunc, bool)
	RepeatCondition(name string) (ConditionFunc, bool)
}
