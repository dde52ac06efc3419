package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of driver.IdleReader, on the stores that offer it.
func init() {
	registerDriver("Idle/NextDueAndMaintenanceDue", testDriverIdleReads)
}

func testDriverIdleReads(t *testing.T, d *DriverEnv) {
	r, ok := d.S.(driver.IdleReader)
	if !ok {
		t.Skip("the store has no idle reads")
	}
	p := claimParams("default", Epoch, 1, "h")
	_, found, err := r.JobNextDue(d.Ctx, p)
	require.NoError(t, err)
	assert.False(t, found, "next due in an empty table")
	later := newJob("default", "h")
	later.AvailableAt = Epoch.Add(time.Minute)
	d.insertJob(later)
	sooner := newJob("default", "other")
	sooner.AvailableAt = Epoch
	d.insertJob(sooner) // a handler the claim does not take
	at, found, err := r.JobNextDue(d.Ctx, p)
	require.NoError(t, err)
	require.True(t, found, "next due")
	assert.True(t, at.Equal(Epoch.Add(time.Minute)), "next due at %s", at)

	next, buffered, err := r.ScheduleNextDueRead(d.Ctx)
	require.NoError(t, err)
	assert.True(t, next.IsZero(), "no schedule")
	assert.False(t, buffered, "no buffered firing")

	m, err := r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.False(t, m.Unreserved)
	assert.True(t, m.Reserved.IsZero() && m.Activity.IsZero() && m.Wait.IsZero() && m.MachineTimer.IsZero(), "nothing armed: %+v", m)
	running := newJob("default", "h")
	running.Status = driver.JobProcessing
	reserved := Epoch.Add(-time.Minute)
	running.ReservedAt = reserved
	d.insertJob(running)
	m, err = r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.True(t, m.Reserved.Equal(reserved), "earliest reserved_at %s", m.Reserved)
	assert.True(t, m.Deadline.IsZero() && m.FailedDeadline.IsZero() && m.Failed.IsZero() && m.Cancelled.IsZero() &&
		m.BatchFinished.IsZero() && m.WorkerHeartbeat.IsZero(), "no workflow, batch or worker: %+v", m)
	assert.False(t, m.Running || m.WaitingForWorkflows || m.BatchOpen, "no workflow or batch: %+v", m)

	// The workflows, batches and workers the 60 s sweeps and the
	// registry's prune look for.
	atMin := func(n int) time.Time { return Epoch.Add(time.Duration(n) * time.Minute) }
	paused := newWorkflow("paused", driver.WorkflowPaused)
	paused.DeadlineAt = atMin(30)
	d.insertWorkflow(paused)
	run := newWorkflow("running", driver.WorkflowRunning)
	run.DeadlineAt, run.RunDeadlineAt = atMin(40), atMin(20)
	d.insertWorkflow(run)
	done := newWorkflow("done", driver.WorkflowCompleted)
	done.DeadlineAt = atMin(1) // terminal: no deadline applies
	d.insertWorkflow(done)
	failed := newWorkflow("failed", driver.WorkflowFailed)
	failed.DeadlineAt, failed.FailedAt = atMin(5), atMin(6)
	d.insertWorkflow(failed)
	failedEarlier := newWorkflow("failed", driver.WorkflowFailed)
	failedEarlier.DeadlineAt, failedEarlier.FailedAt = atMin(2), atMin(3)
	d.insertWorkflow(failedEarlier)
	cancelled := newWorkflow("cancelled", driver.WorkflowCancelled)
	cancelled.CompletedAt = atMin(7)
	d.insertWorkflow(cancelled)
	// WorkflowInsert writes no end times: an update does.
	for _, wf := range []*driver.Workflow{failed, failedEarlier, cancelled} {
		d.Tx(func(tx driver.Tx) error { return tx.WorkflowUpdate(d.Ctx, wf) })
	}
	d.insertBatch(&driver.Batch{TotalJobs: 1, FinishedAt: atMin(8)})
	d.Tx(func(tx driver.Tx) error {
		return tx.WorkerSave(d.Ctx, &queuetytype.Worker{ID: "w1", Host: "h", Version: "v", HeartbeatInterval: time.Second,
			StartedAt: atMin(0), LastHeartbeat: atMin(9)})
	})
	m, err = r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.True(t, m.Deadline.Equal(atMin(20)), "earliest deadline %s", m.Deadline)
	assert.True(t, m.FailedDeadline.Equal(atMin(5)), "latest deadline of a failed workflow %s", m.FailedDeadline)
	assert.True(t, m.Failed.Equal(atMin(6)), "latest failed_at %s", m.Failed)
	assert.True(t, m.Cancelled.Equal(atMin(7)), "latest cancellation %s", m.Cancelled)
	assert.True(t, m.Running, "a running workflow")
	assert.False(t, m.WaitingForWorkflows, "no workflow waits for workflows")
	assert.False(t, m.BatchOpen, "every batch finished")
	assert.True(t, m.BatchFinished.Equal(atMin(8)), "latest finished batch %s", m.BatchFinished)
	assert.True(t, m.WorkerHeartbeat.Equal(atMin(9)), "earliest worker heartbeat %s", m.WorkerHeartbeat)
	d.insertBatch(&driver.Batch{TotalJobs: 1})
	d.insertWorkflow(newWorkflow("waiting", driver.WorkflowWaitingForWorkflows))
	m, err = r.MaintenanceDue(d.Ctx)
	require.NoError(t, err)
	assert.True(t, m.BatchOpen, "an open batch")
	assert.True(t, m.WaitingForWorkflows, "a workflow waits for workflows")
}
