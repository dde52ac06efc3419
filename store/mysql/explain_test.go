package mysql_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/mysql"
)

// plan is what EXPLAIN (and, on MariaDB, ANALYZE) says about one table
// access of a statement.
type plan struct {
	Table    string
	Key      string
	Access   string
	Filesort bool
	RowsRead float64 // actual rows read (ANALYZE); -1 when unknown
}

// analyze runs ANALYZE FORMAT=JSON (MariaDB: the statement is executed
// and the real rows read per table are reported) and returns the plan of
// the first table access.
func analyze(t *testing.T, db *sql.DB, query string, args ...any) plan {
	t.Helper()
	var version string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return explainMySQL(t, db, query, args...)
	}
	var out string
	require.NoErrorf(t, db.QueryRow("ANALYZE FORMAT=JSON "+query, args...).Scan(&out), "analyze %s", query)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	p := plan{RowsRead: -1, Filesort: strings.Contains(out, "filesort")}
	var find func(v any) bool
	find = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if tbl, ok := x["table"].(map[string]any); ok {
				p.Table, _ = tbl["table_name"].(string)
				p.Key, _ = tbl["key"].(string)
				p.Access, _ = tbl["access_type"].(string)
				if r, ok := tbl["r_rows"].(float64); ok {
					p.RowsRead = r
					if loops, ok := tbl["r_loops"].(float64); ok {
						p.RowsRead = r * loops
					}
				}
				return true
			}
			for _, k := range []string{"query_block", "read_sorted_file", "filesort", "temporary_table", "nested_loop"} {
				if c, ok := x[k]; ok && find(c) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if find(e) {
					return true
				}
			}
		}
		return false
	}
	require.Truef(t, find(doc), "no table access in the plan of %s: %s", query, out)
	return p
}

func explainMySQL(t *testing.T, db *sql.DB, query string, args ...any) plan {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.True(t, rows.Next(), "EXPLAIN returned nothing")
	require.NoError(t, rows.Scan(ptrs...))
	p := plan{RowsRead: -1}
	for i, c := range cols {
		switch c {
		case "table":
			p.Table = vals[i].String
		case "key":
			p.Key = vals[i].String
		case "type":
			p.Access = vals[i].String
		case "Extra":
			p.Filesort = strings.Contains(vals[i].String, "filesort")
		}
	}
	return p
}

// bigStore opens a migrated store. The returned handle is the store's own
// connection pool, so statements are explained with the store's session
// settings (interpolated parameters, UTC, READ COMMITTED).
func bigStore(t *testing.T) (*queuety.Client, *mysql.Store, *sql.DB, string) {
	t.Helper()
	dsn, prefix := migrated.DSN(t)
	c, err := queuety.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s := clientseam.StoreOf(c).(*mysql.Store)
	return c, s, s.DB, prefix
}

// insertRows inserts n rows built by row(i) in chunks.
func insertRows(t testing.TB, db *sql.DB, table, cols string, n int, row func(i int) string) {
	t.Helper()
	for start := 0; start < n; start += 5000 {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " (" + cols + ") VALUES ")
		for i := start; i < min(start+5000, n); i++ {
			if i > start {
				b.WriteByte(',')
			}
			b.WriteString(row(i))
		}
		_, err := db.Exec(b.String())
		require.NoError(t, err)
	}
	_, err := db.Exec("ANALYZE TABLE " + table)
	require.NoError(t, err)
}

const wfCols = "name, status, state, current_step, total_steps, started_at, deadline_at, run_deadline_at"

func sqlTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

