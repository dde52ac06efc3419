package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// strandedWait is a workflow parked on a wait_for_workflows step, and the
// workflows it waits for, on a fresh MariaDB database.
type strandedWait struct {
	c      *queuety.Client
	dsn    string
	parent int64
	kids   []int64
}

// parkWait dispatches n kid workflows, whose one step no worker handles,
// and a workflow waiting for them (opts) with an "after" step, and runs
// a worker once so that the wait parks in waiting_for_workflows.
func parkWait(t *testing.T, n int, opts ...builder.StepOption) strandedWait {
	t.Helper()
	ctx := context.Background()
	dsn, _ := testdb.DSN(t)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s := strandedWait{c: c, dsn: dsn}
	for i := range n {
		id, err := builder.Workflow("kid").Then("kid_step").Dispatch(ctx, c, queuety.State{"kid": i})
		require.NoError(t, err)
		s.kids = append(s.kids, id)
	}
	s.parent, err = builder.Workflow("waiter").WaitForWorkflows(s.kids, opts...).Then("after").Dispatch(ctx, c, queuety.State{})
	require.NoError(t, err)
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()))
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	_, err = w.RunOnce(ctx, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, queuetytype.WorkflowWaitingForWorkflows, s.workflow(t, s.parent).Status, "the wait parked")
	return s
}

// end ends the kid workflow id with status by writing its row alone, as a
// workflow end that found no dependency rows leaves it: the wait's
// dependency rows keep satisfied_at NULL and nothing re-evaluates it.
// This is the state Queuety PHP's wait leaves when a dependency ends
// while it is being set up (it reads its dependencies without locks).
func (s strandedWait) end(t *testing.T, id int64, status driver.WorkflowStatus) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, clientseam.Engine(s.c).Store().InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		wf.Status = status
		now := time.Now().UTC().Add(-time.Minute) // past the sweep's grace
		if status == driver.WorkflowFailed {
			wf.FailedAt, wf.ErrorMessage = now, "kid failed"
		} else {
			wf.CompletedAt = now
		}
		return tx.WorkflowUpdate(ctx, wf)
	}))
}

func (s strandedWait) workflow(t *testing.T, id int64) *queuetytype.Workflow {
	t.Helper()
	wf, err := s.c.Workflow(context.Background(), id)
	require.NoError(t, err)
	return wf
}

// events counts the parent's events of type ev.
func (s strandedWait) events(t *testing.T, ev driver.EventType) int {
	t.Helper()
	ctx := context.Background()
	var n int
	require.NoError(t, clientseam.Engine(s.c).Store().InTx(ctx, func(tx driver.Tx) error {
		evs, err := tx.EventList(ctx, s.parent)
		n = 0
		for _, e := range evs {
			if e.Event == ev {
				n++
			}
		}
		return err
	}))
	return n
}

// dependencies returns the parent's dependency rows.
func (s strandedWait) dependencies(t *testing.T) []*driver.WorkflowDependency {
	t.Helper()
	ctx := context.Background()
	var deps []*driver.WorkflowDependency
	require.NoError(t, clientseam.Engine(s.c).Store().InTx(ctx, func(tx driver.Tx) (err error) {
		deps, err = tx.DependencyList(ctx, s.parent)
		return err
	}))
	return deps
}

// TestStrandedWaitRecovered: a workflow waiting for workflows that all
// completed without seeing its wait (their ends found no dependency rows,
// as when Queuety PHP sets the wait up while they end) is resumed by a
// long-running worker's workflow-waits sweep, behind the sweep gate, and
// runs to completion with one workflow_resumed event.
func TestStrandedWaitRecovered(t *testing.T) {
	s := parkWait(t, 2, builder.ResultKey("kids"))
	for _, id := range s.kids {
		s.end(t, id, driver.WorkflowCompleted)
	}
	for _, d := range s.dependencies(t) {
		assert.True(t, d.SatisfiedAt.IsZero(), "dependency row of %d stamped before the sweep", d.DependencyWorkflowID)
	}

	recovered := make(chan int, 100)
	done := make(chan struct{}, 1)
	w := worker.New(s.c, worker.PollInterval(20*time.Millisecond), worker.WithLogger(quiet()), worker.NoRetention(),
		worker.Maintenance(worker.Intervals{WaitTimer: 50 * time.Millisecond}),
		worker.WithHooks(worker.Hooks{
			Swept: func(task string, n int, err error) {
				if task == deadline.SweepWorkflowWaits && (n > 0 || err != nil) {
					recovered <- n
				}
			},
			Finished: func(j *queuetytype.Job, err error) {
				if j.Handler == "after" && err == nil {
					done <- struct{}{}
				}
			},
		}))
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	run := runWorker(t, w)
	defer func() { require.NoError(t, run.stop(t)) }()
	assert.Equal(t, 1, receive(t, recovered, "the workflow-waits sweep's recovery"), "waits recovered")
	receive(t, done, "the step after the wait")

	wf := s.workflow(t, s.parent)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent (error %q)", wf.ErrorMessage)
	assert.Equal(t, 1, s.events(t, driver.EventWorkflowResumed), "workflow_resumed events")
	st, err := s.c.State(context.Background(), s.parent)
	require.NoError(t, err)
	assert.Contains(t, st, "kids", "the kids' results under the result key")
	assert.Empty(t, s.dependencies(t), "dependency rows left")
}

