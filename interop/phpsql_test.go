package interop_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
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
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []columnDef
	for rs.Next() {
		var c columnDef
		if err := rs.Scan(&c.Name, &c.Position, &c.Type, &c.Nullable, &c.Default, &c.Extra, &c.Collation); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]string{}
	for rs.Next() {
		var name, cols string
		var nonUnique int
		if err := rs.Scan(&name, &nonUnique, &cols); err != nil {
			t.Fatal(err)
		}
		out[name] = cols
		if nonUnique == 0 {
			out[name] += " UNIQUE"
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
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
	if err := phpfixture.CreateSchema(db, pristine, schemaPath); err != nil {
		t.Fatal(err)
	}

	t.Run("schema", func(t *testing.T) {
		for _, tbl := range phpTables {
			want, got := columnDefs(t, db, pristine+tbl), columnDefs(t, db, p+tbl)
			if len(want) == 0 {
				t.Fatalf("%s: schema.sql created no such table", tbl)
			}
			if len(got) < len(want) {
				t.Fatalf("%s: %d columns after migration, PHP created %d", tbl, len(got), len(want))
			}
			for i, w := range want {
				if got[i] != w {
					t.Errorf("%s: column changed by the migrations:\n  PHP %+v\n  Go  %+v", tbl, w, got[i])
				}
			}
			for _, g := range got[len(want):] {
				if !isGoOnly(tbl, g.Name) || g.Nullable != "YES" {
					t.Errorf("%s: added column %+v is not a known nullable Go column", tbl, g)
				}
			}
			wi, gi := indexDefs(t, db, pristine+tbl), indexDefs(t, db, p+tbl)
			if _, ok := wi["PRIMARY"]; !ok {
				t.Errorf("%s: PHP's table has no primary key: %v", tbl, wi)
			}
			for name, cols := range wi {
				if gi[name] != cols {
					t.Errorf("%s: index %s is %q after migration, PHP created %q", tbl, name, gi[name], cols)
				}
			}
			for name, cols := range gi {
				if _, ok := wi[name]; !ok && !strings.HasPrefix(name, "idx_go_") {
					t.Errorf("%s: unexpected index %s (%s)", tbl, name, cols)
				}
			}
		}
		tables, err := testdb.Tables(db, p)
		if err != nil {
			t.Fatal(err)
		}
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
		if jsonOf(sorted(extra)) != jsonOf([]string{"queuety_go_failures", "queuety_go_migrations"}) {
			t.Errorf("tables added by the migrations: %v", extra)
		}
	})

	t.Run("PHP statements", func(t *testing.T) {
		jobs, wfs, logs, events := "`"+p+"queuety_jobs`", "`"+p+"queuety_workflows`", "`"+p+"queuety_logs`", "`"+p+"queuety_workflow_events`"
		exec := func(q string, args ...any) sql.Result {
			t.Helper()
			res, err := db.Exec(q, args...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return res
		}
		lastID := func(res sql.Result) int64 {
			id, err := res.LastInsertId()
			if err != nil {
				t.Fatal(err)
			}
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
		if len(rows) != 1 {
			t.Fatalf("SELECT * found %d rows", len(rows))
		}
		gotCols := columnNames(t, db, p+"queuety_jobs")
		if jsonOf(gotCols[:len(phpCols)]) != jsonOf(phpCols) {
			t.Errorf("SELECT * column order: %v, PHP's %v", gotCols, phpCols)
		}
		for _, c := range goOnlyColumns["queuety_jobs"] {
			if rows[0][c] != nil {
				t.Errorf("Go column %s = %s on a row PHP inserted", c, val(rows[0][c]))
			}
		}

		// Queue::claim, in PHP's transaction.
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		claimed := queryRows(t, tx, "SELECT job.* FROM "+jobs+" AS job FORCE INDEX (idx_queue_claim) WHERE job.status = 'pending' AND job.queue = ? "+
			"AND job.available_at <= NOW() "+
			"AND (job.workflow_id IS NULL OR EXISTS (SELECT 1 FROM "+wfs+" AS wf WHERE wf.id = job.workflow_id AND wf.status IN ('running','paused'))) "+
			"AND (job.depends_on IS NULL OR EXISTS (SELECT 1 FROM "+jobs+" AS dep WHERE dep.id = job.depends_on AND dep.status = 'completed')) "+
			"ORDER BY job.priority DESC, job.id ASC LIMIT 1 FOR UPDATE SKIP LOCKED", "php")
		if len(claimed) != 1 || *claimed[0]["id"] != itoa(jobID) {
			t.Fatalf("PHP's claim took %v, want job %d (priority 2)", showAll(claimed), jobID)
		}
		if _, err := tx.Exec("UPDATE "+jobs+" SET status = 'processing', reserved_at = NOW(), attempts = attempts + 1 WHERE id = ?", jobID); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
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
		if err != nil {
			t.Fatal(err)
		}
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
			if _, err := tx.Exec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if _, err := tx.Exec("INSERT INTO "+events+" (workflow_id, job_id, step_index, step_name, step_type, handler, event, queue, attempt, "+
			"input, output, state_before, state_after, context, duration_ms) VALUES (?, ?, 0, '0', 'single', 'A', 'step_completed', 'php', 1, "+
			"'{\"n\":1}', '{\"a\":true}', '{\"n\":1}', '{\"n\":1,\"a\":true}', NULL, 1)", wfID, stepJob); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		exec("UPDATE "+wfs+" SET status = 'failed', failed_at = NOW(), error_message = ?, state = ? WHERE id = ? "+
			"AND status IN ('running','paused','waiting_for_signal','waiting_for_workflows')", "boom", state, wfID)
		exec("UPDATE "+wfs+" SET status = 'running', failed_at = NULL, error_message = NULL WHERE id = ?", wfID)
		exec("INSERT INTO `"+p+"queuety_signals` (workflow_id, signal_name, payload) VALUES (?, 'approval', '[]')", wfID)
		exec("INSERT INTO `" + p + "queuety_queue_states` (queue, paused, paused_at) VALUES ('php', 1, NOW()) ON DUPLICATE KEY UPDATE paused = 1, paused_at = NOW()")
		exec("DELETE FROM `" + p + "queuety_queue_states` WHERE queue = 'php'")
		queryRows(t, db, "SELECT * FROM "+wfs+" WHERE status = 'running' AND deadline_at IS NOT NULL AND deadline_at <= NOW()")
		for _, c := range goOnlyColumns["queuety_workflows"] {
			if r := one(t, queryRows(t, db, "SELECT * FROM "+wfs+" WHERE id = ?", wfID), "id", itoa(wfID)); r[c] != nil {
				t.Errorf("Go column %s = %s on a workflow PHP inserted", c, val(r[c]))
			}
		}

		// Go reads what PHP wrote.
		if j, err := e.c.Job(e.ctx, jobID); err != nil || j.Status != queuety.JobCompleted || string(j.HeartbeatData) != `{"done":3}` {
			t.Errorf("Go reads PHP's job: %+v, %v", j, err)
		}
		if wf, err := e.c.Workflow(e.ctx, wfID); err != nil || wf.Status != queuety.WorkflowRunning || wf.CurrentStep != 1 || wf.RunNumber != 0 {
			t.Errorf("Go reads PHP's workflow: %+v, %v", wf, err)
		}
	})

	t.Run("rows cross over", func(t *testing.T) {
		jobs := "`" + p + "queuety_jobs`"
		// A job inserted by PHP's statement, run by a Go worker.
		res, err := db.Exec("INSERT INTO "+jobs+" (queue, handler, payload, payload_hash, priority, status, max_attempts, available_at, "+
			"workflow_id, step_index, depends_on, batch_id, concurrency_group, concurrency_limit, cost_units) "+
			"VALUES ('cross', 'php_made', '{\"x\":1}', NULL, 0, 'pending', 3, ?, NULL, NULL, NULL, NULL, NULL, NULL, 1)",
			e.clock.Now().Format(phpfixture.DBNowLayout))
		if err != nil {
			t.Fatal(err)
		}
		phpJob, err := res.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		rec := &jobRecorder{}
		w := e.worker(worker.Queues("cross"))
		rec.handle(w, "php_made", nil)
		if st := e.drain(w); st.Succeeded != 1 {
			t.Fatalf("Go worker on a PHP-inserted job: %+v", st)
		}
		if r := one(t, e.rows("queuety_jobs"), "id", itoa(phpJob)); val(r["status"]) != "completed" || val(r["attempts"]) != "1" {
			t.Errorf("after the Go worker: %s", show(r))
		}

		// A job dispatched by Go, taken by PHP's claim.
		goJob, err := e.c.Dispatch(e.ctx, "go_made", map[string]any{"y": 2}, queuety.OnQueue("cross2"), queuety.WithPriority(queuety.PriorityHigh))
		if err != nil {
			t.Fatal(err)
		}
		// PHP compares available_at with NOW(); the Go job is due at the
		// fake clock's time, which is in the past.
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		claimed := queryRows(t, tx, "SELECT job.* FROM "+jobs+" AS job FORCE INDEX (idx_queue_claim) WHERE job.status = 'pending' AND job.queue = ? "+
			"AND job.available_at <= NOW() AND (job.workflow_id IS NULL) AND (job.depends_on IS NULL) "+
			"ORDER BY job.priority DESC, job.id ASC LIMIT 1 FOR UPDATE SKIP LOCKED", "cross2")
		if len(claimed) != 1 || *claimed[0]["id"] != itoa(goJob) || val(claimed[0]["payload"]) != `{"y":2}` || val(claimed[0]["priority"]) != "2" {
			t.Fatalf("PHP's claim on a Go-dispatched job: %s", showAll(claimed))
		}
		if _, err := tx.Exec("UPDATE "+jobs+" SET status = 'processing', reserved_at = NOW(), attempts = attempts + 1 WHERE id = ?", goJob); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("UPDATE "+jobs+" SET status = 'completed', completed_at = NOW() WHERE id = ?", goJob); err != nil {
			t.Fatal(err)
		}
		if j, err := e.c.Job(e.ctx, goJob); err != nil || j.Status != queuety.JobCompleted || j.Attempts != 1 {
			t.Errorf("Go reads the job PHP completed: %+v, %v", j, err)
		}
	})

	t.Run("every fixture loads", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("fixtures: %v, %v", files, err)
		}
		for _, f := range files {
			fx, err := phpfixture.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range fx.Snapshots {
				e.truncate()
				if err := s.Insert(db, p); err != nil {
					t.Errorf("%s / %s: %v", fx.Scenario, s.Label, err)
					continue
				}
				for _, tbl := range phpTables {
					want, got := s.Rows(tbl), e.rows(tbl)
					if len(want) != len(got) {
						t.Errorf("%s / %s / %s: loaded %d rows, read %d", fx.Scenario, s.Label, tbl, len(want), len(got))
						continue
					}
					for i := range want {
						for col, v := range want[i] {
							if val(v) != val(got[i][col]) {
								t.Errorf("%s / %s / %s row %d: %s stored %s, read back %s", fx.Scenario, s.Label, tbl, i, col, val(v), val(got[i][col]))
							}
						}
					}
				}
			}
		}
	})
}
