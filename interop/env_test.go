package interop_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/mysql"
	"github.com/queuety/queuety-go/worker"
)

// fixtureDir is the project's copy of Queuety PHP's rows.
const fixtureDir = "../testdata/queuety-php"

var schemaPath = filepath.Join(fixtureDir, "schema.sql")

// phpTables are Queuety's sixteen tables, without prefix, in schema.sql
// order.
var phpTables = []string{
	"queuety_jobs", "queuety_workflows", "queuety_logs", "queuety_schedules", "queuety_queue_states",
	"queuety_webhooks", "queuety_signals", "queuety_workflow_dependencies", "queuety_workflow_dispatch_keys",
	"queuety_locks", "queuety_batches", "queuety_chunks", "queuety_workflow_events", "queuety_artifacts",
	"queuety_state_machines", "queuety_state_machine_events",
}

// goOnlyColumns are the nullable columns the Go migrations add to
// Queuety's tables. Queuety PHP never reads or writes them.
var goOnlyColumns = map[string][]string{
	"queuety_jobs": {"claim_token", "schedule_to_start_at", "start_to_close_at", "schedule_to_close_at",
		"heartbeat_deadline_at", "last_heartbeat_at"},
	"queuety_workflows": {"run_number", "run_started_at", "run_deadline_at", "wait_deadline_at"},
	"queuety_schedules": {"workflow_definition", "catch_up", "last_run_ref", "pending_run"},
}

func isGoOnly(table, col string) bool {
	for _, c := range goOnlyColumns[table] {
		if c == col {
			return true
		}
	}
	return false
}

// env is one test's database: PHP's tables under a fresh prefix, migrated
// by a Go client that runs on a fake clock.
type env struct {
	t      *testing.T
	ctx    context.Context
	fx     *phpfixture.Fixture
	db     *sql.DB // raw SQL, no parseTime: every value reads as its stored text
	prefix string
	clock  *queuety.FakeClock
	c      *queuety.Client
	loaded *phpfixture.Snapshot // the snapshot loaded last
}

// newEnv creates Queuety's tables exactly as PHP does (schema.sql), then
// opens a Go client on them, which runs the Go migrations on top.
// fixture names a scenario file; "" opens the client without one.
func newEnv(t *testing.T, fixture string) *env {
	t.Helper()
	dsn, prefix := testdb.DSN(t)
	db := testdb.Admin(t)
	require.NoError(t, phpfixture.CreateSchema(db, prefix, schemaPath), "create PHP's tables")
	e := &env{t: t, ctx: context.Background(), db: db, prefix: prefix}
	start := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	if fixture != "" {
		fx, err := phpfixture.Load(filepath.Join(fixtureDir, fixture))
		require.NoError(t, err, "load fixture %s", fixture)
		e.fx = fx
		start = fx.Snapshots[0].Now()
	}
	e.clock = queuety.NewFakeClock(start)
	c, err := queuety.Open(e.ctx, dsn, queuety.WithClock(e.clock), queuety.WithLogger(testLogger(t)))
	require.NoError(t, err, "open client on PHP-created tables (runs the Go migrations)")
	t.Cleanup(func() { c.Close() })
	e.c = c
	return e
}

// on returns a copy of e that reports failures to t. A subtest that uses
// its parent's env must use it through on(t): stopping the parent test from
// the subtest's goroutine is not allowed.
func (e *env) on(t *testing.T) *env {
	sub := *e
	sub.t = t
	return &sub
}

// snap returns the fixture's snapshot by label (or unique label prefix).
func (e *env) snap(label string) *phpfixture.Snapshot {
	e.t.Helper()
	s := e.fx.Snapshot(label)
	require.NotNil(e.t, s, "%s has no snapshot %q", e.fx.Scenario, label)
	return s
}

// load empties the tables, inserts a snapshot's rows unshifted and sets the
// fake clock to the snapshot's db_now: the Go engine compares due times and
// deadlines with its clock, never with SQL NOW().
func (e *env) load(label string) *phpfixture.Snapshot {
	e.t.Helper()
	s := e.snap(label)
	e.truncate()
	require.NoError(e.t, s.Insert(e.db, e.prefix), "load snapshot %q", label)
	e.clock.Set(s.Now())
	e.loaded = s
	return s
}

// truncate empties Queuety's tables, the Go failures table, the Go
// admission tables and the webhook secrets (not the Go migrations table).
func (e *env) truncate() {
	e.t.Helper()
	for _, tbl := range append(append([]string{}, phpTables...), "queuety_go_failures", "queuety_go_batch_events", "queuety_go_limits", "queuety_go_rate_starts", "queuety_go_webhook_secrets", "queuety_go_workflow_ends", "queuety_go_machine_timers", "queuety_go_workers", "queuety_go_held_claims") {
		_, err := e.db.Exec("TRUNCATE TABLE `" + e.prefix + tbl + "`")
		require.NoError(e.t, err, "truncate %s", tbl)
	}
}

