package engine

import "context"

// For-each completion modes (Queuety's ForEachMode), stored as
// _steps[i].mode.
const (
	ForEachAll          = "all"
	ForEachFirstSuccess = "first_success"
	ForEachQuorum       = "quorum"
)

// Workflow wait modes (Queuety's WaitMode), stored as _steps[i].wait_mode.
const (
	WaitAll    = "all"
	WaitAny    = "any"
	WaitQuorum = "quorum"
)

// ForEachResult is the aggregate a settled for-each step stores under its
// result key, and what a reducer receives.
type ForEachResult struct {
	Mode      string // all, first_success or quorum
	Quorum    int    // the required successes in quorum mode, else 0
	Total     int    // items
	Succeeded int
	Failed    int
	// Winner is the first branch that succeeded, nil when none did.
	Winner *ForEachBranch
	// Results are the succeeded branches and Failures the failed ones,
	// both in item order.
	Results  []ForEachBranch
	Failures []ForEachFailure
}

// ForEachBranch is one succeeded for-each branch.
type ForEachBranch struct {
	Index  int
	Item   any
	Output State
	JobID  int64
}

// ForEachFailure is one for-each branch that failed for good.
type ForEachFailure struct {
	Index int
	Item  any
	Error string
	JobID int64
}

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
