package storetest

// The for_each reducer scenarios: a reducer's result merged into the state,
// a failing, panicking or missing reducer failing the workflow, and a
// worker without the reducer deferring the branches.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuetytype"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("ForEach/Reducer", testForEachReducer)
	register("ForEach/ReducerErrorFailsWorkflow", testForEachReducerError)
	register("ForEach/ReducerPanicFailsWorkflow", testForEachReducerPanic)
	register("ForEach/ReducerNotRegistered", testForEachReducerMissing)
	register("ForEach/WorkerWithoutReducerDefers", testForEachReducerDefer)
}

func testForEachReducer(t *testing.T, e *Env) {
	b := builder.Workflow("squares").
		ForEach("nums", "square", builder.Reducer("sum_squares"), builder.ResultKey("sq")).
		Then("after")
	id := e.startB(b, queuety.State{"nums": []any{1, 2, 3}})
	var got []queuetytype.ForEachResult
	var sawAgg atomic.Bool
	w := e.Worker(nil)
	w.HandleForEach("square", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		n, _ := item.(int64)
		return queuety.State{"sq": n * n}, nil
	})
	w.HandleReducer("sum_squares", func(_ context.Context, s queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		got = append(got, r)
		_, ok := s["sq"].(map[string]any)
		sawAgg.Store(ok)
		var sum int64
		for _, b := range r.Results {
			v, _ := b.Output["sq"].(int64)
			sum += v
		}
		return queuety.State{"sum_of_squares": sum}, nil
	})
	var saw atomic.Value
	w.HandleStep("after", func(_ context.Context, s queuety.State) (queuety.State, error) {
		saw.Store(s["sum_of_squares"])
		return nil, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	require.Len(t, got, 1, "reducer calls")
	r := got[0]
	assert.Equal(t, "all", r.Mode, "mode")
	assert.Equal(t, 3, r.Total, "total")
	assert.Equal(t, 3, r.Succeeded, "succeeded")
	require.Len(t, r.Results, 3, "results")
	for i, b := range r.Results {
		assert.Equalf(t, i, b.Index, "results[%d] index order", i)
		assert.Equalf(t, int64(i+1), b.Item, "results[%d] item", i)
		assert.NotZerof(t, b.JobID, "results[%d] job id", i)
	}
	require.NotNil(t, r.Winner, "winner")
	assert.True(t, sawAgg.Load(), "the reducer's state holds the aggregate under the result key")
	st := e.State(id)
	assert.Equal(t, int64(14), st["sum_of_squares"], "reducer output merged")
	assert.Equal(t, int64(14), saw.Load(), "next step saw the reducer output")
	assert.Equal(t, int64(3), asMap(t, st["sq"], "aggregate")["succeeded"], "aggregate kept")
}

// reducerFailure runs a two-item for_each whose reducer is reg's
// "reduce" (or missing), recording the last branch by hand, and returns
// the workflow and the error Finish returned.
func (e *Env) reducerFailure(reg *queuety.Registry) (int64, *engine.Claimed, error) {
	e.T.Helper()
	b := builder.Workflow("reduced").ForEach("items", "branch", builder.Reducer("reduce"), builder.Retry(1)).Then("after")
	id := e.startB(b, queuety.State{"items": []any{"x", "y"}})
	e.expandForEach()
	br := e.branchesByIndex("branch", 2)
	require.NoError(e.T, e.finish(br[0], queuety.State{"v": 1}, nil, clientseam.Functions(reg)))
	done := make(chan error, 1)
	go func() { done <- e.finish(br[1], queuety.State{"v": 2}, nil, clientseam.Functions(reg)) }()
	select {
	case err := <-done:
		return id, br[1], err
	case <-time.After(30 * time.Second):
		require.FailNow(e.T, "recording the settling branch did not return")
	}
	return id, br[1], nil
}

// checkReducerFailed checks that a failing reducer failed the workflow
// with a message containing want, and that no later step ran.
func (e *Env) checkReducerFailed(id int64, last *engine.Claimed, finishErr error, want string) {
	t := e.T
	t.Helper()
	assert.NoError(t, finishErr, "recording a result whose reducer fails must not be a database error")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, want, "workflow error")
	assert.Equal(t, 0, wf.CurrentStep, "current step")
	j := e.Job(last.Job.ID)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "settling branch job")
	assert.Contains(t, j.ErrorMessage, want, "settling branch job error")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "after"}), "next step enqueued")
	_, has := e.State(id)["items_results"]
	assert.False(t, has, "aggregate merged although the reducer failed")
}

func testForEachReducerError(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleReducer("reduce", func(context.Context, queuety.State, queuetytype.ForEachResult) (queuety.State, error) {
		return nil, errors.New("ledger closed")
	})
	id, last, err := e.reducerFailure(reg)
	e.checkReducerFailed(id, last, err, "ledger closed")
}

func testForEachReducerPanic(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleReducer("reduce", func(context.Context, queuety.State, queuetytype.ForEachResult) (queuety.State, error) {
		panic("reducer exploded")
	})
	id, last, err := e.reducerFailure(reg)
	e.checkReducerFailed(id, last, err, "reducer exploded")
}

func testForEachReducerMissing(t *testing.T, e *Env) {
	id, last, err := e.reducerFailure(queuety.NewRegistry())
	e.checkReducerFailed(id, last, err, "reduce")
	assert.Contains(t, e.Workflow(id).ErrorMessage, "not found", "workflow error names the missing reducer")
}

// testForEachReducerDefer: a worker that has a for-each branch handler but
// not the step's reducer hands the branches back, due after
// worker.DeferDelay and without using an attempt, instead of failing them;
// a worker that has both runs them and the step settles.
func testForEachReducerDefer(t *testing.T, e *Env) {
	b := builder.Workflow("deferred").ForEach("items", "branch", builder.Reducer("sum"))
	id := e.startB(b, queuety.State{"items": []any{1, 2}})
	branch := func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		return queuety.State{"v": item}, nil
	}
	lacking := e.Worker(nil)
	var lackingCalls atomic.Int64
	lacking.HandleForEach("branch", func(ctx context.Context, s queuety.State, item any, i int) (queuety.State, error) {
		lackingCalls.Add(1)
		return branch(ctx, s, item, i)
	})
	e.Drain(lacking)
	assert.Zero(t, lackingCalls.Load(), "branches run by a worker without the reducer")
	for _, j := range e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "branch"}) {
		assert.Equal(t, queuetytype.JobPending, j.Status, "branch %d status", j.ID)
		assert.Zero(t, j.Attempts, "branch %d attempts (deferring uses none)", j.ID)
		assert.Equal(t, Epoch.Add(worker.DeferDelay), j.AvailableAt, "branch %d due after the defer delay", j.ID)
	}
	full := e.Worker(nil)
	full.HandleForEach("branch", branch)
	full.HandleReducer("sum", func(_ context.Context, _ queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		return queuety.State{"n": r.Succeeded}, nil
	})
	e.Clock.Advance(worker.DeferDelay)
	e.Drain(full)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, int64(2), e.State(id)["n"], "reducer output")
}
