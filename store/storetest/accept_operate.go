package storetest

// The acceptance cases of the operator actions behind the queuety-worker
// verbs that mirror wp queuety's: bury, delete, retry-buried, recover, log
// purge, metrics and schedule removal by handler.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Operate/BuryJob", testBuryJob)
	register("Operate/BuryWorkflowStep", testBuryWorkflowStep)
	register("Operate/DeleteJob", testDeleteJob)
	register("Operate/RetryBuried", testRetryBuriedFilter)
	register("Operate/RetryBuriedBatches", testRetryBuriedBatches)
	register("Operate/RecoverStale", testRecoverStaleClient)
	register("Operate/PurgeLogs", testPurgeLogs)
	register("Operate/HandlerMetrics", testHandlerMetrics)
	register("Operate/RemoveScheduleByHandler", testRemoveScheduleByHandler)
}

// insertLogs writes log rows directly, as Queuety PHP's Logger would.
func (e *Env) insertLogs(entries ...*driver.LogEntry) {
	e.T.Helper()
	require.NoError(e.T, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error { return tx.LogInsert(e.Ctx, entries) }), "insert logs")
}

// testBuryJob: a manual bury writes the row wp queuety bury writes
// (status, failed_at, error_message; attempts and the rest untouched) and
// no log row; completed and buried jobs are refused, and the attempt that
// was running loses its job.
func testBuryJob(t *testing.T, e *Env) {
	id := e.Dispatch("h", queuety.State{"n": 1}, queuety.MaxAttempts(5))
	before := e.Job(id)
	e.Clock.Advance(1500 * time.Millisecond)
	require.NoError(t, e.C.BuryJob(e.Ctx, id, ""))
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, Epoch.Add(time.Second), j.FailedAt, "failed_at: now, in whole seconds")
	assert.Equal(t, "Manually buried via CLI.", j.ErrorMessage, "error_message")
	assert.Equal(t, before.Attempts, j.Attempts, "attempts")
	assert.Equal(t, before.AvailableAt, j.AvailableAt, "available_at")
	assert.Equal(t, before.Payload, j.Payload, "payload")
	assert.Empty(t, e.Logs(driver.LogFilter{JobID: id}), "log rows (wp queuety bury writes none)")
	require.ErrorIs(t, e.C.BuryJob(e.Ctx, id, ""), queuetytype.ErrInvalidState, "bury a buried job")
	require.ErrorIs(t, e.C.BuryJob(e.Ctx, 999999, ""), queuetytype.ErrNotFound, "bury a missing job")

	done := e.Dispatch("done", nil)
	e.completeAll(e.ClaimOne("done"), done)
	require.ErrorIs(t, e.C.BuryJob(e.Ctx, done, ""), queuetytype.ErrInvalidState, "bury a completed job")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(done).Status, "the completed job")

	running := e.Dispatch("slow", nil)
	claim := e.ClaimOne("slow")
	require.NoError(t, e.C.BuryJob(e.Ctx, running, "poison payload"))
	assert.Equal(t, "poison payload", e.Job(running).ErrorMessage, "custom message")
	require.ErrorIs(t, e.Complete(claim...)[0], queuetytype.ErrStaleAttempt, "the late result of the buried job's attempt")
	assert.Equal(t, queuetytype.JobBuried, e.Job(running).Status, "status after the late result")
}

// testBuryWorkflowStep: burying a running workflow's step is a step that
// ran out of attempts: the workflow fails (and can be retried), logged as
// Queuety logs a failed workflow.
func testBuryWorkflowStep(t *testing.T, e *Env) {
	id := e.Start(queuety.WorkflowDefinition{Name: "crm", Steps: steps("a", "b")}, nil)
	step := e.OneJob(driver.JobFilter{WorkflowID: id})
	require.NoError(t, e.C.BuryJob(e.Ctx, step.ID, ""))
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "workflow status")
	assert.Equal(t, queuetytype.ManualBuryMessage, wf.ErrorMessage, "workflow error")
	failed := e.Logs(driver.LogFilter{WorkflowID: id, Event: driver.LogWorkflowFailed})
	if assert.Len(t, failed, 1, "workflow_failed rows") {
		require.NotNil(t, failed[0].JobID, "workflow_failed job_id")
		assert.Equal(t, step.ID, *failed[0].JobID, "workflow_failed names the buried job")
	}
	assert.Equal(t, queuetytype.JobBuried, e.Job(step.ID).Status, "step job")

	require.NoError(t, e.C.RetryWorkflow(e.Ctx, id), "retry after a manual bury")
	w := e.Worker(nil)
	for _, h := range []string{"a", "b"} {
		w.HandleStep(h, func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	}
	e.Drain(w)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "workflow after retry")
}