// TestDeadlineSweepReadsOnlyThroughIndex fills the workflows table with
// 100,000 running workflows whose deadlines are all in the future: the
// deadline sweep's queries must be index range reads that read no row,
// and with 100 expired ones, read those 100 and no more.
func TestDeadlineSweepReadsOnlyThroughIndex(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 100,000 rows")
	}
	c, s, db, prefix := bigStore(t)
	table := prefix + "queuety_workflows"
	now := time.Now().UTC()
	future, past := sqlTime(now.Add(24*time.Hour)), sqlTime(now.Add(-time.Hour))
	insertRows(t, db, table, wfCols, 100000, func(i int) string {
		status := []string{"running", "completed", "failed", "running"}[i%4]
		return fmt.Sprintf("('bulk','%s','{}',0,3,'%s','%s','%s')", status, sqlTime(now), future, future)
	})
	// The store passes times truncated to the column's precision: whole
	// seconds for Queuety's DATETIME columns, microseconds for Go's.
	sec, micro := now.Truncate(time.Second), now.Truncate(time.Microsecond)
	for _, q := range []struct {
		name, sql, key string
		now            time.Time
	}{
		{"execution deadline", s.SQL.ExpiredExecution, "idx_deadline", sec},
		{"run deadline", s.SQL.ExpiredRun, "idx_go_run_deadline", micro},
		{"wait timers", s.SQL.WaitExpired, "idx_go_wait_deadline", micro},
	} {
		p := analyze(t, db, q.sql, q.now, 100)
		t.Logf("%s: %+v", q.name, p)
		assert.Equalf(t, q.key, p.Key, "%s: index read", q.name)
		assert.Containsf(t, []string{"range", "ref"}, p.Access, "%s: access to %s, want a range read", q.name, p.Table)
		assert.LessOrEqualf(t, p.RowsRead, 0.0, "%s: rows read with nothing expired", q.name)
	}
	// The overrun sweep reads a window of running workflows in id order
	// through the status index: as many rows as the window, whatever the
	// table holds.
	p := analyze(t, db, s.SQL.RunningPositions, 25000, 500)
	t.Logf("running positions: %+v", p)
	assert.Equal(t, "idx_status", p.Key, "running positions: index read")
	assert.False(t, p.Filesort, "running positions are read in id order")
	if p.RowsRead >= 0 {
		assert.LessOrEqual(t, p.RowsRead, 501.0, "running positions: rows read for a window of 500")
	}
	// 100 expired among the 100,000: the sweep reads those and no more.
	_, err := db.Exec("UPDATE "+table+" SET deadline_at = ? WHERE status = 'running' ORDER BY id LIMIT 100", past)
	require.NoError(t, err)
	p = analyze(t, db, s.SQL.ExpiredExecution, sec, 1000)
	t.Logf("100 expired: %+v", p)
	assert.Equal(t, "idx_deadline", p.Key, "with 100 expired: index read")
	if p.RowsRead >= 0 {
		assert.Equal(t, 100.0, p.RowsRead, "with 100 expired: rows read through idx_deadline")
	}
	n, _, err := sweep.ExpireWorkflows(context.Background(), clientseam.Engine(c), 1000, nil)
	require.NoError(t, err, "expire")
	require.Equal(t, 100, n, "workflows expired")
	// The run-deadline and wait-timer queries, too, find the 100 due rows
	// and read no others.
	_, err = db.Exec("UPDATE "+table+" SET run_deadline_at = ? WHERE status = 'running' ORDER BY id LIMIT 100", past)
	require.NoError(t, err)
	_, err = db.Exec("UPDATE "+table+" SET status = 'waiting_for_signal', wait_deadline_at = ? WHERE status = 'running' AND run_deadline_at > ? ORDER BY id LIMIT 100", past, micro)
	require.NoError(t, err)
	for _, q := range []struct{ name, sql, key string }{
		{"run deadline", s.SQL.ExpiredRun, "idx_go_run_deadline"},
		{"wait timers", s.SQL.WaitExpired, "idx_go_wait_deadline"},
	} {
		p := analyze(t, db, q.sql, micro, 1000)
		t.Logf("%s, 100 due: %+v", q.name, p)
		assert.Equalf(t, q.key, p.Key, "%s with 100 due: index read", q.name)
		if p.RowsRead >= 0 {
			assert.Equalf(t, 100.0, p.RowsRead, "%s with 100 due: rows read through %s", q.name, q.key)
		}
	}
}

