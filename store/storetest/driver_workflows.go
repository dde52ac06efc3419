package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of the workflow, dispatch-key, signal and failure row
// operations.
func init() {
	registerDriver("Workflows/InsertSetsIDAndWritesColumns", testDriverWorkflowInsert)
	registerDriver("Workflows/GetMissingIsNotFound", testDriverWorkflowGetMissing)
	registerDriver("Workflows/GetManyInIDOrder", testDriverWorkflowGetMany)
	registerDriver("Workflows/UpdateWritesMutableColumns", testDriverWorkflowUpdate)
	registerDriver("Workflows/UpdateManyWritesEachRow", testDriverWorkflowUpdateMany)
	registerDriver("Workflows/FindExpired", testDriverWorkflowFindExpired)
	registerDriver("Workflows/RunningPositionsInIDOrder", testDriverWorkflowRunningPositions)
	registerDriver("Workflows/FindDeadlineFailed", testDriverWorkflowFindDeadlineFailed)
	registerDriver("Workflows/FindWaitExpired", testDriverWorkflowFindWaitExpired)
	registerDriver("Workflows/ListFilters", testDriverWorkflowList)
	registerDriver("Workflows/Counts", testDriverWorkflowCounts)
	registerDriver("DispatchKeys/DuplicateIsRejected", testDriverDispatchKeys)
	registerDriver("Signals/InsertSetsIDAndListFilters", testDriverSignals)
	registerDriver("Failures/InsertSetsIDAndListByOwner", testDriverFailures)
}

func testDriverWorkflowInsert(t *testing.T, d *DriverEnv) {
	parentStep := 3
	in := &driver.Workflow{Name: "order", Status: driver.WorkflowWaitingForSignal, State: []byte(`{"a":1,"_steps":[]}`),
		CurrentStep: 2, TotalSteps: 5, ParentWorkflowID: 77, ParentStepIndex: &parentStep, StartedAt: Epoch,
		DeadlineAt: Epoch.Add(time.Hour + 300*time.Millisecond), RunNumber: 2, RunStartedAt: Epoch.Add(time.Microsecond),
		RunDeadlineAt: Epoch.Add(time.Minute + 2*time.Microsecond), WaitDeadlineAt: Epoch.Add(time.Second + 3*time.Microsecond)}
	id := d.insertWorkflow(in)
	other := d.insertWorkflow(newWorkflow("second", driver.WorkflowRunning))
	assert.NotEqual(t, id, other, "ids of two workflows")
	w := d.workflow(id)
	assert.Equal(t, id, w.ID, "id")
	assert.Equal(t, "order", w.Name, "name")
	assert.Equal(t, driver.WorkflowWaitingForSignal, w.Status, "status")
	assert.Equal(t, `{"a":1,"_steps":[]}`, string(w.State), "state, byte for byte")
	assert.Equal(t, 2, w.CurrentStep, "current_step")
	assert.Equal(t, 5, w.TotalSteps, "total_steps")
	assert.Equal(t, int64(77), w.ParentWorkflowID, "parent_workflow_id")
	if assert.NotNil(t, w.ParentStepIndex, "parent_step_index") {
		assert.Equal(t, 3, *w.ParentStepIndex, "parent_step_index")
	}
	assert.Equal(t, Epoch, w.StartedAt, "started_at")
	assert.Equal(t, Epoch.Add(time.Hour), w.DeadlineAt, "deadline_at (second precision)")
	assert.Equal(t, 2, w.RunNumber, "run_number")
	assert.Equal(t, Epoch.Add(time.Microsecond), w.RunStartedAt, "run_started_at")
	assert.Equal(t, Epoch.Add(time.Minute+2*time.Microsecond), w.RunDeadlineAt, "run_deadline_at")
	assert.Equal(t, Epoch.Add(time.Second+3*time.Microsecond), w.WaitDeadlineAt, "wait_deadline_at")
	assert.Zero(t, w.CompletedAt, "completed_at")
	assert.Zero(t, w.FailedAt, "failed_at")
	assert.Empty(t, w.ErrorMessage, "error_message")

	bare := d.workflow(other)
	assert.Zero(t, bare.ParentWorkflowID, "parent_workflow_id of a top-level workflow")
	assert.Nil(t, bare.ParentStepIndex, "parent_step_index of a top-level workflow")
	assert.Zero(t, bare.DeadlineAt, "deadline_at")
	assert.Zero(t, bare.RunDeadlineAt, "run_deadline_at")
	assert.Zero(t, bare.WaitDeadlineAt, "wait_deadline_at")
}