// testDeleteJob: delete removes the row and keeps its log rows; an open
// step of a live workflow is refused, one of an ended workflow is not.
func testDeleteJob(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil)
	e.completeAll(e.ClaimOne("h"), id)
	logs := len(e.Logs(driver.LogFilter{JobID: id}))
	require.NotZero(t, logs, "the job's log rows")
	require.NoError(t, e.C.DeleteJob(e.Ctx, id))
	_, err := e.C.Job(e.Ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "deleted job")
	assert.Len(t, e.Logs(driver.LogFilter{JobID: id}), logs, "log rows kept")
	require.ErrorIs(t, e.C.DeleteJob(e.Ctx, id), queuetytype.ErrNotFound, "delete twice")

	pending := e.Dispatch("h", nil)
	require.NoError(t, e.C.DeleteJob(e.Ctx, pending), "delete a pending plain job")

	wf := e.Start(queuety.WorkflowDefinition{Name: "crm", Steps: steps("a")}, nil)
	step := e.OneJob(driver.JobFilter{WorkflowID: wf})
	require.ErrorIs(t, e.C.DeleteJob(e.Ctx, step.ID), queuetytype.ErrInvalidState, "delete the open step of a running workflow")
	assert.Equal(t, queuetytype.JobPending, e.Job(step.ID).Status, "the refused step")
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, wf))
	require.NoError(t, e.C.DeleteJob(e.Ctx, step.ID), "delete a step of a cancelled workflow")
}