// TestClaimAndWatchdogReadThroughIndexes fills the jobs table with 100,000
// pending jobs (all with future activity deadlines) and checks that a claim
// is an ordered range read of idx_go_claim with no filesort, reading about
// as many rows as it returns, and that each watchdog query reads nothing.
func TestClaimAndWatchdogReadThroughIndexes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 100,000 rows")
	}
	_, s, db, prefix := bigStore(t)
	table := prefix + "queuety_jobs"
	now := time.Now().UTC()
	future := sqlTime(now.Add(time.Hour))
	insertRows(t, db, table, "queue, handler, payload, priority, status, available_at, created_at, schedule_to_start_at, start_to_close_at, schedule_to_close_at, heartbeat_deadline_at",
		100000, func(i int) string {
			avail := sqlTime(now.Add(-time.Duration(i%1000) * time.Second))
			return fmt.Sprintf("('default','noop','[]',%d,'pending','%s','%s','%s','%s','%s','%s')", i%4, avail, sqlTime(now), future, future, future, future)
		})
	args := []any{"default", now.Truncate(time.Second), "noop", "default", 100}
	p := analyze(t, db, s.SQL.Claim(1), args...)
	t.Logf("claim: %+v", p)
	assert.Equal(t, "idx_go_claim", p.Key, "claim index")
	assert.False(t, p.Filesort, "claim sorts its candidates")
	assert.LessOrEqual(t, p.RowsRead, 150.0, "rows read by a claim of 100")
	if p.RowsRead >= 0 {
		assert.GreaterOrEqual(t, p.RowsRead, 100.0, "rows read by a claim of 100: it cannot have found 100 due jobs with fewer")
	}
	// The two-step claim: the plain read of the candidates walks the
	// claim index the same way; locking them reads them by primary key.
	p = analyze(t, db, s.SQL.ClaimCandidates(1, 0, false), args...)
	assert.Equal(t, "idx_go_claim", p.Key, "claim candidates index")
	assert.False(t, p.Filesort, "the candidates are sorted")
	assert.LessOrEqual(t, p.RowsRead, 150.0, "rows read for 100 candidates")
	var ids []any
	rows, err := db.Query("SELECT id FROM " + table + " ORDER BY id LIMIT 128")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	p = analyze(t, db, s.SQL.ClaimByID(len(ids), 1, 0, false), append(ids, args[:len(args)-1]...)...)
	assert.Equal(t, "PRIMARY", p.Key, "claim by id index")
	assert.LessOrEqual(t, p.RowsRead, 128.0, "rows read to lock 128 candidates")
	keys := []string{"idx_go_schedule_to_close", "idx_go_schedule_to_start", "idx_go_heartbeat", "idx_go_start_to_close"}
	require.Len(t, s.SQL.TimedOut, len(keys), "watchdog queries, want one per activity timeout")
	for i, q := range s.SQL.TimedOut {
		p := analyze(t, db, q, now.Truncate(time.Microsecond), 100)
		assert.Equalf(t, keys[i], p.Key, "watchdog query %d: index", i)
		assert.Equalf(t, "range", p.Access, "watchdog query %d: access", i)
		assert.LessOrEqualf(t, p.RowsRead, 0.0, "watchdog query %d: rows read", i)
	}
	p = analyze(t, db, s.SQL.Stale, now.Add(-10*time.Second).Truncate(time.Second), now.Add(-10*time.Minute).Truncate(time.Second), 100)
	assert.Equal(t, "idx_reserved", p.Key, "stale query index")
	assert.LessOrEqual(t, p.RowsRead, 0.0, "rows read by the stale query")
	p = analyze(t, db, s.SQL.StaleUnreserved, 100)
	assert.Equal(t, "idx_reserved", p.Key, "index of the stale query for rows without a claim time")
	assert.LessOrEqual(t, p.RowsRead, 0.0, "rows read by the stale query for rows without a claim time")
}