func testDriverWorkflowGetMissing(t *testing.T, d *DriverEnv) {
	id := d.insertWorkflow(newWorkflow("wf", driver.WorkflowRunning))
	for name, mode := range lockModes {
		err := d.TxErr(func(tx driver.Tx) error {
			_, err := tx.WorkflowGet(d.Ctx, id+1000, mode)
			return err
		})
		assert.ErrorIs(t, err, driver.ErrNotFound, "WorkflowGet of a missing id with "+name)
	}
}

func testDriverWorkflowGetMany(t *testing.T, d *DriverEnv) {
	a := d.insertWorkflow(newWorkflow("a", driver.WorkflowRunning))
	b := d.insertWorkflow(newWorkflow("b", driver.WorkflowCompleted))
	got := inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return tx.WorkflowGetMany(d.Ctx, []int64{b + 1000, b, a}, driver.LockNone)
	})
	assert.Equal(t, []int64{a, b}, workflowIDs(got), "rows in id order, the missing id skipped")
	none := inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) { return tx.WorkflowGetMany(d.Ctx, nil, driver.LockNone) })
	assert.Empty(t, none, "rows for no ids")
}

func testDriverWorkflowUpdate(t *testing.T, d *DriverEnv) {
	id := d.insertWorkflow(newWorkflow("wf", driver.WorkflowRunning))
	change := func(fn func(w *driver.Workflow)) {
		t.Helper()
		d.Tx(func(tx driver.Tx) error {
			w, err := tx.WorkflowGet(d.Ctx, id, driver.LockUpdate)
			if err != nil {
				return err
			}
			fn(w)
			return tx.WorkflowUpdate(d.Ctx, w)
		})
	}
	change(func(w *driver.Workflow) {
		w.Name, w.StartedAt, w.ParentWorkflowID = "renamed", Epoch.Add(time.Hour), 5 // not written
		w.Status = driver.WorkflowFailed
		w.State = []byte(`{"b":2}`)
		w.CurrentStep, w.TotalSteps = 3, 4
		w.CompletedAt = Epoch.Add(time.Second)
		w.FailedAt = Epoch.Add(2 * time.Second)
		w.ErrorMessage = "Deadline exceeded"
		w.DeadlineAt = Epoch.Add(3 * time.Second)
		w.RunNumber = 3
		w.RunStartedAt = Epoch.Add(4*time.Second + time.Microsecond)
		w.RunDeadlineAt = Epoch.Add(5*time.Second + time.Microsecond)
		w.WaitDeadlineAt = Epoch.Add(6*time.Second + time.Microsecond)
	})
	w := d.workflow(id)
	assert.Equal(t, "wf", w.Name, "name is not written")
	assert.Equal(t, Epoch, w.StartedAt, "started_at is not written")
	assert.Zero(t, w.ParentWorkflowID, "parent_workflow_id is not written")
	assert.Equal(t, driver.WorkflowFailed, w.Status, "status")
	assert.Equal(t, `{"b":2}`, string(w.State), "state")
	assert.Equal(t, 3, w.CurrentStep, "current_step")
	assert.Equal(t, 4, w.TotalSteps, "total_steps")
	assert.Equal(t, Epoch.Add(time.Second), w.CompletedAt, "completed_at")
	assert.Equal(t, Epoch.Add(2*time.Second), w.FailedAt, "failed_at")
	assert.Equal(t, "Deadline exceeded", w.ErrorMessage, "error_message")
	assert.Equal(t, Epoch.Add(3*time.Second), w.DeadlineAt, "deadline_at")
	assert.Equal(t, 3, w.RunNumber, "run_number")
	assert.Equal(t, Epoch.Add(4*time.Second+time.Microsecond), w.RunStartedAt, "run_started_at")
	assert.Equal(t, Epoch.Add(5*time.Second+time.Microsecond), w.RunDeadlineAt, "run_deadline_at")
	assert.Equal(t, Epoch.Add(6*time.Second+time.Microsecond), w.WaitDeadlineAt, "wait_deadline_at")

	change(func(w *driver.Workflow) {
		w.CompletedAt, w.FailedAt, w.ErrorMessage = time.Time{}, time.Time{}, ""
		w.DeadlineAt, w.RunDeadlineAt, w.WaitDeadlineAt = time.Time{}, time.Time{}, time.Time{}
	})
	w = d.workflow(id)
	assert.Zero(t, w.CompletedAt, "completed_at cleared")
	assert.Zero(t, w.FailedAt, "failed_at cleared")
	assert.Empty(t, w.ErrorMessage, "error_message cleared")
	assert.Zero(t, w.DeadlineAt, "deadline_at cleared")
	assert.Zero(t, w.RunDeadlineAt, "run_deadline_at cleared")
	assert.Zero(t, w.WaitDeadlineAt, "wait_deadline_at cleared")
}

