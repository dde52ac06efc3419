package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// rowsRead runs fn on db limited to one connection and returns how many
// rows the server's handlers read meanwhile (the session's Handler_read_*
// counters: index and table reads, temporary tables included).
func rowsRead(t *testing.T, db *sql.DB, fn func()) int64 {
	t.Helper()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	before := sessionReads(t, db)
	fn()
	return sessionReads(t, db) - before
}

// TestSeriesReadsTheirWindow checks that the series reads read the rows
// of their time range through the created_at index, not the log table:
// with 20,000 older log rows and 200 in the window, each reads a few
// hundred rows.
func TestSeriesReadsTheirWindow(t *testing.T) {
	_, s, db, prefix := bigStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	logs := prefix + "queuety_logs"
	jobs := prefix + "queuety_jobs"
	old := now.Add(-48 * time.Hour).Format("2006-01-02 15:04:05")
	insertRows(t, db, jobs, "id, queue, handler, payload, status, attempts, available_at, reserved_at, created_at", 200, func(i int) string {
		at := now.Add(-time.Duration(i) * time.Second).Format("2006-01-02 15:04:05")
		return fmt.Sprintf("(%d, 'default', 'h', '{}', 'completed', 1, '%s', '%s', '%s')", i+1, at, at, at)
	})
	insertRows(t, db, logs, "job_id, handler, queue, event, attempt, duration_ms, created_at", 20000, func(i int) string {
		return fmt.Sprintf("(%d, 'h', 'default', '%s', 1, 5, '%s')", 100000+i, []string{"started", "completed"}[i%2], old)
	})
	insertRows(t, db, logs, "job_id, handler, queue, event, attempt, duration_ms, created_at", 400, func(i int) string {
		at := now.Add(-time.Duration(i/2) * time.Second).Format("2006-01-02 15:04:05")
		return fmt.Sprintf("(%d, 'h', 'default', '%s', 1, 5, '%s')", i/2+1, []string{"started", "completed"}[i%2], at)
	})
	_, err := db.Exec("ANALYZE TABLE " + logs + ", " + jobs)
	require.NoError(t, err)

	q := driver.SeriesRowsQuery{Bounds: []time.Time{now.Add(-time.Hour), now.Add(-30 * time.Minute), now.Add(time.Second)},
		Classes: []int64{1, 10, 100}, MaxRows: 50000}
	for _, read := range []struct {
		name string
		fn   func(tx driver.Tx) ([]driver.SeriesRow, error)
		want int64
	}{
		{"LogSeriesRows", func(tx driver.Tx) ([]driver.SeriesRow, error) { return tx.LogSeriesRows(ctx, q) }, 200},
		{"JobWaitSeriesRows", func(tx driver.Tx) ([]driver.SeriesRow, error) { return tx.JobWaitSeriesRows(ctx, q) }, 200},
	} {
		var got []driver.SeriesRow
		n := rowsRead(t, db, func() {
			require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) { got, err = read.fn(tx); return err }))
		})
		var counted int64
		for _, r := range got {
			counted += r.Count
		}
		assert.Equal(t, read.want, counted, read.name)
		t.Logf("%s read %d rows for %d in its window (20,000 older log rows)", read.name, n, counted)
		assert.Less(t, n, int64(5000), "%s reads its window, not the table", read.name)
	}
}
