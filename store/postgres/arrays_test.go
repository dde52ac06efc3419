package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// TestBatchStatementsKeepOneText: a batch's multi-row statements (its
// next jobs, log rows (a step's and a plain job's) and events, the completion of its claimed jobs,
// the read of its workflows) have one text whatever their row count, so
// the connection prepares each once and the server plans it without a
// node a value: batches of 1 to 6 rows leave one prepared statement of
// each. The rows read back as written, each insert's ids in the order of
// its rows.
func TestBatchStatementsKeepOneText(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, sq := clientAndStore(ctx, t) // the client migrates the database
	tx, err := sq.SQLDB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	w := sq.WrapTx(tx)

	now := time.Now().UTC().Truncate(time.Second)
	const wfID = 77
	for n := 1; n <= 6; n++ {
		jobs := make([]*driver.Job, n)
		for i := range jobs {
			step := i % 3
			jobs[i] = &driver.Job{Queue: "default", Handler: "h", Payload: []byte(fmt.Sprintf(`{"n":%d,"i":%d}`, n, i)), MaxAttempts: 3,
				AvailableAt: now.Add(-time.Second), CreatedAt: now, WorkflowID: wfID, StepIndex: &step, CostUnits: 1}
		}
		require.NoError(t, w.JobInsert(ctx, jobs))
		ids := make([]int64, n)
		for i, j := range jobs {
			ids[i] = j.ID
			if i > 0 {
				require.Greater(t, j.ID, jobs[i-1].ID, "ids in the order of the rows")
			}
		}
		got, err := w.JobGetMany(ctx, ids, driver.LockNone)
		require.NoError(t, err)
		require.Len(t, got, n)
		for i, j := range got {
			assert.Equal(t, ids[i], j.ID)
			assert.Equal(t, fmt.Sprintf(`{"n":%d,"i":%d}`, n, i), string(j.Payload))
			assert.EqualValues(t, wfID, j.WorkflowID)
			assert.Equal(t, i%3, *j.StepIndex)
			assert.Equal(t, driver.JobPending, j.Status)
		}

		claimed, err := w.JobClaim(ctx, driver.ClaimParams{Queue: "default", Handlers: []string{"h"}, Limit: n, Now: now, Token: int64(256 * n)})
		require.NoError(t, err)
		require.Len(t, claimed, n)
		done, err := w.JobCompleteClaimed(ctx, ids, claimed[0].ClaimToken, claimed[0].Attempts, now)
		require.NoError(t, err)
		require.EqualValues(t, n, done)

		var logs []*driver.LogEntry
		var events []*driver.WorkflowEvent
		for i, id := range ids {
			jobID, attempt, step, ms := id, 1, i%3, int64(i)
			logs = append(logs, &driver.LogEntry{JobID: &jobID, WorkflowID: wfID, StepIndex: &step, Handler: "h", Event: driver.LogCompleted,
				Attempt: &attempt, DurationMS: &ms, CreatedAt: now})
			events = append(events, &driver.WorkflowEvent{WorkflowID: wfID, JobID: id, StepIndex: step, Handler: "h", Event: "step_completed",
				Attempt: &attempt, StateBefore: []byte(`{"a":1}`), StateAfter: []byte(fmt.Sprintf(`{"a":%d}`, i)), DurationMS: &ms, CreatedAt: now})
		}
		require.NoError(t, w.LogInsert(ctx, logs))
		var plain []*driver.LogEntry // a plain job's rows
		for _, id := range ids {
			jobID, attempt := id, 1
			plain = append(plain, &driver.LogEntry{JobID: &jobID, Handler: "h", Queue: "q", Event: driver.LogStarted, Attempt: &attempt, CreatedAt: now})
		}
		require.NoError(t, w.LogInsert(ctx, plain))
		require.NoError(t, w.EventInsert(ctx, events))
		_, err = w.WorkflowGetMany(ctx, ids, driver.LockNone)
		require.NoError(t, err)

		read, err := w.LogList(ctx, driver.LogFilter{JobIDs: ids})
		require.NoError(t, err)
		require.Len(t, read, 2*n)
		for i, l := range read[n:] {
			assert.Equal(t, ids[i], *l.JobID)
			assert.Zero(t, l.WorkflowID)
			assert.Nil(t, l.StepIndex)
			assert.Equal(t, "q", l.Queue)
			assert.Equal(t, driver.LogStarted, l.Event)
			assert.Nil(t, l.DurationMS)
		}
		for i, l := range read[:n] {
			assert.Equal(t, ids[i], *l.JobID)
			assert.EqualValues(t, wfID, l.WorkflowID)
			assert.Equal(t, i%3, *l.StepIndex)
			assert.Equal(t, "default", l.Queue)
			assert.EqualValues(t, i, *l.DurationMS)
			assert.True(t, l.CreatedAt.Equal(now))
		}
	}
	evs, err := w.EventList(ctx, wfID)
	require.NoError(t, err)
	require.Len(t, evs, 21)
	assert.Equal(t, `{"a":5}`, string(evs[20].StateAfter))
	assert.Equal(t, `{"a":1}`, string(evs[20].StateBefore))

	rows, err := tx.QueryContext(ctx, "SELECT statement FROM pg_prepared_statements")
	require.NoError(t, err)
	texts := map[string]int{}
	for rows.Next() {
		var st string
		require.NoError(t, rows.Scan(&st))
		for _, head := range []string{"INSERT INTO queuety_jobs ", "INSERT INTO queuety_logs (job_id, workflow_id", "INSERT INTO queuety_logs (job_id, handler",
			"INSERT INTO queuety_workflow_events ",
			"UPDATE queuety_jobs SET status = 'completed'", "SELECT id, name, status, state"} {
			if strings.HasPrefix(st, head) {
				texts[head]++
			}
		}
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]int{"INSERT INTO queuety_jobs ": 1, "INSERT INTO queuety_logs (job_id, workflow_id": 1,
		"INSERT INTO queuety_logs (job_id, handler": 1, "INSERT INTO queuety_workflow_events ": 1,
		"UPDATE queuety_jobs SET status = 'completed'": 1, "SELECT id, name, status, state": 1}, texts)
}
