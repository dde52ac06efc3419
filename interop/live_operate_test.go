package interop_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// TestLiveOperatorVerbs runs the operator actions of `wp queuety` in real
// Queuety PHP and their Go counterparts on twin rows of one set of tables,
// and compares the rows each side leaves: bury, delete, retry-buried,
// schedule remove, log purge and the per-handler metrics.
func TestLiveOperatorVerbs(t *testing.T) {
	t.Run("bury", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		phpID, goID := twinJobs(t, c)
		php.eval(`\Queuety\Queuety::bury_job(` + strconv.FormatInt(phpID, 10) + `);`)
		require.NoError(t, c.BuryJob(ctx, goID, ""))
		want, got := readJob(t, c, phpID), readJob(t, c, goID)
		assert.Equal(t, queuetytype.JobBuried, want.Status, "PHP's status")
		assert.Equal(t, "Manually buried via CLI.", want.ErrorMessage, "PHP's message")
		sameJobRow(t, want, got)
		assert.Empty(t, jobLogs(t, c, phpID), "PHP's log rows")
		assert.Empty(t, jobLogs(t, c, goID), "Go's log rows")
	})
	t.Run("delete", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		phpID, goID := twinJobs(t, c)
		php.eval(`\Queuety\Queuety::delete_job(` + strconv.FormatInt(phpID, 10) + `);`)
		require.NoError(t, c.DeleteJob(ctx, goID))
		for _, id := range []int64{phpID, goID} {
			_, err := c.Job(ctx, id)
			assert.ErrorIs(t, err, queuetytype.ErrNotFound, "job %d", id)
		}
	})
	t.Run("retry-buried", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		phpID, goID := twinJobs(t, c)
		// One attempt ran and died, then the job was buried by hand.
		claimed, err := clientseam.Engine(c).Claim(ctx, engine.ClaimRequest{Queues: []string{"ops"}, Handlers: []string{"ops.job"}, Limit: 2})
		require.NoError(t, err)
		require.Len(t, claimed, 2, "claims")
		php.eval(`\Queuety\Queuety::bury_job(` + strconv.FormatInt(phpID, 10) + `);`)
		out := php.eval(`echo \Queuety\Queuety::retry_buried();`)
		assert.Equal(t, "1", strings.TrimSpace(out), "PHP retried")
		require.NoError(t, c.BuryJob(ctx, goID, ""))
		n, err := c.RetryBuried(ctx, queuetytype.BuriedFilter{Queue: "ops"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "Go retried")
		want, got := readJob(t, c, phpID), readJob(t, c, goID)
		assert.Equal(t, queuetytype.JobPending, want.Status, "PHP's status")
		assert.Equal(t, want.Status, got.Status, "status")
		assert.Equal(t, want.ErrorMessage, got.ErrorMessage, "error_message")
		assert.True(t, want.ReservedAt.IsZero() && got.ReservedAt.IsZero(), "reserved_at cleared on both sides")
		assert.WithinDuration(t, want.AvailableAt, got.AvailableAt, 5*time.Second, "available_at: due now on both sides")
		// The documented differences: Go resets the attempts, clears
		// failed_at and logs the retry; PHP keeps both and logs nothing.
		assert.Equal(t, 1, want.Attempts, "PHP keeps the attempt count")
		assert.Equal(t, 0, got.Attempts, "Go resets the attempt count")
		assert.False(t, want.FailedAt.IsZero(), "PHP keeps failed_at")
		assert.True(t, got.FailedAt.IsZero(), "Go clears failed_at")
		assert.Empty(t, jobLogs(t, c, phpID), "PHP's log rows")
		assert.Equal(t, []driver.LogEvent{driver.LogRetried}, logEvents(jobLogs(t, c, goID)), "Go's log rows")
	})
	t.Run("schedule remove", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		for _, h := range []string{"ops.php", "ops.go", "ops.kept"} {
			_, err := c.Schedule(h, nil).Every(time.Hour).Save(ctx)
			require.NoError(t, err)
		}
		assert.Equal(t, "1", strings.TrimSpace(php.eval(`echo (int) \Queuety\Queuety::remove_schedule('ops.php');`)), "PHP removed")
		_, err := c.RemoveScheduleByHandler(ctx, "ops.go")
		require.NoError(t, err)
		list, err := c.Schedules(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1, "schedules left")
		assert.Equal(t, "ops.kept", list[0].Handler, "schedule left")
	})
	t.Run("log purge", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		old := func() {
			t.Helper()
			insertLogs(t, c, &driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: time.Now().Add(-8 * 24 * time.Hour)},
				&driver.LogEntry{Handler: "h", Event: driver.LogFailed, CreatedAt: time.Now().Add(-30 * 24 * time.Hour)},
				&driver.LogEntry{Handler: "h", Event: driver.LogStarted, CreatedAt: time.Now().Add(-6 * 24 * time.Hour)})
		}
		old()
		assert.Equal(t, "2", strings.TrimSpace(php.eval(`echo \Queuety\Queuety::purge_logs(7);`)), "PHP purged")
		old()
		n, err := c.PurgeLogs(ctx, 7*24*time.Hour)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "Go purged")
		left, err := c.Logs(ctx, driver.LogFilter{})
		require.NoError(t, err)
		assert.Equal(t, []driver.LogEvent{driver.LogStarted, driver.LogStarted}, logEvents(left), "rows of six days ago left")
	})
	t.Run("metrics", func(t *testing.T) {
		ctx := context.Background()
		c, php := newLive(t)
		now := time.Now()
		ms := func(v int64) *int64 { return &v }
		var rows []*driver.LogEntry
		for i := int64(1); i <= 23; i++ {
			rows = append(rows, &driver.LogEntry{Handler: "ops.a", Event: driver.LogCompleted, DurationMS: ms(i * i), CreatedAt: now})
		}
		rows = append(rows,
			&driver.LogEntry{Handler: "ops.a", Event: driver.LogCompleted, CreatedAt: now},
			&driver.LogEntry{Handler: "ops.a", Event: driver.LogFailed, CreatedAt: now},
			&driver.LogEntry{Handler: "ops.a", Event: driver.LogBuried, CreatedAt: now},
			&driver.LogEntry{Handler: "ops.a", Event: driver.LogCompleted, DurationMS: ms(99999), CreatedAt: now.Add(-3 * time.Hour)},
			&driver.LogEntry{Handler: "ops.b", Event: driver.LogCompleted, DurationMS: ms(7), CreatedAt: now},
			&driver.LogEntry{Handler: "ops.b", Event: driver.LogCompleted, DurationMS: ms(8), CreatedAt: now},
			&driver.LogEntry{Handler: "ops.b", Event: driver.LogCompleted, DurationMS: ms(8), CreatedAt: now},
			&driver.LogEntry{Handler: "ops.c", Event: driver.LogBuried, CreatedAt: now},
			&driver.LogEntry{Handler: "", Event: driver.LogCompleted, DurationMS: ms(1), CreatedAt: now},
		)
		insertLogs(t, c, rows...)
		var want []queuetytype.HandlerMetric
		out := php.eval(`echo json_encode(\Queuety\Queuety::handler_metrics(60));`)
		require.NoError(t, json.Unmarshal([]byte(out), &want), "PHP printed %s", out)
		got, err := c.HandlerMetrics(ctx, time.Hour)
		require.NoError(t, err)
		assert.ElementsMatch(t, want, got, "metrics, PHP's (expected) and Go's (actual)")
		assert.Len(t, got, 3, "handlers")
	})
}