// testRetryBuriedFilter: RetryBuried retries the buried plain jobs of the
// filter, each as RetryJob does, and leaves workflow steps and other jobs.
func testRetryBuriedFilter(t *testing.T, e *Env) {
	bury := func(id int64) {
		t.Helper()
		require.NoError(t, e.C.BuryJob(e.Ctx, id, ""))
	}
	mail1 := e.Dispatch("send", nil, queuety.OnQueue("mail"), queuety.MaxAttempts(1))
	mail2 := e.Dispatch("other", nil, queuety.OnQueue("mail"))
	def := e.Dispatch("send", nil)
	live := e.Dispatch("send", nil, queuety.OnQueue("mail"))
	// mail1 runs out of attempts the way a worker buries it.
	require.NoError(t, e.Fail(e.ClaimFrom(e.C, []string{"mail"}, 1, "send")[0], errors.New("smtp down")))
	require.Equal(t, queuetytype.JobBuried, e.Job(mail1).Status, "mail1 buried by its failure")
	bury(mail2)
	bury(def)
	wf := e.Start(queuety.WorkflowDefinition{Name: "crm", Steps: steps("a")}, nil)
	step := e.OneJob(driver.JobFilter{WorkflowID: wf})
	bury(step.ID)

	e.Clock.Advance(time.Minute)
	n, err := e.C.RetryBuried(e.Ctx, queuetytype.BuriedFilter{Queue: "mail", Handler: "send"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "retried with queue and handler")
	j := e.Job(mail1)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status")
	assert.Equal(t, 0, j.Attempts, "attempts reset")
	assert.Equal(t, Epoch.Add(time.Minute), j.AvailableAt, "due now")
	assert.Empty(t, j.ErrorMessage, "error_message cleared")
	assert.True(t, j.FailedAt.IsZero(), "failed_at cleared")
	assert.True(t, j.ReservedAt.IsZero(), "reserved_at cleared")
	retried := e.Logs(driver.LogFilter{JobID: mail1, Event: driver.LogRetried})
	if assert.NotEmpty(t, retried, "retried log rows") {
		last := retried[len(retried)-1]
		assert.JSONEq(t, `{"type":"manual_retry","attempts_reset":true}`, string(last.Context), "context")
		assert.Equal(t, "mail", last.Queue, "queue")
		assert.Equal(t, "send", last.Handler, "handler")
	}
	assert.Equal(t, queuetytype.JobBuried, e.Job(mail2).Status, "other handler left")
	assert.Equal(t, queuetytype.JobBuried, e.Job(def).Status, "other queue left")
	assert.Equal(t, queuetytype.JobPending, e.Job(live).Status, "pending job untouched")

	n, err = e.C.RetryBuried(e.Ctx, queuetytype.BuriedFilter{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "retried without a filter")
	assert.Equal(t, queuetytype.JobPending, e.Job(mail2).Status, "mail2")
	assert.Equal(t, queuetytype.JobPending, e.Job(def).Status, "def")
	assert.Equal(t, queuetytype.JobBuried, e.Job(step.ID).Status, "workflow step left for workflow retry")
	n, err = e.C.RetryBuried(e.Ctx, queuetytype.BuriedFilter{})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left to retry")
}

// testRetryBuriedBatches: more buried jobs than one batch are all retried.
func testRetryBuriedBatches(t *testing.T, e *Env) {
	reqs := make([]queuety.JobRequest, 230)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "bulk", Payload: queuety.State{"i": i}}
	}
	ids, err := e.C.DispatchMany(e.Ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids[:210] {
		require.NoError(t, e.C.BuryJob(e.Ctx, id, ""))
	}
	n, err := e.C.RetryBuried(e.Ctx, queuetytype.BuriedFilter{Handler: "bulk"})
	require.NoError(t, err)
	assert.Equal(t, int64(210), n, "retried")
	assert.Empty(t, e.Jobs(driver.JobFilter{Status: queuetytype.JobBuried}), "buried jobs left")
	assert.Len(t, e.Jobs(driver.JobFilter{Status: queuetytype.JobPending, Limit: 1000}), 230, "pending jobs")
}

// testRecoverStaleClient: Client.RecoverStale retries a job whose worker
// died and, once its attempts are used up, buries it with Queuety's stale
// message and log rows.
func testRecoverStaleClient(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(1))
	retry := e.Dispatch("h", nil, queuety.MaxAttempts(3))
	e.Claim(2, "h")
	n, err := e.C.RecoverStale(e.Ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "fresh claims recovered")
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout + time.Second)
	n, err = e.C.RecoverStale(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "recovered")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "job without attempts left")
	assert.Equal(t, queuetytype.StaleMessage, j.ErrorMessage, "error")
	buried := e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried})
	if assert.Len(t, buried, 1, "buried rows") {
		assert.Equal(t, queuetytype.StaleMessage, buried[0].ErrorMessage, "buried row error")
	}
	assert.Equal(t, queuetytype.JobPending, e.Job(retry).Status, "job with attempts left")
	assert.Equal(t, "retried", strings.Join(e.Events(driver.LogFilter{JobID: retry}), ","), "log of the retried job")
}

// testPurgeLogs: PurgeLogs deletes the log rows created before the cut-off
// and keeps the rest.
func testPurgeLogs(t *testing.T, e *Env) {
	var old []*driver.LogEntry
	for i := range 1005 { // more than one batch
		old = append(old, &driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: Epoch.Add(-time.Duration(i+1) * time.Minute)})
	}
	e.insertLogs(old...)
	e.Clock.Advance(10 * 24 * time.Hour)
	recent := e.Clock.Now().Add(-2 * 24 * time.Hour)
	e.insertLogs(&driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: recent},
		&driver.LogEntry{Handler: "h", Event: driver.LogFailed, CreatedAt: e.Clock.Now()})
	n, err := e.C.PurgeLogs(e.Ctx, 7*24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(1005), n, "deleted")
	left := e.Logs(driver.LogFilter{})
	require.Len(t, left, 2, "rows left")
	assert.Equal(t, recent, left[0].CreatedAt, "the row of two days ago")
	n, err = e.C.PurgeLogs(e.Ctx, 7*24*time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n, "second purge")
	_, err = e.C.PurgeLogs(e.Ctx, -time.Hour)
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "negative age")
}

