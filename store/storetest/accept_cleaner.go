package storetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/retention"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Retention/CleanerKeepsYoungAndLiveRows", testCleanerKeeps)
	register("Retention/CleanerBatchesAreBounded", testCleanerBatches)
	register("Retention/CleanerOneAtATime", testCleanerOneAtATime)
	register("Retention/CleanerKeepsTablesBoundedForAMonth", testCleanerMonth)
}

const day = 24 * time.Hour

// cleanerPolicy is the worker's default policy, with buried jobs kept 14
// days.
func cleanerPolicy() retention.Policy {
	return retention.Policy{Completed: 7 * day, Buried: 14 * day, Logs: 7 * day, Workflows: 30 * day, Batches: 30 * day, BatchSize: 1000}
}

// pass runs one cleaner pass with p on e's client.
func (e *Env) pass(p retention.Policy) retention.Report {
	e.T.Helper()
	r, err := retention.New(e.eng, p).Pass(e.Ctx)
	require.NoError(e.T, err, "retention pass")
	return r
}

// gone asserts that job id no longer exists.
func (e *Env) jobGone(id int64, what string) {
	e.T.Helper()
	_, err := e.C.Job(e.Ctx, id)
	assert.ErrorIsf(e.T, err, queuetytype.ErrNotFound, "%s (job %d) should be deleted", what, id)
}

func (e *Env) workflowGone(id int64, what string) {
	e.T.Helper()
	_, err := e.C.Workflow(e.Ctx, id)
	assert.ErrorIsf(e.T, err, queuetytype.ErrNotFound, "%s (workflow %d) should be deleted", what, id)
}