// twinJobs dispatches two identical jobs on queue "ops", one for each
// side to act on, and returns their ids.
func twinJobs(t *testing.T, c *queuety.Client) (phpID, goID int64) {
	t.Helper()
	ids, err := c.DispatchMany(context.Background(), []queuety.JobRequest{
		{Handler: "ops.job", Payload: queuety.State{"n": 1}, Options: []queuety.JobOption{queuety.OnQueue("ops"), queuety.MaxAttempts(4)}},
		{Handler: "ops.job", Payload: queuety.State{"n": 1}, Options: []queuety.JobOption{queuety.OnQueue("ops"), queuety.MaxAttempts(4)}},
	})
	require.NoError(t, err)
	return ids[0], ids[1]
}

func readJob(t *testing.T, c *queuety.Client, id int64) *driver.Job {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}

// sameJobRow compares the Queuety columns of the row PHP left (want) with
// the one Go left (got); times only for NULL or not.
func sameJobRow(t *testing.T, want, got *driver.Job) {
	t.Helper()
	assert.Equal(t, want.Status, got.Status, "status")
	assert.Equal(t, want.ErrorMessage, got.ErrorMessage, "error_message")
	assert.Equal(t, want.Attempts, got.Attempts, "attempts")
	assert.Equal(t, want.MaxAttempts, got.MaxAttempts, "max_attempts")
	assert.Equal(t, want.Queue, got.Queue, "queue")
	assert.Equal(t, want.Priority, got.Priority, "priority")
	assert.Equal(t, string(want.Payload), string(got.Payload), "payload")
	for name, pair := range map[string][2]time.Time{
		"reserved_at": {want.ReservedAt, got.ReservedAt}, "completed_at": {want.CompletedAt, got.CompletedAt},
		"failed_at": {want.FailedAt, got.FailedAt}, "available_at": {want.AvailableAt, got.AvailableAt},
	} {
		assert.Equal(t, pair[0].IsZero(), pair[1].IsZero(), "%s NULL on one side only", name)
	}
}

func jobLogs(t *testing.T, c *queuety.Client, id int64) []*driver.LogEntry {
	t.Helper()
	logs, err := c.Logs(context.Background(), driver.LogFilter{JobID: id})
	require.NoError(t, err)
	return logs
}

func logEvents(logs []*driver.LogEntry) []driver.LogEvent {
	out := []driver.LogEvent{}
	for _, l := range logs {
		out = append(out, l.Event)
	}
	return out
}

func insertLogs(t *testing.T, c *queuety.Client, entries ...*driver.LogEntry) {
	t.Helper()
	require.NoError(t, clientseam.StoreOf(c).InTx(context.Background(), func(tx driver.Tx) error { return tx.LogInsert(context.Background(), entries) }))
}