func testDriverWorkflowUpdateMany(t *testing.T, d *DriverEnv) {
	a := d.insertWorkflow(newWorkflow("a", driver.WorkflowRunning))
	b := d.insertWorkflow(newWorkflow("b", driver.WorkflowRunning))
	c := d.insertWorkflow(newWorkflow("c", driver.WorkflowRunning))
	untouched := d.insertWorkflow(newWorkflow("untouched", driver.WorkflowRunning))
	d.Tx(func(tx driver.Tx) error {
		wfs, err := tx.WorkflowGetMany(d.Ctx, []int64{a, b, c}, driver.LockUpdate)
		if err != nil {
			return err
		}
		for i, w := range wfs {
			w.Name = "renamed" // not written
			w.State = []byte(fmt.Sprintf(`{"i":%d}`, i))
			w.CurrentStep, w.TotalSteps = i+1, 4 // differs, and is the same for all
			w.DeadlineAt = Epoch.Add(time.Hour)
		}
		wfs[1].Status, wfs[1].CompletedAt = driver.WorkflowCompleted, Epoch.Add(time.Second)
		wfs[2].RunStartedAt, wfs[2].WaitDeadlineAt = Epoch.Add(time.Microsecond), Epoch.Add(2*time.Microsecond)
		wfs[2].ErrorMessage = "it's \\ 'quoted'"
		later := *wfs[0]
		later.State, later.CurrentStep = []byte(`{"later":true}`), 3
		if err := tx.WorkflowUpdateMany(d.Ctx, append(wfs, &later)); err != nil {
			return err
		}
		return tx.WorkflowUpdateMany(d.Ctx, nil)
	})
	wa, wb, wc := d.workflow(a), d.workflow(b), d.workflow(c)
	assert.Equal(t, "a", wa.Name, "name is not written")
	assert.Equal(t, `{"later":true}`, string(wa.State), "the last entry of a workflow wins")
	assert.Equal(t, 3, wa.CurrentStep, "the last entry of a workflow wins")
	assert.Equal(t, driver.WorkflowRunning, wa.Status, "status")
	assert.Zero(t, wa.CompletedAt, "completed_at")
	assert.Equal(t, `{"i":1}`, string(wb.State), "state of each row")
	assert.Equal(t, `{"i":2}`, string(wc.State), "state of each row")
	assert.Equal(t, []int{2, 3}, []int{wb.CurrentStep, wc.CurrentStep}, "current_step of each row")
	for _, w := range []*driver.Workflow{wa, wb, wc} {
		assert.Equal(t, 4, w.TotalSteps, "total_steps")
		assert.Equal(t, Epoch.Add(time.Hour), w.DeadlineAt, "deadline_at")
	}
	assert.Equal(t, driver.WorkflowCompleted, wb.Status, "status of one row")
	assert.Equal(t, Epoch.Add(time.Second), wb.CompletedAt, "completed_at of one row")
	assert.Equal(t, Epoch.Add(time.Microsecond), wc.RunStartedAt, "run_started_at of one row")
	assert.Equal(t, Epoch.Add(2*time.Microsecond), wc.WaitDeadlineAt, "wait_deadline_at of one row")
	assert.Zero(t, wb.WaitDeadlineAt, "wait_deadline_at of the others")
	assert.Equal(t, "it's \\ 'quoted'", wc.ErrorMessage, "error_message of one row")
	assert.Empty(t, wb.ErrorMessage, "error_message of the others")
	u := d.workflow(untouched)
	assert.Equal(t, `{"_steps":[]}`, string(u.State), "a workflow not in the list is not written")
	assert.Equal(t, 0, u.CurrentStep, "a workflow not in the list is not written")

	d.Tx(func(tx driver.Tx) error {
		w, err := tx.WorkflowGet(d.Ctx, untouched, driver.LockUpdate)
		if err != nil {
			return err
		}
		w.State = []byte(`{"one":1}`)
		return tx.WorkflowUpdateMany(d.Ctx, []*driver.Workflow{w})
	})
	assert.Equal(t, `{"one":1}`, string(d.workflow(untouched).State), "a single row")
}