// rows reads a table (name without prefix) with every value as its stored
// text, ordered by id (or by its first column when it has no id).
func (e *env) rows(table string) []phpfixture.Row {
	e.t.Helper()
	return queryRows(e.t, e.db, "SELECT * FROM `"+e.prefix+table+"` ORDER BY 1")
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

// queryRows runs q and reads every row as column -> stored text.
func queryRows(t *testing.T, db querier, q string, args ...any) []phpfixture.Row {
	t.Helper()
	rs, err := db.Query(q, args...)
	require.NoError(t, err, q)
	return scanRows(t, rs)
}

// scanRows reads every row as column -> stored text (nil for NULL) and
// closes rs.
func scanRows(t *testing.T, rs *sql.Rows) []phpfixture.Row {
	t.Helper()
	defer rs.Close()
	cols, err := rs.Columns()
	require.NoError(t, err)
	var out []phpfixture.Row
	for rs.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rs.Scan(ptrs...))
		r := phpfixture.Row{}
		for i, c := range cols {
			if vals[i].Valid {
				v := vals[i].String
				r[c] = &v
			} else {
				r[c] = nil
			}
		}
		out = append(out, r)
	}
	require.NoError(t, rs.Err())
	return out
}

// worker returns a Go worker that runs one job at a time, in claim order
// (eager step handoff is off: a handed-off step would run ahead of the
// jobs queued before it, where Queuety PHP takes them in claim order and
// the fixtures record that order). It writes a failed attempt's rows before it takes the next job, and its
// successes in order, but a success is recorded by the completer while the
// next job runs: a success's rows may follow a failure of a job taken
// after it (see logsJobsInAnyOrder).
func (e *env) worker(opts ...worker.Option) *worker.Worker {
	base := []worker.Option{worker.NoMaintenance(), worker.Concurrency(1), worker.EagerSteps(false)}
	return worker.New(e.c, append(base, opts...)...)
}

// drain runs w once: every due job it has a handler for, then it returns.
func (e *env) drain(w *worker.Worker) worker.Stats {
	e.t.Helper()
	st, err := w.RunOnce(e.ctx, time.Minute)
	require.NoError(e.t, err, "RunOnce")
	return st
}

// recorder keeps what handlers received, in call order.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	handler string
	input   queuety.State
}

func (r *recorder) add(handler string, in queuety.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{handler, in})
}

func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) handlers() []string {
	var out []string
	for _, c := range r.all() {
		out = append(out, c.handler)
	}
	return out
}

// step registers a step handler that records its input and returns out
// (computed from the input).
func step(w *worker.Worker, rec *recorder, name string, out func(queuety.State) queuety.State) {
	w.HandleStep(name, func(_ context.Context, s queuety.State) (queuety.State, error) {
		rec.add(name, s)
		return out(s), nil
	})
}

// stepBodies maps step handler names to what each returns for its input.
type stepBodies map[string]func(queuety.State) queuety.State

// runSteps runs the due jobs once with a fresh Go worker that has the
// given step handlers, recording their inputs in rec.
func (e *env) runSteps(rec *recorder, bodies stepBodies) worker.Stats {
	e.t.Helper()
	w := e.worker()
	for name, out := range bodies {
		step(w, rec, name, out)
	}
	return e.drain(w)
}

// expect compares the tables with want (PHP's snapshot, possibly adjusted)
// and the inputs rec recorded with want's step_started events after event
// id since.
func (e *env) expect(want *phpfixture.Snapshot, rec *recorder, since int) {
	e.t.Helper()
	e.compareWith(want)
	checkInputs(e.t, rec, want, since)
}

// runExpect runs the due jobs once with a fresh Go worker that has the
// given step handlers, then checks the tables and the handlers' inputs
// against want, as expect does.
func (e *env) runExpect(bodies stepBodies, want *phpfixture.Snapshot, since int) {
	e.t.Helper()
	rec := &recorder{}
	e.runSteps(rec, bodies)
	e.expect(want, rec, since)
}

// constant returns a step body that always returns out.
func constant(out queuety.State) func(queuety.State) queuety.State {
	return func(queuety.State) queuety.State { return out }
}

// phpException is an error that reports a PHP exception class, as the
// fixtures' handlers throw them. The engine stores ErrorClass() in
// logs.error_class and in workflow_events.error.class.
type phpException struct{ class, msg string }

func (e *phpException) Error() string      { return e.msg }
func (e *phpException) ErrorClass() string { return e.class }

// testLogger sends the client's warnings and errors to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// str returns a pointer to s, for expected row values.
func str(s string) *string { return &s }

// sortedKeys returns a row's column names in order.
func sortedKeys(r phpfixture.Row) []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
