package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionQuerier is a single session, or a pool limited to one
// connection: what sessionReads reads the counters of.
type sessionQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// sessionReads is the session's Handler_read_% total: the rows and index
// entries (temporary tables included) its statements have read so far.
func sessionReads(t *testing.T, q sessionQuerier) int64 {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "SHOW SESSION STATUS LIKE 'Handler_read%'")
	require.NoError(t, err)
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var k string
		var v int64
		require.NoError(t, rows.Scan(&k, &v))
		sum += v
	}
	require.NoError(t, rows.Err())
	return sum
}

// TestClaimTestsWorkflowAndDependencyByKey fills the tables with 2,500
// finished workflows and 20,000 completed jobs of another queue, then
// 20,000 pending jobs of running workflows, half of them depending on a
// completed job: a claim of 100 must test each candidate's workflow and
// dependency by primary key, reading a few
// hundred rows, not every finished workflow and completed job (MariaDB
// turns the correlated EXISTS into IN and materializes it), and still
// leave out the jobs of finished workflows and of unfinished
// dependencies.
func TestClaimTestsWorkflowAndDependencyByKey(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 45,000 rows")
	}
	_, s, db, prefix := bigStore(t)
	var version string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		t.Skip("MariaDB's subquery plans")
	}
	now := time.Now().UTC()
	insertRows(t, db, prefix+"queuety_workflows", wfCols, 5000, func(i int) string {
		st := []string{"running", "completed", "failed", "cancelled"}[i%4]
		if i%4 == 0 && i%8 == 4 {
			st = "paused"
		}
		return fmt.Sprintf("('w','%s','{}',0,3,'%s',NULL,NULL)", st, sqlTime(now))
	})
	// Jobs 1 to 20,000: completed, of another queue.
	insertRows(t, db, prefix+"queuety_jobs", "queue, handler, payload, priority, status, available_at, created_at, completed_at", 20000, func(i int) string {
		return fmt.Sprintf("('other','noop','[]',0,'completed','%s','%s','%s')", sqlTime(now.Add(-time.Minute)), sqlTime(now), sqlTime(now))
	})
	// Jobs 20,001 to 40,000: pending, each of a running or paused workflow (ids
	// 1, 5, 9, ...), every second one depending on a completed job; the
	// first 20 of the first claim's order are left out (below).
	due := sqlTime(now.Add(-time.Second))
	insertRows(t, db, prefix+"queuety_jobs", "queue, handler, payload, priority, status, available_at, created_at, workflow_id, step_index, depends_on", 20000, func(i int) string {
		dep := "NULL"
		if i%2 == 1 {
			dep = fmt.Sprint(1 + i)
		}
		return fmt.Sprintf("('default','noop','[]',0,'pending','%s','%s',%d,0,%s)", due, sqlTime(now), 1+4*(i%1250), dep)
	})
	var first int64
	require.NoError(t, db.QueryRow("SELECT MIN(id) FROM "+prefix+"queuety_jobs WHERE status = 'pending'").Scan(&first))
	// Ten of the first twenty belong to a finished workflow, ten depend
	// on a job still pending.
	_, err := db.Exec("UPDATE "+prefix+"queuety_jobs SET workflow_id = 2 WHERE id BETWEEN ? AND ?", first, first+9)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE "+prefix+"queuety_jobs SET depends_on = ? WHERE id BETWEEN ? AND ?", first+19999, first+10, first+19)
	require.NoError(t, err)
	_, err = db.Exec("ANALYZE TABLE " + prefix + "queuety_jobs")
	require.NoError(t, err)

	ctx := context.Background()
	conn, err := db.Conn(ctx) // a session of the store's pool, with its settings
	require.NoError(t, err)
	defer conn.Close()
	args := []any{"default", now.Truncate(time.Second), "noop", "default", 100}
	for _, q := range []struct{ name, sql string }{
		{"claim candidates", s.SQL.ClaimCandidates(1, 0, false)},
		{"one-statement claim read", s.SQL.Claim(1)},
	} {
		before := sessionReads(t, conn)
		rows, err := conn.QueryContext(ctx, q.sql, args...)
		require.NoError(t, err)
		var ids []int64
		for rows.Next() {
			var id int64
			if q.name == "claim candidates" {
				require.NoError(t, rows.Scan(&id))
			} else {
				cols, err := rows.Columns()
				require.NoError(t, err)
				vals := make([]any, len(cols))
				for i := range vals {
					vals[i] = new(sql.RawBytes)
				}
				vals[0] = &id
				require.NoError(t, rows.Scan(vals...))
			}
			ids = append(ids, id)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		reads := sessionReads(t, conn) - before
		t.Logf("%s: %d rows, %d rows and entries read", q.name, len(ids), reads)
		require.Len(t, ids, 100, q.name)
		assert.Equalf(t, first+20, ids[0], "%s: the first job neither of a finished workflow nor behind a pending one", q.name)
		assert.Lessf(t, reads, int64(1000), "%s: rows read for 100 candidates (every finished workflow and completed job is over 20,000)", q.name)
	}
}
