package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Retention/PruneWorkflowEvents", testPruneWorkflowEvents)
	register("Retention/PurgeFinishedWorkflows", testPurgeWorkflows)
}

// rowsOf counts a workflow's rows in the tables a purge empties.
func (e *Env) rowsOf(id int64) map[string]int {
	e.T.Helper()
	out := map[string]int{}
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		jobs, err := tx.JobListByWorkflow(e.Ctx, id, nil, driver.LockNone)
		if err != nil {
			return err
		}
		events, err := tx.EventList(e.Ctx, id)
		if err != nil {
			return err
		}
		chunks, err := tx.ChunkListWorkflow(e.Ctx, id, 0, 1000)
		if err != nil {
			return err
		}
		signals, err := tx.SignalList(e.Ctx, id, nil)
		if err != nil {
			return err
		}
		artifacts, err := tx.ArtifactCount(e.Ctx, id)
		if err != nil {
			return err
		}
		out["jobs"], out["events"], out["chunks"], out["signals"], out["artifacts"] = len(jobs), len(events), len(chunks), len(signals), int(artifacts)
		return nil
	})
	require.NoError(e.T, err)
	return out
}

func testPruneWorkflowEvents(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"ok": true}, nil })
	old := e.startB(builder.Workflow("wf").Then("a").Then("a"), nil)
	e.Drain(w)
	e.Clock.Advance(40 * 24 * time.Hour)
	recent := e.startB(builder.Workflow("wf").Then("a"), nil)
	e.Drain(w)
	require.Len(t, e.events(old), 4)
	require.Len(t, e.events(recent), 2)

	n, err := e.C.PruneWorkflowEvents(e.Ctx, 30*24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(4), n, "events older than 30 days")
	assert.Empty(t, e.events(old))
	assert.Len(t, e.events(recent), 2, "recent events stay")
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(old).Status, "the workflow stays")
	n, err = e.C.PruneWorkflowEvents(e.Ctx, 30*24*time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = e.C.PruneWorkflowEvents(e.Ctx, -time.Second)
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
}

func testPurgeWorkflows(t *testing.T, e *Env) {
	w := e.Worker(nil)
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"ok": true}, nil })
	w.HandleStep("fail", func(context.Context, queuety.State) (queuety.State, error) {
		return nil, queuety.NonRetryable(assert.AnError)
	})
	// More than one batch of finished workflows, a failed one, a
	// cancelled one, and a running one, all old.
	var done []int64
	for range 101 {
		done = append(done, e.startB(builder.Workflow("wf").Then("a"), nil))
	}
	failed := e.startB(builder.Workflow("wf").Then("fail"), nil)
	e.Drain(w)
	cancelled := e.startB(builder.Workflow("wf").Then("a"), nil)
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, cancelled))
	running := e.startB(builder.Workflow("wf").Then("never"), nil)
	// Rows that belong to the first workflow besides its jobs and events.
	require.NoError(t, e.C.PutArtifact(e.Ctx, done[0], "k", "v"))
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		if err := tx.ChunkInsert(e.Ctx, &driver.Chunk{JobID: 1, WorkflowID: done[0], ChunkIndex: 0, Content: "left", CreatedAt: Epoch}); err != nil {
			return err
		}
		return tx.SignalInsert(e.Ctx, &driver.Signal{WorkflowID: done[0], Name: "s", Payload: []byte("[]"), ReceivedAt: Epoch})
	}))
	require.Equal(t, map[string]int{"jobs": 1, "events": 2, "chunks": 1, "signals": 1, "artifacts": 1}, e.rowsOf(done[0]))
	require.Equal(t, queuetytype.WorkflowFailed, e.Workflow(failed).Status)
	require.Equal(t, queuetytype.WorkflowCancelled, e.Workflow(cancelled).Status)

	e.Clock.Advance(10 * 24 * time.Hour)
	recent := e.startB(builder.Workflow("wf").Then("a"), nil)
	e.Drain(w)
	require.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(recent).Status)

	n, err := e.C.PurgeWorkflows(e.Ctx, 7*24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(103), n, "101 completed, 1 failed, 1 cancelled")
	for _, id := range append(done, failed, cancelled) {
		_, err := e.C.Workflow(e.Ctx, id)
		require.ErrorIs(t, err, queuetytype.ErrNotFound, "workflow %d", id)
	}
	assert.Equal(t, map[string]int{"jobs": 0, "events": 0, "chunks": 0, "signals": 0, "artifacts": 0}, e.rowsOf(done[0]), "its rows")
	assert.Equal(t, queuetytype.WorkflowRunning, e.Workflow(running).Status, "a running workflow stays")
	assert.Equal(t, 1, e.rowsOf(running)["jobs"])
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(recent).Status, "a recent one stays")
	assert.Equal(t, 2, e.rowsOf(recent)["events"])
	assert.NotEmpty(t, e.Logs(driver.LogFilter{WorkflowID: done[0]}), "log rows stay for PurgeLogs")
	n, err = e.C.PurgeWorkflows(e.Ctx, 7*24*time.Hour)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = e.C.PurgeWorkflows(e.Ctx, -time.Second)
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
}