// TestOldestDueReadsOneIndexEntry fills a queue with 100,000 pending jobs
// and checks that the oldest-due query (run at every metrics scrape) is a
// range read of idx_queue_status_available that reads one row, without a
// filesort.
func TestOldestDueReadsOneIndexEntry(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 100,000 rows")
	}
	c, s, db, prefix := bigStore(t)
	table := prefix + "queuety_jobs"
	now := time.Now().UTC().Truncate(time.Second)
	insertRows(t, db, table, "queue, handler, payload, priority, status, available_at, created_at", 100000, func(i int) string {
		status := []string{"pending", "pending", "completed", "processing"}[i%4]
		avail := sqlTime(now.Add(time.Duration(i%2000-1000) * time.Second)) // half due, half not yet
		return fmt.Sprintf("('default','noop','[]',%d,'%s','%s','%s')", i%4, status, avail, sqlTime(now))
	})
	p := analyze(t, db, s.SQL.OldestDue, "default", now)
	t.Logf("oldest due: %+v", p)
	assert.Equal(t, "idx_queue_status_available", p.Key, "index")
	assert.Equal(t, "range", p.Access, "access")
	assert.False(t, p.Filesort, "the query sorts")
	if p.RowsRead >= 0 {
		assert.LessOrEqual(t, p.RowsRead, 1.0, "rows read")
	}
	age, err := c.OldestDueAge(context.Background(), "default")
	require.NoError(t, err)
	// The oldest due job fell due 1000 s before now, which the load took a while past.
	assert.GreaterOrEqual(t, age, 1000*time.Second, "age of the oldest due job")
	assert.LessOrEqual(t, age, 1000*time.Second+time.Since(now)+time.Second, "age of the oldest due job")
}

// TestOldestDueByQueueReadsOneEntryPerQueue fills 200 queues with 500
// jobs each and checks that the oldest-due query of the overview and the
// metrics scrape (one statement for every queue) reads the
// (queue, status, available_at) index a few entries per queue, not every
// pending job, and reads no row.
func TestOldestDueByQueueReadsOneEntryPerQueue(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 100,000 rows")
	}
	c, s, db, prefix := bigStore(t)
	table := prefix + "queuety_jobs"
	now := time.Now().UTC().Truncate(time.Second)
	const queues = 200
	insertRows(t, db, table, "queue, handler, payload, priority, status, available_at, created_at", 100000, func(i int) string {
		status := []string{"pending", "pending", "completed", "processing"}[(i/queues)%4]
		avail := sqlTime(now.Add(time.Duration(i%2000-1000) * time.Second)) // half due, half not yet
		return fmt.Sprintf("('q%03d','noop','[]',0,'%s','%s','%s')", i%queues, status, avail, sqlTime(now))
	})
	p := analyze(t, db, s.SQL.OldestDueByQueue, now)
	t.Logf("oldest due by queue: %+v", p)
	assert.Equal(t, "idx_queue_status_available", p.Key, "index")
	assert.False(t, p.Filesort, "the query sorts")
	if p.RowsRead >= 0 {
		assert.LessOrEqual(t, p.RowsRead, 4.0*queues, "index entries read for %d queues", queues)
	}
	ages, err := c.OldestDueAges(context.Background())
	require.NoError(t, err)
	assert.Len(t, ages, queues, "a due job in every queue")
	for q, age := range ages {
		assert.GreaterOrEqualf(t, age, 800*time.Second, "age of the oldest due job of %s", q)
	}
}

