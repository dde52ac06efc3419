package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of workflow dependencies (Queuety's
// workflow_dependencies table) and of listing child workflows.
func init() {
	registerDriver("Dependencies/SetReplacesAndWaitersListDistinct", testDriverDependencies)
	registerDriver("Workflows/ListByParent", testDriverWorkflowListByParent)
	registerDriver("Dependencies/InsertAndListRows", testDriverDependencyRows)
	registerDriver("Dependencies/FindStrandedWaits", testDriverFindStrandedWaits)
}

func testDriverDependencies(t *testing.T, d *DriverEnv) {
	waiters := func(deps ...int64) []driver.DependencyWaiter {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]driver.DependencyWaiter, error) { return tx.DependencyWaiters(d.Ctx, deps) })
	}
	d.Tx(func(tx driver.Tx) error { return tx.DependencySet(d.Ctx, 10, 2, []int64{100, 101}, Epoch) })
	d.Tx(func(tx driver.Tx) error { return tx.DependencySet(d.Ctx, 9, 0, []int64{101}, Epoch) })
	assert.Equal(t, []driver.DependencyWaiter{{WorkflowID: 9, StepIndex: 0, DependencyID: 101}, {WorkflowID: 10, StepIndex: 2, DependencyID: 101}}, waiters(101),
		"waiters of a shared dependency, by waiting workflow")
	assert.Equal(t, []driver.DependencyWaiter{{WorkflowID: 10, StepIndex: 2, DependencyID: 100}}, waiters(100), "waiters of one dependency")
	assert.Equal(t, []driver.DependencyWaiter{{WorkflowID: 9, StepIndex: 0, DependencyID: 101}, {WorkflowID: 10, StepIndex: 2, DependencyID: 100},
		{WorkflowID: 10, StepIndex: 2, DependencyID: 101}}, waiters(100, 101), "waiters of several dependencies, one row per dependency")

	d.Tx(func(tx driver.Tx) error { return tx.DependencySet(d.Ctx, 10, 2, []int64{102}, Epoch) })
	assert.Empty(t, waiters(100), "set replaced the step's earlier rows")
	assert.Equal(t, []driver.DependencyWaiter{{WorkflowID: 10, StepIndex: 2, DependencyID: 102}}, waiters(102), "set wrote the new rows")

	d.Tx(func(tx driver.Tx) error { return tx.DependencyClear(d.Ctx, 10, 2) })
	assert.Empty(t, waiters(102), "clear deleted the step's rows")
	assert.Equal(t, []driver.DependencyWaiter{{WorkflowID: 9, StepIndex: 0, DependencyID: 101}}, waiters(101), "clear left other workflows' rows")
	d.Tx(func(tx driver.Tx) error { return tx.DependencySet(d.Ctx, 11, 0, nil, Epoch) })
	assert.Empty(t, waiters(0), "an empty set writes nothing")
	assert.Empty(t, waiters(), "no dependencies asked for")
}

func testDriverWorkflowListByParent(t *testing.T, d *DriverEnv) {
	parent := d.insertWorkflow(newWorkflow("parent", driver.WorkflowRunning))
	step := 1
	a := newWorkflow("child", driver.WorkflowRunning)
	a.ParentWorkflowID, a.ParentStepIndex = parent, &step
	b := newWorkflow("child", driver.WorkflowCompleted)
	b.ParentWorkflowID, b.ParentStepIndex = parent, &step
	ai, bi := d.insertWorkflow(a), d.insertWorkflow(b)
	d.insertWorkflow(newWorkflow("unrelated", driver.WorkflowRunning))
	got := workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return tx.WorkflowList(d.Ctx, driver.WorkflowFilter{Parent: parent})
	}))
	assert.Equal(t, []int64{bi, ai}, got, "children of the parent, newest first")
}

func testDriverDependencyRows(t *testing.T, d *DriverEnv) {
	in := []*driver.WorkflowDependency{
		{WaitingWorkflowID: 30, StepIndex: 2, DependencyWorkflowID: 300, SatisfiedAt: Epoch.Add(time.Second), CreatedAt: Epoch},
		{WaitingWorkflowID: 30, StepIndex: 2, DependencyWorkflowID: 301, CreatedAt: Epoch},
		{WaitingWorkflowID: 31, StepIndex: 0, DependencyWorkflowID: 300, CreatedAt: Epoch},
	}
	d.Tx(func(tx driver.Tx) error { return tx.DependencyInsert(d.Ctx, in) })
	got := inTx(d, func(tx driver.Tx) ([]*driver.WorkflowDependency, error) { return tx.DependencyList(d.Ctx, 30) })
	if assert.Len(t, got, 2, "rows of workflow 30") {
		assert.Equal(t, int64(300), got[0].DependencyWorkflowID, "first row's dependency")
		assert.Equal(t, Epoch.Add(time.Second), got[0].SatisfiedAt, "satisfied_at written and read")
		assert.Zero(t, got[1].SatisfiedAt, "satisfied_at NULL")
		assert.Equal(t, 2, got[1].StepIndex, "step_index")
		assert.Equal(t, Epoch, got[1].CreatedAt, "created_at")
		assert.NotZero(t, got[0].ID, "id")
	}
	d.Tx(func(tx driver.Tx) error {
		return tx.DependencySatisfy(d.Ctx, driver.DependencyWaiter{WorkflowID: 30, StepIndex: 2}, 301, Epoch.Add(2*time.Second))
	})
	got = inTx(d, func(tx driver.Tx) ([]*driver.WorkflowDependency, error) { return tx.DependencyList(d.Ctx, 30) })
	require.Len(t, got, 2)
	assert.Equal(t, Epoch.Add(time.Second), got[0].SatisfiedAt, "an existing stamp is kept")
	assert.Equal(t, Epoch.Add(2*time.Second), got[1].SatisfiedAt, "satisfy stamps a row without one")
}