func testDriverWorkflowFindExpired(t *testing.T, d *DriverEnv) {
	now := Epoch.Add(500 * time.Millisecond)
	wf := func(status driver.WorkflowStatus, deadline, runDeadline time.Time) int64 {
		t.Helper()
		w := newWorkflow("wf", status)
		w.DeadlineAt, w.RunDeadlineAt = deadline, runDeadline
		return d.insertWorkflow(w)
	}
	var none time.Time
	want := []int64{
		wf(driver.WorkflowRunning, Epoch.Add(-time.Second), none),
		wf(driver.WorkflowPaused, none, now),
		wf(driver.WorkflowWaitingForSignal, Epoch, none), // deadline_at holds seconds: Epoch is now's second
		wf(driver.WorkflowWaitingForWorkflows, none, now.Add(-time.Microsecond)),
		wf(driver.WorkflowRunning, Epoch.Add(-time.Hour), Epoch.Add(-time.Hour)), // both expired: returned once
	}
	wf(driver.WorkflowCompleted, Epoch.Add(-time.Hour), none)
	wf(driver.WorkflowFailed, none, Epoch.Add(-time.Hour))
	wf(driver.WorkflowCancelled, Epoch.Add(-time.Hour), Epoch.Add(-time.Hour))
	wf(driver.WorkflowRunning, Epoch.Add(time.Second), now.Add(time.Microsecond))
	wf(driver.WorkflowRunning, none, none)
	find := func(limit int) []int64 {
		t.Helper()
		return workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
			return tx.WorkflowFindExpired(d.Ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockUpdate})
		}))
	}
	assert.ElementsMatch(t, want, find(100), "non-terminal workflows past a deadline, each once")
	limited := find(2)
	assert.Len(t, limited, 2, "expired workflows with a limit of 2")
	assert.Subset(t, want, limited, "expired workflows with a limit of 2")
	rest := workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return tx.WorkflowFindExpired(d.Ctx, driver.ExpiredParams{Now: now, Limit: 100, Lock: driver.LockUpdate, Exclude: limited})
	}))
	assert.ElementsMatch(t, without(want, limited), rest, "expired workflows excluding the first two found")
}

func without(ids, drop []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

func testDriverWorkflowFindDeadlineFailed(t *testing.T, d *DriverEnv) {
	now := Epoch
	wf := func(status driver.WorkflowStatus, deadline time.Time, msg string) int64 {
		t.Helper()
		w := newWorkflow("wf", status)
		w.DeadlineAt = deadline
		id := d.insertWorkflow(w)
		w.ErrorMessage = msg // written by updates, not inserts
		d.Tx(func(tx driver.Tx) error { return tx.WorkflowUpdate(d.Ctx, w) })
		return id
	}
	want := []int64{
		wf(driver.WorkflowFailed, now.Add(-time.Minute), "Deadline exceeded"),
		wf(driver.WorkflowFailed, now, "Deadline exceeded"),
		wf(driver.WorkflowFailed, now.Add(-23*time.Hour), "Deadline exceeded"),
	}
	recorded := wf(driver.WorkflowFailed, now.Add(-time.Minute), "Deadline exceeded")
	inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
		return nil, tx.FailureInsert(d.Ctx, &driver.Failure{WorkflowID: recorded, Category: driver.FailureTimeout,
			TimeoutKind: driver.TimeoutExecution, Message: "Deadline exceeded", CreatedAt: now})
	})
	wf(driver.WorkflowFailed, now.Add(-25*time.Hour), "Deadline exceeded") // before Since
	wf(driver.WorkflowFailed, now.Add(time.Minute), "Deadline exceeded")   // after Now
	wf(driver.WorkflowFailed, now.Add(-time.Minute), "boom")
	wf(driver.WorkflowRunning, now.Add(-time.Minute), "")
	find := func(exclude []int64) []int64 {
		t.Helper()
		return workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
			return tx.WorkflowFindDeadlineFailed(d.Ctx, driver.ExpiredParams{Now: now, Since: now.Add(-24 * time.Hour),
				Limit: 100, Lock: driver.LockSkipLocked, Exclude: exclude})
		}))
	}
	assert.ElementsMatch(t, want, find(nil), "failed at the deadline in the window, without a failure row")
	assert.ElementsMatch(t, want[1:], find(want[:1]), "with the first excluded")
}