// TestHistoryPagesReadThroughIndexes fills the signals, failures and
// artifacts tables with 100,000 rows each, 20,000 of them of one
// workflow, and checks that the pages a description and a trace read of
// that workflow are index reads in the page's order that read as many
// rows as the page holds, and that the failure counts by category read
// the (workflow_id, category) index alone, without a sort.
func TestHistoryPagesReadThroughIndexes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 300,000 rows")
	}
	_, s, db, prefix := bigStore(t)
	const rows, mine = 100000, 20000
	wf := func(i int) int {
		if i%5 == 0 {
			return 1 // every fifth row, spread over the table
		}
		return 2 + i%997
	}
	now := sqlTime(time.Now())
	insertRows(t, db, prefix+"queuety_signals", "workflow_id, signal_name, payload, received_at", rows, func(i int) string {
		return fmt.Sprintf("(%d,'s%d','{\"i\":%d}','%s')", wf(i), i%7, i, now)
	})
	insertRows(t, db, prefix+"queuety_go_failures", "workflow_id, job_id, attempt, category, message, created_at", rows, func(i int) string {
		return fmt.Sprintf("(%d,%d,1,'%s','failure %d','%s')", wf(i), i, []string{"application", "timeout", "cancelled"}[i%3], i, now)
	})
	insertRows(t, db, prefix+"queuety_artifacts", "workflow_id, artifact_key, kind, content, created_at, updated_at", rows, func(i int) string {
		return fmt.Sprintf("(%d,'k%06d','json','{}','%s','%s')", wf(i), i, now, now)
	})
	for _, q := range []struct {
		name, sql, key string
		args           []any
		rows           float64
	}{
		{"signal page", s.SQL.SignalPage(driver.SignalQuery{WorkflowID: 1, Limit: 200, MaxPayloadBytes: 4096}), "idx_go_workflow", []any{1}, 200},
		{"signal page, lengths only", s.SQL.SignalPage(driver.SignalQuery{WorkflowID: 1, Limit: 1000, MaxPayloadBytes: -1}), "idx_go_workflow", []any{1}, 1000},
		{"failure page", s.SQL.FailurePage(driver.FailureQuery{WorkflowID: 1, Limit: 200, MaxMessageChars: 4096}), "idx_workflow", []any{1}, 200},
		{"artifact page", s.SQL.ArtifactPage(driver.ArtifactQuery{WorkflowID: 1, Limit: 500, MaxValueBytes: -1}), "idx_workflow_key", []any{1}, 500},
		{"failure counts", s.SQL.FailureCounts, "idx_workflow_category", []any{1}, mine},
	} {
		p := analyze(t, db, q.sql, q.args...)
		t.Logf("%s: %+v", q.name, p)
		assert.Equalf(t, q.key, p.Key, "%s: index read", q.name)
		assert.Containsf(t, []string{"ref", "range"}, p.Access, "%s: access", q.name)
		assert.Falsef(t, p.Filesort, "%s: sorts", q.name)
		if p.RowsRead >= 0 {
			assert.LessOrEqualf(t, p.RowsRead, q.rows+1, "%s: rows read", q.name)
		}
	}
}

// TestDependentsReadThroughIndex: a completion's reads of its jobs'
// dependents (driver.DependentsTx) touch only the entries of idx_depends
// they need: the highest depends_on is read from the end of the index, and
// the pending dependents of a few jobs are found among 20,000 jobs, every
// other one depending on another, by reading about as many rows as there
// are dependents.
func TestDependentsReadThroughIndex(t *testing.T) {
	t.Parallel()
	_, s, db, prefix := bigStore(t)
	table := prefix + "queuety_jobs"
	now := sqlTime(time.Now())
	insertRows(t, db, table, "queue, handler, payload, status, available_at, created_at, depends_on", 20000, func(i int) string {
		dep, status := "NULL", "completed"
		if i%2 == 1 {
			dep = fmt.Sprint(i) // the id of the row before it
			if i > 19000 {
				status = "pending"
			}
		}
		return fmt.Sprintf("('default','noop','[]','%s','%s','%s',%s)", status, now, now, dep)
	})
	p := analyze(t, db, s.SQL.DependsOnMax)
	t.Logf("highest depends_on: %+v", p)
	assert.Equal(t, "idx_depends", p.Key, "highest depends_on index")
	assert.False(t, p.Filesort, "the highest depends_on is read in index order")
	assert.LessOrEqual(t, p.RowsRead, 1.0, "rows read for the highest depends_on")
	var most int64
	require.NoError(t, db.QueryRow(s.SQL.DependsOnMax).Scan(&most))
	assert.Equal(t, int64(19999), most, "the highest depends_on")

	p = analyze(t, db, s.SQL.PendingDependents(3), 19001, 19003, 100)
	t.Logf("pending dependents: %+v", p)
	assert.Equal(t, "idx_depends", p.Key, "pending dependents index")
	assert.LessOrEqual(t, p.RowsRead, 3.0, "rows read for the dependents of 3 jobs")
}