// TestStrandedWaitFailedDependency: a wait for all of its workflows, one
// of which failed without seeing the wait, fails its workflow with
// Queuety's message when the sweep runs (here RunAll, as work --once).
func TestStrandedWaitFailedDependency(t *testing.T) {
	s := parkWait(t, 2)
	s.end(t, s.kids[0], driver.WorkflowCompleted)
	s.end(t, s.kids[1], driver.WorkflowFailed)
	r, err := deadline.New(s.c).RunAll(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, r.WorkflowWaits, "waits recovered")
	wf := s.workflow(t, s.parent)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "parent")
	assert.Equal(t, "Workflow wait could not be satisfied.", wf.ErrorMessage, "parent's error")
	assert.Zero(t, s.events(t, driver.EventWorkflowResumed), "workflow_resumed events")
	assert.Empty(t, s.dependencies(t), "dependency rows left")
}

// TestStrandedWaitUndecidable: a wait for any of three workflows, one of
// which failed and the others still run, stays waiting: the sweep ends
// (it does not pick the wait again within one run), changes nothing, and
// a later completion of another workflow, seen by the sweep, resumes it.
func TestStrandedWaitUndecidable(t *testing.T) {
	s := parkWait(t, 3, builder.Any())
	s.end(t, s.kids[0], driver.WorkflowFailed)
	sw := deadline.New(s.c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		n, err := sw.WorkflowWaits(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "waits recovered while undecidable")
		assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, s.workflow(t, s.parent).Status, "parent")
	}
	s.end(t, s.kids[2], driver.WorkflowCompleted)
	n, err := sw.WorkflowWaits(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "waits recovered")
	assert.Equal(t, queuetytype.WorkflowRunning, s.workflow(t, s.parent).Status, "parent, its next step due")
	assert.Equal(t, 1, s.events(t, driver.EventWorkflowResumed), "workflow_resumed events")
}

// TestStrandedWaitRecoveryWakesIdleWorker: the workflow-waits sweep that
// resumes a wait wakes an idle worker for the workflow's next step,
// though the worker looks for jobs only every minute while the
// cross-process wake-up is live.
func TestStrandedWaitRecoveryWakesIdleWorker(t *testing.T) {
	s := parkWait(t, 1)
	s.end(t, s.kids[0], driver.WorkflowCompleted)
	ctx, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{}, 1)
	c, err := queuety.Open(ctx, s.dsn, queuety.WithLogger(quiet()), queuety.WithObserver(emptyClaims(idle)))
	require.NoError(t, err)
	defer c.Close()
	done := make(chan struct{}, 1)
	w := worker.New(c, worker.NoMaintenance(), worker.PollInterval(time.Minute), worker.IdlePollInterval(time.Minute),
		worker.WithLogger(quiet()), worker.WithHooks(worker.Hooks{Finished: func(j *queuetytype.Job, err error) {
			if j.Handler == "after" && err == nil {
				done <- struct{}{}
			}
		}}))
	w.HandleStep("after", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	run := runWorker(t, w)
	defer func() {
		cancel()
		require.NoError(t, run.stop(t))
	}()
	receive(t, idle, "the worker's first empty claim")
	n, err := deadline.New(c).WorkflowWaits(context.Background()) // in the worker's process
	require.NoError(t, err)
	require.Equal(t, 1, n, "waits recovered")
	receive(t, done, "the step after the wait")
}