func testDriverWorkflowFindWaitExpired(t *testing.T, d *DriverEnv) {
	now := Epoch.Add(500 * time.Millisecond)
	wf := func(status driver.WorkflowStatus, wait time.Time) int64 {
		t.Helper()
		w := newWorkflow("wf", status)
		w.WaitDeadlineAt = wait
		return d.insertWorkflow(w)
	}
	want := []int64{
		wf(driver.WorkflowWaitingForSignal, now.Add(-time.Minute)),
		wf(driver.WorkflowWaitingForSignal, now),
	}
	wf(driver.WorkflowWaitingForSignal, now.Add(time.Microsecond))
	wf(driver.WorkflowWaitingForSignal, time.Time{})
	wf(driver.WorkflowRunning, now.Add(-time.Minute))
	wf(driver.WorkflowFailed, now.Add(-time.Minute))
	find := func(limit int) []int64 {
		t.Helper()
		return workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) {
			return tx.WorkflowFindWaitExpired(d.Ctx, driver.ExpiredParams{Now: now, Limit: limit, Lock: driver.LockUpdate})
		}))
	}
	assert.ElementsMatch(t, want, find(100), "signal waits at or past their timeout")
	limited := find(1)
	assert.Len(t, limited, 1, "wait timeouts with a limit of 1")
	assert.Subset(t, want, limited, "wait timeouts with a limit of 1")
}

func testDriverWorkflowList(t *testing.T, d *DriverEnv) {
	a := d.insertWorkflow(newWorkflow("import", driver.WorkflowRunning))
	b := d.insertWorkflow(newWorkflow("import", driver.WorkflowCompleted))
	c := d.insertWorkflow(newWorkflow("export", driver.WorkflowRunning))
	e := d.insertWorkflow(newWorkflow("import", driver.WorkflowRunning))
	list := func(f driver.WorkflowFilter) []int64 {
		t.Helper()
		return workflowIDs(inTx(d, func(tx driver.Tx) ([]*driver.Workflow, error) { return tx.WorkflowList(d.Ctx, f) }))
	}
	assert.Equal(t, []int64{e, c, b, a}, list(driver.WorkflowFilter{}), "no filter: newest first")
	assert.Equal(t, []int64{e, c, a}, list(driver.WorkflowFilter{Status: driver.WorkflowRunning}), "status")
	assert.Equal(t, []int64{e, b, a}, list(driver.WorkflowFilter{Name: "import"}), "name")
	assert.Equal(t, []int64{e, a}, list(driver.WorkflowFilter{Name: "import", Status: driver.WorkflowRunning}), "name and status")
	assert.Equal(t, []int64{e, c}, list(driver.WorkflowFilter{Limit: 2}), "limit")
	assert.Empty(t, list(driver.WorkflowFilter{Name: "missing"}), "an unknown name")

	for i := range 105 {
		d.insertWorkflow(newWorkflow(fmt.Sprintf("bulk-%d", i%2), driver.WorkflowPaused))
	}
	assert.Len(t, list(driver.WorkflowFilter{Status: driver.WorkflowPaused}), 100, "rows listed without a limit")
	assert.Len(t, list(driver.WorkflowFilter{Status: driver.WorkflowPaused, Limit: 200}), 105, "rows listed with a limit of 200")
}

func testDriverWorkflowCounts(t *testing.T, d *DriverEnv) {
	for _, s := range []driver.WorkflowStatus{driver.WorkflowRunning, driver.WorkflowRunning, driver.WorkflowFailed,
		driver.WorkflowWaitingForSignal} {
		d.insertWorkflow(newWorkflow("wf", s))
	}
	counts := inTx(d, func(tx driver.Tx) (map[driver.WorkflowStatus]int64, error) { return tx.WorkflowCounts(d.Ctx) })
	assert.Equal(t, map[driver.WorkflowStatus]int64{driver.WorkflowRunning: 2, driver.WorkflowFailed: 1,
		driver.WorkflowWaitingForSignal: 1}, counts, "workflows by status")
}