func testCleanerKeeps(t *testing.T, e *Env) {
	w := e.Worker(nil)
	ok := func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"ok": true}, nil }
	w.HandleStep("a", ok)
	w.HandleStep("dep_a", ok)
	w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("bad", func(context.Context, queuety.Payload) error { return errors.New("no") })

	// Old rows: a completed and a buried job, a completed job another job
	// still waits for, finished workflows, and live workflows that hold
	// finished rows (a running one with a completed step, a waiter whose
	// finished dependency it still waits with, a parent of a finished child).
	oldDone := e.Dispatch("job", nil)
	oldBuried := e.Dispatch("bad", nil, queuety.MaxAttempts(1))
	depBase := e.Dispatch("job", nil)
	done := e.startB(builder.Workflow("wf").Then("a"), nil)
	require.NoError(t, e.C.PutArtifact(e.Ctx, done, "k", "v"))
	running := e.startB(builder.Workflow("wf").Then("a").Then("never"), nil)
	signalled := e.startB(builder.Workflow("wf").Then("a").WaitForSignal("go"), nil)
	deps := e.deps("dep_a", "dep_b")
	var after atomic.Int64
	waiter, ww := e.waiter(deps, &after)
	parent := e.startB(builder.Workflow("parent").RunWorkflow("child", builder.Workflow("child").Then("a")).Then("never"), nil)
	e.Drain(w)
	e.Drain(ww)
	dependent := e.Dispatch("job", nil, queuety.DependsOn(depBase), queuety.Delay(90*day))
	require.Equal(t, queuetytype.JobCompleted, e.Job(oldDone).Status)
	require.Equal(t, queuetytype.JobBuried, e.Job(oldBuried).Status)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(done).Status)
	require.Equal(t, queuetytype.WorkflowRunning, e.Workflow(running).Status)
	require.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(signalled).Status)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(deps[0]).Status)
	require.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(waiter).Status)
	child := e.oneChild(parent)
	require.Equal(t, queuetytype.WorkflowCompleted, child.Status)
	require.Equal(t, queuetytype.WorkflowRunning, e.Workflow(parent).Status)
	require.NotEmpty(t, e.Logs(driver.LogFilter{JobID: oldDone}))

	// Nothing is old yet.
	r := e.pass(cleanerPolicy())
	assert.Zero(t, r.Total(), "deleted at once: %v", r.Deleted)

	// 40 days on, with young rows beside them.
	e.Clock.Advance(40 * day)
	young := e.Dispatch("job", nil)
	youngBuried := e.Dispatch("bad", nil, queuety.MaxAttempts(1))
	youngWF := e.startB(builder.Workflow("wf").Then("a"), nil)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(youngWF).Status)
	wfOld := e.rowsOf(running)["jobs"]

	r = e.pass(cleanerPolicy())
	assert.False(t, r.Skipped)
	e.jobGone(oldDone, "old completed job")
	assert.Empty(t, e.Logs(driver.LogFilter{JobID: oldDone}), "the old job's logs")
	e.jobGone(oldBuried, "old buried job")
	e.workflowGone(done, "old completed workflow")
	assert.Equal(t, map[string]int{"jobs": 0, "events": 0, "chunks": 0, "signals": 0, "artifacts": 0}, e.rowsOf(done), "its rows")
	assert.Equal(t, int64(1), r.Deleted[retention.KindWorkflows], "workflows deleted: %v", r.Deleted)

	assert.Equal(t, queuetytype.JobCompleted, e.Job(depBase).Status, "a completed job a pending job depends on stays")
	assert.Equal(t, queuetytype.JobPending, e.Job(dependent).Status)
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(running).Status, "running workflow")
	assert.Equal(t, wfOld, e.rowsOf(running)["jobs"], "a running workflow keeps its completed steps")
	assert.Equal(t, 2, wfOld)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, e.Workflow(signalled).Status)
	assert.NotEmpty(t, e.rowsOf(signalled)["events"], "a waiting workflow keeps its events")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(deps[0]).Status, "a finished workflow a live one waits on stays")
	assert.Equal(t, queuetytype.WorkflowWaitingForWorkflows, e.Workflow(waiter).Status)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(child.ID).Status, "a finished child of a live parent stays")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(young).Status, "young completed job")
	assert.Equal(t, queuetytype.JobBuried, e.Job(youngBuried).Status, "young buried job")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(youngWF).Status, "young workflow")
	assert.NotEmpty(t, e.Logs(driver.LogFilter{JobID: young}), "young logs")

	// The waiter goes on once its other dependency ends, and then its
	// dependencies may go.
	e.finishDep("dep_b", nil, nil)
	e.Drain(ww)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(waiter).Status, "waiter")
	e.Clock.Advance(31 * day)
	e.pass(cleanerPolicy())
	e.workflowGone(deps[0], "a dependency once its waiter finished")
	e.workflowGone(waiter, "the finished waiter")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(depBase).Status, "still depended on")

	// A kind with no age is kept: buried jobs by default.
	keep := cleanerPolicy()
	keep.Buried = 0
	buried := e.Dispatch("bad", nil, queuety.MaxAttempts(1))
	e.Drain(w)
	require.Equal(t, queuetytype.JobBuried, e.Job(buried).Status)
	e.Clock.Advance(20 * day)
	e.pass(keep)
	assert.Equal(t, queuetytype.JobBuried, e.Job(buried).Status, "buried jobs are kept without an age")
	e.pass(cleanerPolicy())
	e.jobGone(buried, "buried job past its age")
}