// testHandlerMetrics: the per-handler numbers Queuety's
// Metrics::handler_stats computes from the same rows.
func testHandlerMetrics(t *testing.T, e *Env) {
	now := e.Clock.Now()
	ms := func(v int64) *int64 { return &v }
	var rows []*driver.LogEntry
	for i := int64(1); i <= 10; i++ {
		rows = append(rows, &driver.LogEntry{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(i * 10), CreatedAt: now})
	}
	rows = append(rows,
		&driver.LogEntry{Handler: "a", Event: driver.LogCompleted, CreatedAt: now}, // no duration: counted, not averaged
		&driver.LogEntry{Handler: "a", Event: driver.LogFailed, CreatedAt: now},
		&driver.LogEntry{Handler: "a", Event: driver.LogFailed, CreatedAt: now},
		&driver.LogEntry{Handler: "a", Event: driver.LogBuried, CreatedAt: now},
		&driver.LogEntry{Handler: "a", Event: driver.LogStarted, CreatedAt: now},                                             // not counted
		&driver.LogEntry{Handler: "a", Event: driver.LogCompleted, DurationMS: ms(9999), CreatedAt: now.Add(-2 * time.Hour)}, // outside the window
		&driver.LogEntry{Handler: "b", Event: driver.LogBuried, CreatedAt: now},
		&driver.LogEntry{Handler: "c", Event: driver.LogCompleted, DurationMS: ms(1), CreatedAt: now},
		&driver.LogEntry{Handler: "c", Event: driver.LogCompleted, DurationMS: ms(2), CreatedAt: now},
		&driver.LogEntry{Handler: "c", Event: driver.LogCompleted, DurationMS: ms(2), CreatedAt: now.Add(-59 * time.Minute)},
		&driver.LogEntry{Handler: "", Event: driver.LogCompleted, DurationMS: ms(5), CreatedAt: now}, // no handler
		&driver.LogEntry{WorkflowID: 3, Event: driver.LogWorkflowFailed, CreatedAt: now},
	)
	e.insertLogs(rows...)
	got, err := e.C.HandlerMetrics(e.Ctx, time.Hour)
	require.NoError(t, err)
	want := []queuetytype.HandlerMetric{
		{Handler: "a", Completed: 11, Failed: 3, AvgMS: 55, P95MS: 100, ErrorRate: 0.2143},
		{Handler: "b", Completed: 0, Failed: 1, ErrorRate: 1},
		{Handler: "c", Completed: 3, AvgMS: 1.67, P95MS: 2},
	}
	assert.Equal(t, want, got, "metrics of the last hour")
	got, err = e.C.HandlerMetrics(e.Ctx, 3*time.Hour)
	require.NoError(t, err)
	require.Len(t, got, 3, "handlers in 3 hours")
	assert.Equal(t, int64(12), got[0].Completed, "a in 3 hours")
	assert.Equal(t, float64(9999), got[0].P95MS, "p95 in 3 hours: the slowest of 11")
	_, err = e.C.HandlerMetrics(e.Ctx, 0)
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "zero window")
}

// testRemoveScheduleByHandler: a schedule is removed by its handler name,
// as wp queuety schedule remove does; an unknown handler is not found.
func testRemoveScheduleByHandler(t *testing.T, e *Env) {
	id, err := e.C.Schedule("cleanup", nil).Every(time.Hour).Save(e.Ctx)
	require.NoError(t, err)
	keep, err := e.C.Schedule("report", nil).Cron("0 3 * * *").Save(e.Ctx)
	require.NoError(t, err)
	got, err := e.C.RemoveScheduleByHandler(e.Ctx, "cleanup")
	require.NoError(t, err)
	assert.Equal(t, id, got, "removed schedule id")
	_, err = e.C.ScheduleByID(e.Ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "removed schedule")
	_, err = e.C.ScheduleByID(e.Ctx, keep)
	require.NoError(t, err, "other schedule kept")
	_, err = e.C.RemoveScheduleByHandler(e.Ctx, "cleanup")
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "remove twice")
	require.ErrorContains(t, err, fmt.Sprintf("%q", "cleanup"), "the error names the handler")
}