func testDriverDispatchKeys(t *testing.T, d *DriverEnv) {
	first := d.insertWorkflow(newWorkflow("nightly", driver.WorkflowRunning))
	second := d.insertWorkflow(newWorkflow("nightly", driver.WorkflowRunning))
	get := func(key string) int64 {
		t.Helper()
		return inTx(d, func(tx driver.Tx) (int64, error) { return tx.DispatchKeyGet(d.Ctx, key) })
	}
	assert.Zero(t, get("report:2026-11-21"), "workflow of an unknown key")
	d.Tx(func(tx driver.Tx) error { return tx.DispatchKeyInsert(d.Ctx, "report:2026-11-21", first, Epoch) })
	assert.Equal(t, first, get("report:2026-11-21"), "workflow of the key")
	err := d.TxErr(func(tx driver.Tx) error { return tx.DispatchKeyInsert(d.Ctx, "report:2026-11-21", second, Epoch) })
	assert.ErrorIs(t, err, driver.ErrDuplicate, "a second insert of the key")
	assert.Equal(t, first, get("report:2026-11-21"), "workflow of the key after the duplicate")
	d.Tx(func(tx driver.Tx) error { return tx.DispatchKeyInsert(d.Ctx, "report:2026-11-22", second, Epoch) })
	assert.Equal(t, second, get("report:2026-11-22"), "workflow of another key")
}

func testDriverSignals(t *testing.T, d *DriverEnv) {
	wf := d.insertWorkflow(newWorkflow("wf", driver.WorkflowWaitingForSignal))
	other := d.insertWorkflow(newWorkflow("wf", driver.WorkflowWaitingForSignal))
	insert := func(wfID int64, name, payload string) *driver.Signal {
		t.Helper()
		s := &driver.Signal{WorkflowID: wfID, Name: name, Payload: []byte(payload), ReceivedAt: Epoch}
		d.Tx(func(tx driver.Tx) error { return tx.SignalInsert(d.Ctx, s) })
		require.NotZero(t, s.ID, "id of the inserted signal")
		return s
	}
	approve := insert(wf, "approve", `{"by":"ana"}`)
	insert(other, "approve", `{}`)
	reject := insert(wf, "reject", `{}`)
	again := insert(wf, "approve", `{"by":"bo"}`)
	assert.Greater(t, reject.ID, approve.ID, "signal ids increase")
	list := func(names ...string) []*driver.Signal {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Signal, error) { return tx.SignalList(d.Ctx, wf, names) })
	}
	ids := func(ss []*driver.Signal) []int64 {
		out := make([]int64, len(ss))
		for i, s := range ss {
			out[i] = s.ID
		}
		return out
	}
	all := list()
	assert.Equal(t, []int64{approve.ID, reject.ID, again.ID}, ids(all), "every signal of the workflow, in id order")
	assert.Equal(t, []int64{approve.ID, again.ID}, ids(list("approve")), "approve signals")
	assert.Equal(t, []int64{approve.ID, reject.ID, again.ID}, ids(list("approve", "reject")), "approve and reject signals")
	assert.Empty(t, list("missing"), "signals of an unknown name")
	require.Len(t, all, 3)
	assert.Equal(t, wf, all[0].WorkflowID, "workflow_id")
	assert.Equal(t, "approve", all[0].Name, "name")
	assert.JSONEq(t, `{"by":"ana"}`, string(all[0].Payload), "payload")
	assert.Equal(t, Epoch, all[0].ReceivedAt, "received_at")
}