func testCleanerBatches(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
	for range 25 {
		e.Dispatch("job", nil)
	}
	for range 12 {
		e.startB(builder.Workflow("wf").Then("job_step"), nil)
	}
	w.HandleStep("job_step", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	e.Clock.Advance(40 * day)
	p := cleanerPolicy()
	p.BatchSize = 10
	batches := map[string][]int64{}
	p.Deleted = func(kind string, n int64) { batches[kind] = append(batches[kind], n) }
	r := e.pass(p)
	assert.Equal(t, []int64{10, 10, 5}, batches[retention.KindCompleted], "completed jobs per transaction")
	assert.Equal(t, []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, batches[retention.KindWorkflows], "workflows per transaction (a tenth of the batch)")
	for _, n := range batches[retention.KindLogs] {
		assert.LessOrEqual(t, n, int64(10), "log rows per transaction")
	}
	assert.Equal(t, int64(25), r.Deleted[retention.KindCompleted])
	assert.Equal(t, int64(12), r.Deleted[retention.KindWorkflows])
	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs left")
	assert.Empty(t, e.Logs(driver.LogFilter{}), "logs left")

	// A spent budget ends the pass and says there is more.
	for range 25 {
		e.Dispatch("job", nil)
	}
	e.Drain(w)
	e.Clock.Advance(40 * day)
	p.Budget = time.Nanosecond
	batches = map[string][]int64{}
	r = e.pass(p)
	assert.True(t, r.More, "more left after the budget")
	assert.Equal(t, []int64{10}, batches[retention.KindCompleted], "one transaction within the budget")
}

func testCleanerOneAtATime(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
	for range 3 {
		e.Dispatch("job", nil)
	}
	e.Drain(w)
	e.Clock.Advance(40 * day)

	// While one cleaner runs a pass, another one (another process) skips.
	other := retention.New(clientseam.Engine(e.Client()), cleanerPolicy())
	var during []retention.Report
	p := cleanerPolicy()
	p.Deleted = func(string, int64) {
		r, err := other.Pass(e.Ctx)
		require.NoError(t, err)
		during = append(during, r)
	}
	e.pass(p)
	require.NotEmpty(t, during)
	for _, r := range during {
		assert.True(t, r.Skipped, "a second cleaner ran during a pass")
		assert.Zero(t, r.Total())
	}
	// Once the pass ended, the other may run.
	r, err := other.Pass(e.Ctx)
	require.NoError(t, err)
	assert.False(t, r.Skipped, "the lock is released after a pass")

	// A cleaner that died holding the lock holds the others back until
	// its lock expires (the budget and a minute).
	for range 3 {
		e.Dispatch("job", nil)
	}
	e.Drain(w)
	e.Clock.Advance(40 * day)
	held, err := e.eng.Locks().Acquire(e.Ctx, retention.LockKey, "0123456789abcdef0123456789abcdef", 6*time.Minute)
	require.NoError(t, err)
	require.True(t, held)
	r = e.pass(cleanerPolicy())
	assert.True(t, r.Skipped, "pass while the lock is held")
	assert.Len(t, e.Jobs(driver.JobFilter{Status: queuetytype.JobCompleted}), 3, "nothing deleted")
	e.Clock.Advance(7 * time.Minute)
	r = e.pass(cleanerPolicy())
	assert.False(t, r.Skipped, "pass after the dead holder's lock expired")
	assert.Equal(t, int64(3), r.Deleted[retention.KindCompleted])
}

// testCleanerMonth runs a month of daily work with a pass after each day
// and checks the tables stay bounded by the policy.
func testCleanerMonth(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.HandleJob("job", func(context.Context, queuety.Payload) error { return nil })
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	p := cleanerPolicy()
	p.Workflows = 10 * day
	for range 30 {
		for range 3 {
			e.Dispatch("job", nil)
		}
		e.startB(builder.Workflow("wf").Then("a").Then("a"), nil)
		e.Drain(w)
		e.Clock.Advance(day)
		e.pass(p)
		// At most the last 7 days of jobs (the 7th day's may be a second
		// short of the cutoff) and 10 days of workflows.
		assert.LessOrEqual(t, len(e.Jobs(driver.JobFilter{Handler: "job"})), 3*8, "plain jobs")
		assert.LessOrEqual(t, len(e.Workflows(driver.WorkflowFilter{})), 11, "workflows")
	}
	assert.GreaterOrEqual(t, len(e.Workflows(driver.WorkflowFilter{})), 10, "young workflows stay")
}
