package interop_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// columnDef is what information_schema says about one column.
type columnDef struct {
	Name, Type, Nullable, Default, Extra, Collation string
	Position                                        int
}

func columnDefs(t *testing.T, db *sql.DB, table string) []columnDef {
	t.Helper()
	rs, err := db.Query(`SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, '<none>'),
		EXTRA, COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	require.NoError(t, err, "columns of %s", table)
	defer rs.Close()
	var out []columnDef
	for rs.Next() {
		var c columnDef
		require.NoError(t, rs.Scan(&c.Name, &c.Position, &c.Type, &c.Nullable, &c.Default, &c.Extra, &c.Collation), "columns of %s", table)
		out = append(out, c)
	}
	require.NoError(t, rs.Err(), "columns of %s", table)
	return out
}

// columnNames returns a table's column names in ordinal order.
func columnNames(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	var out []string
	for _, c := range columnDefs(t, db, table) {
		out = append(out, c.Name)
	}
	return out
}

// indexDefs returns each index of a table as "name(non_unique): col,col".
func indexDefs(t *testing.T, db *sql.DB, table string) map[string]string {
	t.Helper()
	rs, err := db.Query(`SELECT INDEX_NAME, NON_UNIQUE, GROUP_CONCAT(CONCAT(COLUMN_NAME, ' ', COALESCE(COLLATION, '')) ORDER BY SEQ_IN_INDEX)
		FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? GROUP BY INDEX_NAME, NON_UNIQUE`, table)
	require.NoError(t, err, "indexes of %s", table)
	defer rs.Close()
	out := map[string]string{}
	for rs.Next() {
		var name, cols string
		var nonUnique int
		require.NoError(t, rs.Scan(&name, &nonUnique, &cols), "indexes of %s", table)
		out[name] = cols
		if nonUnique == 0 {
			out[name] += " UNIQUE"
		}
	}
	require.NoError(t, rs.Err(), "indexes of %s", table)
	return out
}

// TestPHPStatementsStillRunAfterGoMigrations checks that Queuety PHP keeps
// working on tables PHP created and Go then migrated:
//
//   - every PHP column keeps its position, type, NULL-ability, default and
//     collation, every PHP index is unchanged, and what Go added is
//     nullable columns after PHP's, idx_go_* indexes and go_* tables;
//   - PHP's own statements (reference/queuety-php.md) run unchanged: the
//     dispatch and batch INSERTs with explicit column lists, the workflow
//     INSERT, the claim transaction with FORCE INDEX (idx_queue_claim), the
//     complete, retry and bury UPDATEs, the step-advance and workflow-fail
//     statements, the signal, log and event INSERTs, the stale and deadline
//     SELECTs; SELECT * returns PHP's columns in PHP's order with the Go
//     columns after them, NULL on rows PHP wrote;
//   - rows cross over: a Go worker runs a job PHP's INSERT wrote, and PHP's
//     claim takes a job Go dispatched;
//   - every snapshot of every fixture loads into the migrated tables and
//     reads back byte for byte.
func TestPHPStatementsStillRunAfterGoMigrations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	db, p := e.db, e.prefix
	pristine := testdb.Prefix(t)
	require.NoError(t, phpfixture.CreateSchema(db, pristine, schemaPath), "create PHP's tables under a second prefix")

	t.Run("schema", func(t *testing.T) {
		for _, tbl := range phpTables {
			want, got := columnDefs(t, db, pristine+tbl), columnDefs(t, db, p+tbl)
			require.NotEmpty(t, want, "%s: schema.sql created no such table", tbl)
			require.GreaterOrEqual(t, len(got), len(want), "%s: columns after migration, at least as many as PHP created", tbl)
			for i, w := range want {
				assert.Equal(t, w, got[i], "%s: column %s changed by the migrations", tbl, w.Name)
			}
			for _, g := range got[len(want):] {
				assert.True(t, isGoOnly(tbl, g.Name), "%s: added column %+v is not a known Go column", tbl, g)
				assert.Equal(t, "YES", g.Nullable, "%s: added column %s must be nullable", tbl, g.Name)
			}
			wi, gi := indexDefs(t, db, pristine+tbl), indexDefs(t, db, p+tbl)
			assert.Contains(t, wi, "PRIMARY", "%s: PHP's table has no primary key", tbl)
			for name, cols := range wi {
				assert.Equal(t, cols, gi[name], "%s: index %s after migration, PHP's (expected) and Go's (actual)", tbl, name)
			}
			for name, cols := range gi {
				_, ok := wi[name]
				assert.True(t, ok || strings.HasPrefix(name, "idx_go_"), "%s: unexpected index %s (%s)", tbl, name, cols)
			}
		}
		tables, err := testdb.Tables(db, p)
		require.NoError(t, err)
		var extra []string
		for _, table := range tables {
			name := strings.TrimPrefix(table, p)
			isPHP := false
			for _, tbl := range phpTables {
				isPHP = isPHP || tbl == name
			}
			if !isPHP {
				extra = append(extra, name)
			}
		}
		assert.Equal(t, []string{"queuety_go_batch_events", "queuety_go_failures", "queuety_go_held_claims", "queuety_go_limits", "queuety_go_machine_timers", "queuety_go_migrations", "queuety_go_rate_starts", "queuety_go_webhook_secrets", "queuety_go_workers", "queuety_go_workflow_ends"}, sorted(extra),
			"tables added by the migrations")
	})

	t.Run("PHP statements", func(t *testing.T) {
		jobs, wfs, logs, events := "`"+p+"queuety_jobs`", "`"+p+"queuety_workflows`", "`"+p+"queuety_logs`", "`"+p+"queuety_workflow_events`"
		exec := func(q string, args ...any) sql.Result {
			t.Helper()
			res, err := db.Exec(q, args...)
			require.NoError(t, err, q)
			return res
		}
		lastID := func(res sql.Result) int64 {
			id, err := res.LastInsertId()
			require.NoError(t, err)
			return id
		}

		// Queue::dispatch.
		jobID := lastID(exec("INSERT INTO "+jobs+" (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, "+
			"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units) "+
			"VALUES (?, ?, ?, ?, ?, 'pending', ?, UTC_TIMESTAMP(), ?, ?, ?, ?, ?, ?, ?)",
			"php", "send_email", `{"to":"ana@example.com"}`, nil, 2, 3, nil, nil, nil, nil, nil, nil, 1))
		// Queue::batch.
		exec("INSERT INTO "+jobs+" (queue, handler, payload, priority, status, max_attempts, available_at) VALUES "+
			"(?, ?, ?, ?, 'pending', ?, UTC_TIMESTAMP()), (?, ?, ?, ?, 'pending', ?, UTC_TIMESTAMP())",
			"php", "send_email", "[]", 0, 3, "php", "send_email", "[]", 0, 3)

		// SELECT * hydration: PHP's columns in PHP's order, then Go's, NULL.
		phpCols := columnNames(t, db, pristine+"queuety_jobs")
		rows := queryRows(t, db, "SELECT * FROM "+jobs+" WHERE id = ?", jobID)
		require.Equal(t, 1, len(rows), "rows SELECT * found")
		gotCols := columnNames(t, db, p+"queuety_jobs")
		assert.Equal(t, phpCols, gotCols[:len(phpCols)], "SELECT * column order, PHP's (expected); all columns %v", gotCols)
		for _, c := range goOnlyColumns["queuety_jobs"] {
			assert.Nil(t, rows[0][c], "Go column %s = %s on a row PHP inserted", c, val(rows[0][c]))
		}

		// Queue::claim, in PHP's transaction.
		tx, err := db.Begin()
		require.NoError(t, err)
		claimed := queryRows(t, tx, "SELECT job.* FROM "+jobs+" AS job FORCE INDEX (idx_queue_claim) WHERE job.status = 'pending' AND job.queue = ? "+
			"AND job.available_at <= NOW() "+
			"AND (job.workflow_id IS NULL OR EXISTS (SELECT 1 FROM "+wfs+" AS wf WHERE wf.id = job.workflow_id AND wf.status IN ('running','paused'))) "+
			"AND (job.depends_on IS NULL OR EXISTS (SELECT 1 FROM "+jobs+" AS dep WHERE dep.id = job.depends_on AND dep.status = 'completed')) "+
			"ORDER BY job.priority DESC, job.id ASC LIMIT 1 FOR UPDATE SKIP LOCKED", "php")
		require.Equal(t, 1, len(claimed), "jobs PHP's claim took:\n%s", showAll(claimed))
		require.Equal(t, itoa(jobID), val(claimed[0]["id"]), "job PHP's claim took: want the priority 2 job")
		_, err = tx.Exec("UPDATE "+jobs+" SET status = 'processing', reserved_at = NOW(), attempts = attempts + 1 WHERE id = ?", jobID)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		// Logger::log, then the outcomes.
		exec("INSERT INTO "+logs+" (job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, memory_peak_kb, "+
			"error_message, error_class, error_trace, context) VALUES (?, NULL, NULL, ?, ?, 'started', 1, NULL, NULL, NULL, NULL, NULL, NULL)",
			jobID, "send_email", "php")
		exec("UPDATE "+jobs+" SET status = 'pending', reserved_at = NULL, available_at = ?, error_message = NULL WHERE id = ?", "2026-11-22 04:01:00", jobID)
		exec("UPDATE "+jobs+" SET status = 'buried', failed_at = NOW(), error_message = ? WHERE id = ?", "boom", jobID)
		exec("UPDATE "+jobs+" SET status = 'completed', completed_at = NOW() WHERE id = ?", jobID)
		exec("UPDATE "+jobs+" SET reserved_at = NOW(), heartbeat_data = ? WHERE id = ?", `{"done":3}`, jobID)
		queryRows(t, db, "SELECT * FROM "+jobs+" WHERE status = 'processing' AND reserved_at < ? ORDER BY id", "2026-11-22 04:00:00")
		exec("DELETE FROM "+jobs+" WHERE status = 'completed' AND completed_at < ?", "2000-01-01 00:00:00")

		// WorkflowBuilder::dispatch, advance_step and Workflow::fail.
		state := `{"n":1,"_steps":[{"type":"single","name":"0","class":"A"},{"type":"single","name":"1","class":"B"}],"_queue":"php","_priority":0,"_max_attempts":3,"_definition_hash":"x"}`
		wfID := lastID(exec("INSERT INTO "+wfs+" (name, status, state, current_step, total_steps, deadline_at) VALUES (?, 'running', ?, 0, ?, ?)",
			"php_flow", state, 2, nil))
		stepJob := lastID(exec("INSERT INTO "+jobs+" (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, "+
			"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units) "+
			"VALUES ('php', 'A', ?, NULL, 0, 'pending', 3, UTC_TIMESTAMP(), ?, 0, NULL, NULL, NULL, NULL, 1)", `{"__queuety_runtime":{"max_attempts":3}}`, wfID))
		exec("INSERT INTO "+logs+" (job_id, workflow_id, step_index, handler, queue, event) VALUES (NULL, ?, NULL, 'php_flow', 'php', 'workflow_started')", wfID)
		tx, err = db.Begin()
		require.NoError(t, err)
		queryRows(t, tx, "SELECT * FROM "+wfs+" WHERE id = ? FOR UPDATE", wfID)
		queryRows(t, tx, "SELECT * FROM "+jobs+" WHERE id = ? FOR UPDATE", stepJob)
		for _, q := range []string{
			"UPDATE " + wfs + " SET state = ?, current_step = ? WHERE id = ?",
			"UPDATE " + jobs + " SET status = 'completed', completed_at = NOW() WHERE id = ? AND status IN ('pending','processing')",
		} {
			args := []any{stepJob}
			if strings.Contains(q, "current_step") {
				args = []any{strings.Replace(state, `"n":1`, `"n":1,"a":true`, 1), 1, wfID}
			}
			_, err := tx.Exec(q, args...)
			require.NoError(t, err, q)
		}
		_, err = tx.Exec("INSERT INTO "+events+" (workflow_id, job_id, step_index, step_name, step_type, handler, event, queue, attempt, "+
			"input, output, state_before, state_after, context, duration_ms) VALUES (?, ?, 0, '0', 'single', 'A', 'step_completed', 'php', 1, "+
			"'{\"n\":1}', '{\"a\":true}', '{\"n\":1}', '{\"n\":1,\"a\":true}', NULL, 1)", wfID, stepJob)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		exec("UPDATE "+wfs+" SET status = 'failed', failed_at = NOW(), error_message = ?, state = ? WHERE id = ? "+
			"AND status IN ('running','paused','waiting_for_signal','waiting_for_workflows')", "boom", state, wfID)
		exec("UPDATE "+wfs+" SET status = 'running', failed_at = NULL, error_message = NULL WHERE id = ?", wfID)
		exec("INSERT INTO `"+p+"queuety_signals` (workflow_id, signal_name, payload) VALUES (?, 'approval', '[]')", wfID)
		exec("INSERT INTO `" + p + "queuety_queue_states` (queue, paused, paused_at) VALUES ('php', 1, NOW()) ON DUPLICATE KEY UPDATE paused = 1, paused_at = NOW()")
		exec("DELETE FROM `" + p + "queuety_queue_states` WHERE queue = 'php'")
		queryRows(t, db, "SELECT * FROM "+wfs+" WHERE status = 'running' AND deadline_at IS NOT NULL AND deadline_at <= NOW()")
		for _, c := range goOnlyColumns["queuety_workflows"] {
			r := one(t, queryRows(t, db, "SELECT * FROM "+wfs+" WHERE id = ?", wfID), "id", itoa(wfID))
			assert.Nil(t, r[c], "Go column %s = %s on a workflow PHP inserted", c, val(r[c]))
		}

		// Go reads what PHP wrote.
		j, err := e.c.Job(e.ctx, jobID)
		require.NoError(t, err, "Go reads PHP's job")
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "status of PHP's job, read by Go: %+v", j)
		assert.Equal(t, `{"done":3}`, string(j.HeartbeatData), "heartbeat data of PHP's job, read by Go")
		wf, err := e.c.Workflow(e.ctx, wfID)
		require.NoError(t, err, "Go reads PHP's workflow")
		assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "status of PHP's workflow, read by Go: %+v", wf)
		assert.Equal(t, 1, wf.CurrentStep, "current step of PHP's workflow, read by Go: %+v", wf)
		assert.Zero(t, wf.RunNumber, "run number of PHP's workflow, read by Go: %+v", wf)
	})

	t.Run("rows cross over", func(t *testing.T) {
		e := e.on(t)
		jobs := "`" + p + "queuety_jobs`"
		// A job inserted by PHP's statement, run by a Go worker.
		res, err := db.Exec("INSERT INTO "+jobs+" (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, "+
			"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units) "+
			"VALUES ('cross', 'php_made', '{\"x\":1}', NULL, 0, 'pending', 3, ?, NULL, NULL, NULL, NULL, NULL, NULL, 1)",
			e.clock.Now().Format(phpfixture.DBNowLayout))
		require.NoError(t, err)
		phpJob, err := res.LastInsertId()
		require.NoError(t, err)
		rec := &jobRecorder{}
		w := e.worker(worker.Queues("cross"))
		rec.handle(w, "php_made", nil)
		st := e.drain(w)
		require.Equal(t, int64(1), st.Succeeded, "Go worker on a PHP-inserted job: jobs succeeded; stats %+v", st)
		r := one(t, e.rows("queuety_jobs"), "id", itoa(phpJob))
		assert.Equal(t, "completed", val(r["status"]), "status after the Go worker: %s", show(r))
		assert.Equal(t, "1", val(r["attempts"]), "attempts after the Go worker: %s", show(r))

		// A job dispatched by Go, taken by PHP's claim.
		goJob, err := e.c.Dispatch(e.ctx, "go_made", map[string]any{"y": 2}, queuety.OnQueue("cross2"), queuety.WithPriority(queuetytype.PriorityHigh))
		require.NoError(t, err)
		// PHP compares available_at with NOW(); the Go job is due at the
		// fake clock's time, which is in the past.
		tx, err := db.Begin()
		require.NoError(t, err)
		claimed := queryRows(t, tx, "SELECT job.* FROM "+jobs+" AS job FORCE INDEX (idx_queue_claim) WHERE job.status = 'pending' AND job.queue = ? "+
			"AND job.available_at <= NOW() AND (job.workflow_id IS NULL) AND (job.depends_on IS NULL) "+
			"ORDER BY job.priority DESC, job.id ASC LIMIT 1 FOR UPDATE SKIP LOCKED", "cross2")
		require.Equal(t, 1, len(claimed), "jobs PHP's claim took:\n%s", showAll(claimed))
		require.Equal(t, itoa(goJob), val(claimed[0]["id"]), "job PHP's claim took: want the Go-dispatched job")
		assert.Equal(t, `{"y":2}`, val(claimed[0]["payload"]), "payload of the Go-dispatched job PHP claimed")
		assert.Equal(t, "2", val(claimed[0]["priority"]), "priority of the Go-dispatched job PHP claimed")
		_, err = tx.Exec("UPDATE "+jobs+" SET status = 'processing', reserved_at = NOW(), attempts = attempts + 1 WHERE id = ?", goJob)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		_, err = db.Exec("UPDATE "+jobs+" SET status = 'completed', completed_at = NOW() WHERE id = ?", goJob)
		require.NoError(t, err)
		j, err := e.c.Job(e.ctx, goJob)
		require.NoError(t, err, "Go reads the job PHP completed")
		assert.Equal(t, queuetytype.JobCompleted, j.Status, "status of the job PHP completed, read by Go: %+v", j)
		assert.Equal(t, 1, j.Attempts, "attempts of the job PHP completed, read by Go: %+v", j)
	})

	t.Run("every fixture loads", func(t *testing.T) {
		e := e.on(t)
		files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
		require.NoError(t, err, "fixtures")
		require.NotEmpty(t, files, "fixtures")
		for _, f := range files {
			fx, err := phpfixture.Load(f)
			require.NoError(t, err, f)
			for _, s := range fx.Snapshots {
				e.truncate()
				if !assert.NoError(t, s.Insert(db, p), "%s / %s", fx.Scenario, s.Label) {
					continue
				}
				for _, tbl := range phpTables {
					want, got := s.Rows(tbl), e.rows(tbl)
					if !assert.Equal(t, len(want), len(got), "%s / %s / %s: rows loaded (expected) and read back (actual)", fx.Scenario, s.Label, tbl) {
						continue
					}
					for i := range want {
						for col, v := range want[i] {
							assert.Equal(t, val(v), val(got[i][col]), "%s / %s / %s row %d: %s stored (expected) and read back (actual)", fx.Scenario, s.Label, tbl, i, col)
						}
					}
				}
			}
		}
	})
}