func testDriverFailures(t *testing.T, d *DriverEnv) {
	step := 1
	insert := func(f *driver.Failure) int64 {
		t.Helper()
		d.Tx(func(tx driver.Tx) error { return tx.FailureInsert(d.Ctx, f) })
		require.NotZero(t, f.ID, "id of the inserted failure")
		return f.ID
	}
	wfFail := insert(&driver.Failure{WorkflowID: 8, JobID: 80, StepIndex: &step, Attempt: 2, RunNumber: 1,
		Category: driver.FailureTimeout, TimeoutKind: driver.TimeoutHeartbeat, NonRetryable: true, Message: "no heartbeat",
		ErrorClass: "TimeoutError", DeadlineAt: Epoch.Add(time.Microsecond), CreatedAt: Epoch.Add(2 * time.Microsecond)})
	jobFail := insert(&driver.Failure{JobID: 81, Attempt: 3, Category: driver.FailureApplication, Message: "boom", CreatedAt: Epoch})
	wfFail2 := insert(&driver.Failure{WorkflowID: 8, Category: driver.FailureCancelled, Message: "cancelled", CreatedAt: Epoch})
	assert.Greater(t, jobFail, wfFail, "failure ids increase")
	list := func(wfID, jobID int64) []*driver.Failure {
		t.Helper()
		return inTx(d, func(tx driver.Tx) ([]*driver.Failure, error) { return tx.FailureList(d.Ctx, wfID, jobID) })
	}
	ofWF := list(8, 0)
	require.Len(t, ofWF, 2, "failures of workflow 8")
	assert.Equal(t, wfFail, ofWF[0].ID, "first failure of workflow 8")
	assert.Equal(t, wfFail2, ofWF[1].ID, "second failure of workflow 8")
	f := ofWF[0]
	assert.Equal(t, int64(8), f.WorkflowID, "workflow_id")
	assert.Equal(t, int64(80), f.JobID, "job_id")
	if assert.NotNil(t, f.StepIndex, "step_index") {
		assert.Equal(t, 1, *f.StepIndex, "step_index")
	}
	assert.Equal(t, 2, f.Attempt, "attempt")
	assert.Equal(t, 1, f.RunNumber, "run_number")
	assert.Equal(t, driver.FailureTimeout, f.Category, "category")
	assert.Equal(t, driver.TimeoutHeartbeat, f.TimeoutKind, "timeout_kind")
	assert.True(t, f.NonRetryable, "non_retryable")
	assert.Equal(t, "no heartbeat", f.Message, "message")
	assert.Equal(t, "TimeoutError", f.ErrorClass, "error_class")
	assert.Equal(t, Epoch.Add(time.Microsecond), f.DeadlineAt, "deadline_at")
	assert.Equal(t, Epoch.Add(2*time.Microsecond), f.CreatedAt, "created_at")

	ofJob := list(0, 81)
	require.Len(t, ofJob, 1, "failures of job 81 (workflow id 0)")
	assert.Equal(t, jobFail, ofJob[0].ID, "failure of job 81")
	assert.Zero(t, ofJob[0].WorkflowID, "workflow_id of a plain job's failure")
	assert.Nil(t, ofJob[0].StepIndex, "step_index of a plain job's failure")
	assert.Empty(t, ofJob[0].TimeoutKind, "timeout_kind of an application failure")
	assert.False(t, ofJob[0].NonRetryable, "non_retryable")
	ofStep := list(0, 80)
	require.Len(t, ofStep, 1, "failures of job 80, a step of workflow 8")
	assert.Equal(t, wfFail, ofStep[0].ID, "failure of job 80")
	assert.Empty(t, list(9, 0), "failures of another workflow")
}

// testDriverWorkflowRunningPositions: WorkflowRunningPositions returns the
// id, current step and step count of running workflows after an id, in id
// order, up to the limit, and no workflow of another status.
func testDriverWorkflowRunningPositions(t *testing.T, d *DriverEnv) {
	at := func(status driver.WorkflowStatus, current, total int) int64 {
		wf := newWorkflow("wf", status)
		wf.CurrentStep, wf.TotalSteps = current, total
		return d.insertWorkflow(wf)
	}
	a := at(driver.WorkflowRunning, 0, 2)
	at(driver.WorkflowCompleted, 2, 2)
	b := at(driver.WorkflowRunning, 7, 3)
	at(driver.WorkflowPaused, 9, 1)
	c := at(driver.WorkflowRunning, 1, 1)
	read := func(after int64, limit int) []driver.WorkflowPosition {
		return inTx(d, func(tx driver.Tx) ([]driver.WorkflowPosition, error) {
			return tx.WorkflowRunningPositions(d.Ctx, after, limit)
		})
	}
	assert.Equal(t, []driver.WorkflowPosition{{ID: a, CurrentStep: 0, TotalSteps: 2}, {ID: b, CurrentStep: 7, TotalSteps: 3},
		{ID: c, CurrentStep: 1, TotalSteps: 1}}, read(0, 10), "all running workflows")
	assert.Equal(t, []driver.WorkflowPosition{{ID: b, CurrentStep: 7, TotalSteps: 3}}, read(a, 1), "after the first, limit 1")
	assert.Empty(t, read(c, 10), "after the last")
}