// testDriverFindStrandedWaits: driver.WaitRecoveryTx finds the workflows
// waiting for workflows with a dependency row of their current step whose
// workflow completed without the row being stamped satisfied, or failed
// or was cancelled; in id order, past Exclude, up to Limit.
func testDriverFindStrandedWaits(t *testing.T, d *DriverEnv) {
	if !inTx(d, func(tx driver.Tx) (bool, error) { _, ok := tx.(driver.WaitRecoveryTx); return ok, nil }) {
		t.Skip("the store's transactions have no WorkflowFindStrandedWaits (driver.WaitRecoveryTx)")
	}
	kid := func(s driver.WorkflowStatus) int64 { return d.insertWorkflow(newWorkflow("kid", s)) }
	completed, running := kid(driver.WorkflowCompleted), kid(driver.WorkflowRunning)
	failed, cancelled := kid(driver.WorkflowFailed), kid(driver.WorkflowCancelled)
	waiting := func(s driver.WorkflowStatus, step int) int64 {
		wf := newWorkflow("waiter", s)
		wf.CurrentStep, wf.TotalSteps = step, 3
		return d.insertWorkflow(wf)
	}
	var deps []*driver.WorkflowDependency
	dep := func(w int64, step int, on int64, satisfied bool) {
		r := &driver.WorkflowDependency{WaitingWorkflowID: w, StepIndex: step, DependencyWorkflowID: on, CreatedAt: Epoch}
		if satisfied {
			r.SatisfiedAt = Epoch.Add(time.Second)
		}
		deps = append(deps, r)
	}
	unseen := waiting(driver.WorkflowWaitingForWorkflows, 1) // a completed dependency's end missed the wait
	dep(unseen, 1, running, false)
	dep(unseen, 1, completed, false)
	seen := waiting(driver.WorkflowWaitingForWorkflows, 1) // the completed dependency's end saw it
	dep(seen, 1, completed, true)
	dep(seen, 1, running, false)
	failedDep := waiting(driver.WorkflowWaitingForWorkflows, 0)
	dep(failedDep, 0, failed, false)
	oldStep := waiting(driver.WorkflowWaitingForWorkflows, 2) // rows of an earlier wait
	dep(oldStep, 1, completed, false)
	dep(oldStep, 2, running, false)
	notWaiting := waiting(driver.WorkflowRunning, 1)
	dep(notWaiting, 1, completed, false)
	cancelledDep := waiting(driver.WorkflowWaitingForWorkflows, 2)
	dep(cancelledDep, 2, cancelled, false)
	waiting(driver.WorkflowWaitingForWorkflows, 0) // no rows at all
	// Dependencies that ended after Now: completed, failed, cancelled.
	late := newWorkflow("kid", driver.WorkflowCompleted)
	late.CompletedAt = Epoch.Add(time.Hour)
	lateFailed := newWorkflow("kid", driver.WorkflowFailed)
	lateFailed.FailedAt = Epoch.Add(time.Hour)
	lateCancelled := newWorkflow("kid", driver.WorkflowCancelled)
	lateCancelled.CompletedAt = Epoch.Add(time.Hour)
	var lateWaits []int64
	for _, k := range []*driver.Workflow{late, lateFailed, lateCancelled} {
		d.insertWorkflow(k)
		d.Tx(func(tx driver.Tx) error { return tx.WorkflowUpdate(d.Ctx, k) }) // WorkflowInsert writes no end times
		lateWaits = append(lateWaits, waiting(driver.WorkflowWaitingForWorkflows, 0))
		dep(lateWaits[len(lateWaits)-1], 0, k.ID, false)
	}
	d.Tx(func(tx driver.Tx) error { return tx.DependencyInsert(d.Ctx, deps) })

	find := func(limit int, lock driver.LockMode, exclude ...int64) []int64 {
		t.Helper()
		return workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
			return tx.(driver.WaitRecoveryTx).WorkflowFindStrandedWaits(d.Ctx, driver.ExpiredParams{Now: Epoch, Limit: limit, Lock: lock, Exclude: exclude})
		}))
	}
	assert.Equal(t, []int64{unseen, failedDep, cancelledDep}, find(10, driver.LockNone), "stranded waits, in id order")
	assert.Equal(t, []int64{unseen, failedDep, cancelledDep}, find(10, driver.LockSkipLocked), "stranded waits, locked")
	assert.Equal(t, []int64{unseen, failedDep}, find(2, driver.LockSkipLocked), "up to the limit")
	assert.Equal(t, []int64{cancelledDep}, find(10, driver.LockUpdate, unseen, failedDep), "past the excluded")
	later := inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return tx.(driver.WaitRecoveryTx).WorkflowFindStrandedWaits(d.Ctx, driver.ExpiredParams{Now: Epoch.Add(time.Hour), Limit: 10, Lock: driver.LockNone})
	})
	assert.Equal(t, append([]int64{unseen, failedDep, cancelledDep}, lateWaits...), workflowIDs(later),
		"with the dependencies that ended at Now")
	d.Tx(func(tx driver.Tx) error {
		return tx.DependencySatisfy(d.Ctx, driver.DependencyWaiter{WorkflowID: unseen, StepIndex: 1}, completed, Epoch.Add(2*time.Second))
	})
	assert.Equal(t, []int64{failedDep, cancelledDep}, find(10, driver.LockNone), "a wait whose completed dependency was stamped")
}
