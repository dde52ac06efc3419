// Package sqlstore implements driver.Store on database/sql. The row
// operations are written once, in SQL that MySQL, MariaDB, SQLite and
// PostgreSQL all accept (with ? placeholders, which the PostgreSQL store
// numbers); each store package (store/mysql, store/sqlite,
// store/postgres) supplies a Dialect
// for the few places where they differ (row locks, index hints, error
// codes, time encoding) and owns its schema and migrations.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/migrate"
)

// Dialect describes one database family. Its connections must report
// matched rows, not changed rows, as an UPDATE's RowsAffected (SQLite
// always does; the MySQL store sets CLIENT_FOUND_ROWS), so an update that
// writes the values a row already holds still counts it.
type Dialect struct {
	// Name is the store's driver name ("mysql", "sqlite", "postgres").
	Name string
	// ForUpdate and SkipLocked are appended to locking reads; empty for
	// databases that serialise writers instead (SQLite).
	ForUpdate  string // " FOR UPDATE"
	SkipLocked string // " FOR UPDATE SKIP LOCKED"
	// ByID is an index hint placed after the table name in statements that
	// select or update rows by primary key (" FORCE INDEX (PRIMARY)").
	ByID string
	// ByWorkflow is the index hint for statements that select a
	// workflow's jobs (" FORCE INDEX (idx_workflow)"). Left to itself,
	// MySQL may read the few open jobs through the status index, and a
	// locking read then locks the open jobs of every workflow.
	ByWorkflow string
	// TwoStepClaim makes a claim read its candidates' ids with a plain
	// read of the claim index, then lock those rows by primary key
	// (SKIP LOCKED), re-checking every condition. A locking scan of the
	// claim index visits every entry that earlier claims delete-marked
	// and purge has not removed yet, and checks each through the
	// clustered index: under a steady drain, thousands of entries and
	// most of a claim's time. A plain read passes them by in the index.
	TwoStepClaim bool
	// ScalarBlockers makes the claim's tests of a candidate's workflow and
	// dependency scalar subqueries by primary key instead of correlated
	// EXISTS. MariaDB rewrites a correlated EXISTS into an IN subquery and
	// may materialize it: every finished workflow and every completed job
	// read once a statement, where a scalar subquery reads one row a
	// candidate.
	ScalarBlockers bool
	// ClaimHint is the index hint for the claim query; "{jobs}" in it
	// stands for the jobs table's name (SQLite's index names carry the
	// table prefix).
	ClaimHint string
	// RunningHint is the index hint that makes a read of running
	// workflows in id order use the workflows' status index ("{workflows}"
	// stands for the table's name): ordered by id, the planner may prefer
	// the primary key and read every finished workflow on the way.
	RunningHint string
	// UnreservedHint is the index hint of the read of processing jobs
	// without reserved_at: an equality on both columns of (status,
	// reserved_at), which MySQL may otherwise read through the status
	// index, every processing job of it.
	UnreservedHint string
	// ProcessingByID is the condition, in the statements that find jobs
	// by id, that a job is still processing; empty means "status =
	// 'processing'". PostgreSQL names the other states instead: there
	// status = 'processing' implies the predicate of the partial
	// idx_reserved, and on a table without statistics the planner reads
	// every processing job of that index beside (or instead of) the
	// primary key's few entries.
	ProcessingByID string
	// StatusByComplement writes the status condition of the statements
	// that find jobs by id or by workflow (completing jobs, listing a
	// workflow's jobs) as the statuses left out, status NOT IN (...),
	// for the reason of ProcessingByID: status IN ('pending',
	// 'processing') implies the predicate of the partial
	// idx_handler_status, which a planner without statistics reads whole
	// beside the primary key or the workflow index (statusIn).
	StatusByComplement bool
	// Retryable reports a transient conflict: deadlock, lock-wait timeout,
	// busy database. The transaction is run again.
	Retryable func(error) bool
	// Duplicate reports a unique-key violation.
	Duplicate func(error) bool
	// DataError reports an error caused by the values of a row (see
	// driver.ErrRowData): out of range, truncated, refused by a CHECK
	// constraint or a trigger. Nil reports none.
	DataError func(error) bool
	// Time converts a time for a query parameter; frac says whether the
	// column keeps microseconds. Zero times are passed as NULL.
	Time func(t time.Time, frac bool) any
	// LogsByTime is the index hint of the series reads of log rows by
	// time, placed after the table (and its alias); "{logs}" stands for the
	// table's name. Read in created_at order, a read stops at its row
	// limit; through another index (the event's), it would read and sort
	// every row that index matches.
	LogsByTime string
	// SecondsBetween returns the SQL expression of the whole seconds from
	// one DATETIME column to another (to - from).
	SecondsBetween func(from, to string) string
	// InsertIDs returns the ids of n rows inserted by one statement.
	InsertIDs func(res sql.Result, n int) ([]int64, error)
	// Increment, when set, is a query returning the step between the ids
	// one multi-row INSERT takes on the transaction's connection, read
	// before and after each such insert instead of the step InsertIDs
	// knew at open: on a Galera cluster (wsrep_auto_increment_control)
	// the step follows the number of nodes, and changes when one leaves
	// or joins.
	Increment string
	// Hold, when set, lets the store hold claims (driver.HeldClaimer):
	// its statements bound how long the server keeps a held transaction
	// idle (see held.go).
	Hold *HoldSession
	// Begin starts a transaction.
	Begin func(ctx context.Context, db *sql.DB) (*sql.Tx, error)
	// PrepareHot keeps the statements of the claim, the completion and
	// the log rows prepared (stmtcache.go): SQLite parses and plans every
	// statement it is handed, and MySQL parses a batch's long statement
	// and reads its values as text. A statement is prepared on the pool
	// outside a transaction, before the next one begins.
	PrepareHot bool
	// Literals writes the NULLs, integers, plain strings and whole-second
	// times of the multi-row statements that are not kept prepared (a
	// batch's events, inserted jobs and workflows, the workflows'
	// updates) into their text instead of passing them as parameters
	// (literals.go), sparing each value's conversions in database/sql
	// and the driver.
	Literals bool
	// Arrays passes the values of a batch's multi-row statements (a
	// step's events, log rows and next jobs) as one array a column,
	// unnested, and a batch's id lists as one array (= ANY), so the
	// statement's text is the same whatever its row count (arrays.go):
	// PostgreSQL parses it once a connection, and plans it without a
	// node a value. Literals is then unused.
	Arrays bool
	// Upsert is the clause that makes an INSERT update the columns set of
	// the row that already has its unique key (the columns key) instead:
	// " ON DUPLICATE KEY UPDATE c = VALUES(c), ..." on MySQL, as Queuety
	// writes it, " ON CONFLICT (k, ...) DO UPDATE SET c = excluded.c, ..."
	// on SQLite.
	Upsert func(key, set []string) string
	// Returning makes an INSERT whose ids the store needs end in
	// " RETURNING id" and read them from its rows, for databases without
	// a last insert id (PostgreSQL); InsertIDs and Increment are then
	// unused.
	Returning bool
	// AbortsOnError says a failed statement aborts the whole transaction
	// (PostgreSQL): the inserts whose unique-key violation a caller
	// handles then run under a savepoint, rolled back to when they fail,
	// so the transaction goes on after one.
	AbortsOnError bool
	// ClaimReturning makes a claim one statement: an UPDATE of the rows
	// a locking read (FOR UPDATE SKIP LOCKED) picks, in a WITH clause,
	// returning the claimed rows (Statements.ClaimReturning). It saves a
	// round trip, and the UPDATE finds its rows by id from the read
	// instead of by a condition the planner may answer from another
	// index.
	ClaimReturning bool
	// ClaimByHandler makes that statement read the due jobs of each
	// claimed handler through an index by queue and handler in claim
	// order, and lock the first of them all, for up to 32 handlers
	// (claimReturningByHandler); parameters as $n (PostgreSQL).
	ClaimByHandler bool
	// ClaimOptions go before a claim's arguments, to the driver: on
	// PostgreSQL they send the claim unprepared, so the server plans it
	// with its values every time instead of going over to a generic plan
	// after five claims, which on a queue of unevenly spread handlers
	// reads another handler's backlog (postgres.claimOptions).
	ClaimOptions []any
	// BigInt, when set, is the type a 64-bit integer parameter is cast
	// to in an expression whose other operands are narrower columns
	// ("BIGINT" on PostgreSQL, which would give the parameter their
	// type); empty leaves the parameter bare.
	BigInt string
}

// processingByID is Dialect.ProcessingByID or its default.
func (d Dialect) processingByID() string {
	if d.ProcessingByID == "" {
		return "status = 'processing'"
	}
	return d.ProcessingByID
}

// bigParam is the marker of a 64-bit integer parameter (Dialect.BigInt).
func (d Dialect) bigParam() string {
	if d.BigInt == "" {
		return "?"
	}
	return "CAST(? AS " + d.BigInt + ")"
}

// Tables holds the prefixed table names.
type Tables struct {
	Jobs, Workflows, Logs, Schedules, QueueStates, Signals, DispatchKeys, Events, Failures, Migrations, Dependencies string
	Webhooks, Artifacts, Batches, BatchEvents                                                                        string

	// Chunks is Queuety's table of streaming steps' chunks.
	Chunks string

	// WebhookSecrets is the Go engine's table of webhook signing secrets,
	// one row per webhook id (Queuety PHP's webhooks table has no secret).
	WebhookSecrets string

	// WorkflowEnds is the Go engine's table of failed and cancelled
	// workflows whose compensations it dealt with.
	WorkflowEnds string

	// Locks is Queuety's named-lock table (middleware locks, throttle counters).
	Locks string

	// Limits and RateStarts are the Go engine's admission tables (limit
	// lock rows; starts of rate-limited handlers).
	Limits, RateStarts string

	// Names is how the names above were made.
	Names Names
	// StateMachines and StateMachineEvents are Queuety's state machine
	// tables; MachineTimers is the Go engine's table of armed state
	// timeouts.
	StateMachines, StateMachineEvents, MachineTimers string
	// Workers is the Go engine's worker registry.
	Workers string
	// HeldClaims is the Go engine's journal of held transactions
	// (MySQL and MariaDB).
	HeldClaims string
}

// NewTables returns the table names for a prefix ("wp_"), with Queuety's
// default table prefix and no overrides.
func NewTables(prefix string) Tables { return NamedTables(DefaultNames(prefix)) }

// NamedTables returns the table names n makes.
func NamedTables(n Names) Tables {
	q, g := n.Table, n.GoTable
	return Tables{
		Jobs: q("jobs"), Workflows: q("workflows"), Logs: q("logs"), Schedules: q("schedules"),
		QueueStates: q("queue_states"), Signals: q("signals"), DispatchKeys: q("workflow_dispatch_keys"),
		Events: q("workflow_events"), Failures: g("failures"), Migrations: g("migrations"),
		Dependencies: q("workflow_dependencies"), Webhooks: q("webhooks"), Artifacts: q("artifacts"),
		Batches: q("batches"), BatchEvents: g("batch_events"), Locks: q("locks"), WebhookSecrets: g("webhook_secrets"), Chunks: q("chunks"),
		WorkflowEnds: g("workflow_ends"), Limits: g("limits"), RateStarts: g("rate_starts"), Names: n,
		StateMachines: q("state_machines"), StateMachineEvents: q("state_machine_events"), MachineTimers: g("machine_timers"),
		Workers: g("workers"), HeldClaims: g("held_claims"),
	}
}

// Store is a driver.Store on database/sql.
type Store struct {
	DB         *sql.DB
	D          Dialect
	T          Tables
	info       driver.StoreInfo
	migrations migrate.Migrations
	q          queries
	stmts      *stmtCache // nil unless the dialect asks for PrepareHot
	rowsInsert *insertTexts
	due        *dueState // the tables MaintenanceDue leaves out (idle.go)
	heldLeft   *heldLeft // journal rows to delete again (heldjournal.go)
	// SQL holds the statements of the hot paths and the sweeps, exported
	// so a store's tests can EXPLAIN exactly what runs.
	SQL Statements
}

// New returns a Store whose Migrate applies migrations.
func New(db *sql.DB, d Dialect, prefix string, info driver.StoreInfo, migrations migrate.Migrations) *Store {
	return NewNamed(db, d, DefaultNames(prefix), info, migrations)
}

// NewNamed is New for tables named by n.
func NewNamed(db *sql.DB, d Dialect, n Names, info driver.StoreInfo, migrations migrate.Migrations) *Store {
	s := &Store{DB: db, D: d, T: NamedTables(n), info: info, migrations: migrations, rowsInsert: &insertTexts{}, due: &dueState{}, heldLeft: &heldLeft{}}
	s.q = buildQueries(s.T, d)
	s.SQL = buildStatements(s.T, d)
	if d.PrepareHot {
		s.stmts = newStmtCache()
	}
	return s
}

// Statements are the claim and sweep queries, without their locking clause.
type Statements struct {
	// Claim selects claimable jobs of one queue; its arguments are the
	// queue, now, the n handler names, the queue again, and the limit.
	Claim func(handlers int) string
	// HasDue is Claim's non-locking existence check (no limit argument).
	HasDue func(handlers int) string
	// ClaimWith and HasDueWith are Claim and HasDue with the admission
	// filters of driver.ClaimParams: after the queue-paused argument come
	// the excluded groups, then the cost cap when capCost is set.
	ClaimWith, HasDueWith func(handlers, excludedGroups int, capCost bool) string
	// ClaimCandidates is ClaimWith selecting only the ids, for a plain
	// (non-locking) read; ClaimByID locks what is left of them: its
	// arguments are the ids, then ClaimWith's without the limit
	// (Dialect.TwoStepClaim).
	ClaimCandidates func(handlers, excludedGroups int, capCost bool) string
	ClaimByID       func(ids, handlers, excludedGroups int, capCost bool) string
	// ClaimReturning claims in one statement (Dialect.ClaimReturning):
	// its arguments are ClaimWith's, the limit included, then the claim
	// time and the claim token.
	ClaimReturning func(handlers, excludedGroups int, capCost bool) string
	// Held is Claim narrowed to the jobs a held claim may take (heldOnly;
	// driver.HeldTx.JobLockHeld).
	Held func(handlers int) string
	// Stale selects processing jobs claimed before a time (arguments: the
	// lease time, the stale time, the limit; see driver.StaleParams), and
	// StaleUnreserved those with no claim time (the limit).
	Stale, StaleUnreserved string
	// TimedOut select the ids of jobs with one expired activity deadline
	// each (arguments: now, the limit).
	TimedOut []string
	// ExpiredExecution and ExpiredRun select non-terminal workflows past
	// their execution or run deadline (arguments: now, the limit).
	ExpiredExecution, ExpiredRun string
	// WaitExpired selects signal waits past their timeout (now, limit).
	WaitExpired string
	// RunningPositions selects the id, current_step and total_steps of
	// running workflows after an id, in id order (the id, the limit): a
	// range of the status index, whose entries end in the id.
	RunningPositions string
	// OldestDue selects the earliest due time of a queue's due pending
	// jobs (arguments: the queue, now).
	OldestDue string
	// OldestDueByQueue selects, per queue, the earliest due time of its
	// due pending jobs (argument: now).
	OldestDueByQueue string
	// DueSchedules and BufferedSchedules select schedules whose next run,
	// or buffered firing, is due (now, limit).
	DueSchedules, BufferedSchedules string
	// SignalPage, FailurePage and ArtifactPage are the bounded history
	// reads of a query (driver.Tx.SignalPage, FailurePage, ArtifactPage);
	// their arguments are the workflow id (when the query has one), then
	// the query's ids or job ids. FailureCounts counts a workflow's
	// failures by category (the workflow id).
	SignalPage    func(q driver.SignalQuery) string
	FailurePage   func(q driver.FailureQuery) string
	ArtifactPage  func(q driver.ArtifactQuery) string
	FailureCounts string
	// DependsOnMax selects the highest depends_on, if any (the last entry
	// of idx_depends: SQLite's and PostgreSQL's index holds only the rows
	// with one, and MIN/MAX would not use it there), and PendingDependents
	// the id, queue, handler, depends_on and status of the jobs that
	// depend on any of n ids (one seek of idx_depends each; the caller
	// keeps the pending ones: with the status in the statement, a
	// planner without statistics reads the pending jobs instead); see
	// driver.DependentsTx.
	DependsOnMax      string
	PendingDependents func(n int) string
}

// claimBlockers are the conditions a pending job of a claimed handler
// must also meet to be claimed, as "AND ..." clauses on the alias job:
// its workflow running or paused, its dependency completed, its queue not
// paused. queue is the placeholder of their one argument, the queue
// ("?", or "$n" in a statement that numbers its own). With
// Dialect.ScalarBlockers the first two read the workflow's and the
// dependency's status by primary key; a missing workflow row leaves the
// job claimable and a missing dependency does not, as the EXISTS form
// does.
func claimBlockers(t Tables, d Dialect, queue string) string {
	paused := " AND NOT EXISTS (SELECT 1 FROM " + t.QueueStates + " qs WHERE qs.queue = " + queue + " AND qs.paused = 1)"
	if d.ScalarBlockers {
		return " AND COALESCE((SELECT wf.status FROM " + t.Workflows + " wf" + d.ByID + " WHERE wf.id = job.workflow_id), 'running') IN ('running', 'paused')" +
			" AND (job.depends_on IS NULL OR (SELECT dep.status FROM " + t.Jobs + " dep" + d.ByID + " WHERE dep.id = job.depends_on) = 'completed')" +
			paused
	}
	return " AND NOT EXISTS (SELECT 1 FROM " + t.Workflows + " wf WHERE wf.id = job.workflow_id AND wf.status NOT IN ('running', 'paused'))" +
		" AND (job.depends_on IS NULL OR EXISTS (SELECT 1 FROM " + t.Jobs + " dep WHERE dep.id = job.depends_on AND dep.status = 'completed'))" +
		paused
}

// claimAdmission are a claim's admission conditions as "AND ..." clauses
// on the alias job: its concurrency group none of groups (placeholders
// joined by commas; "" for none), its cost at most cost (a placeholder;
// "" for no cap).
func claimAdmission(groups, cost string) string {
	var w string
	if groups != "" {
		w += " AND (job.concurrency_group IS NULL OR job.concurrency_group NOT IN (" + groups + "))"
	}
	if cost != "" {
		w += " AND job.cost_units <= " + cost
	}
	return w
}

func buildStatements(t Tables, d Dialect) Statements {
	where := func(handlers, groups int, capCost bool) string {
		cost := ""
		if capCost {
			cost = "?"
		}
		return "job.queue = ? AND job.status = 'pending' AND job.available_at <= ? AND job.handler IN (" + placeholders(handlers) + ")" +
			claimBlockers(t, d, "?") + claimAdmission(placeholders(groups), cost)
	}
	const claimOrder = " ORDER BY job.priority DESC, job.available_at ASC, job.id ASC"
	claimHint := strings.ReplaceAll(d.ClaimHint, "{jobs}", t.Jobs)
	claimWith := func(handlers, groups int, capCost bool) string {
		return "SELECT " + prefixed("job.", jobCols) + " FROM " + t.Jobs + " job" + claimHint + " WHERE " + where(handlers, groups, capCost) + claimOrder + " LIMIT ?"
	}
	claimCandidates := func(handlers, groups int, capCost bool) string {
		return "SELECT job.id FROM " + t.Jobs + " job" + claimHint + " WHERE " + where(handlers, groups, capCost) + claimOrder + " LIMIT ?"
	}
	claimByID := func(ids, handlers, groups int, capCost bool) string {
		return "SELECT " + prefixed("job.", jobCols) + " FROM " + t.Jobs + " job" + d.ByID + " WHERE job.id IN (" + placeholders(ids) + ") AND " +
			where(handlers, groups, capCost) + claimOrder
	}
	claimReturning := func(handlers, groups int, capCost bool) string {
		if d.ClaimByHandler && handlers <= claimByHandlerMax {
			return claimReturningByHandler(t, d, handlers, groups, capCost)
		}
		return "WITH claimed AS (" + claimCandidates(handlers, groups, capCost) + d.SkipLocked + ") UPDATE " + t.Jobs +
			" job SET status = 'processing', reserved_at = ?, claim_token = " + d.bigParam() + " + " + nextAttempt +
			", attempts = " + nextAttempt + " FROM claimed WHERE job.id = claimed.id RETURNING " + prefixed("job.", jobCols)
	}
	held := func(handlers int) string {
		return "SELECT " + prefixed("job.", jobCols) + " FROM " + t.Jobs + " job" + claimHint + " WHERE " + where(handlers, 0, false) + heldOnly + claimOrder + " LIMIT ?"
	}
	hasDueWith := func(handlers, groups int, capCost bool) string {
		return "SELECT 1 FROM " + t.Jobs + " job WHERE " + where(handlers, groups, capCost) + " LIMIT 1"
	}
	st := Statements{
		Claim:           func(handlers int) string { return claimWith(handlers, 0, false) },
		HasDue:          func(handlers int) string { return hasDueWith(handlers, 0, false) },
		ClaimWith:       claimWith,
		HasDueWith:      hasDueWith,
		ClaimCandidates: claimCandidates,
		ClaimByID:       claimByID,
		ClaimReturning:  claimReturning,
		Held:            held,
		// A claim whose token names its current attempt was made by a Go
		// worker, which renews it: it is stale after the lease timeout.
		// Other claims (Queuety PHP's) are stale after the stale timeout.
		Stale: "SELECT " + jobCols + " FROM " + t.Jobs + " WHERE status = 'processing' AND reserved_at < ?" +
			" AND (reserved_at < ? OR claim_token % 256 = attempts) ORDER BY reserved_at, id LIMIT ?",
		// A processing row without reserved_at (written by hand, or by a
		// writer that set the status without the time) has no claim time
		// to renew or wait for: it is stale at once. Its own read keeps
		// both reads one range of (status, reserved_at) each; with the
		// two conditions ORed, SQLite reads every processing row.
		StaleUnreserved: "SELECT " + jobCols + " FROM " + t.Jobs + d.UnreservedHint + " WHERE status = 'processing' AND reserved_at IS NULL ORDER BY id LIMIT ?",
		OldestDue: "SELECT available_at FROM " + t.Jobs + " WHERE queue = ? AND status = 'pending' AND available_at <= ?" +
			" ORDER BY available_at LIMIT 1",
		OldestDueByQueue: "SELECT queue, MIN(available_at) FROM " + t.Jobs + " WHERE status = 'pending' AND available_at <= ? GROUP BY queue",
		ExpiredExecution: "SELECT " + workflowCols + " FROM " + t.Workflows + " WHERE status IN (" + nonTerminal + ") AND deadline_at <= ? LIMIT ?",
		ExpiredRun:       "SELECT " + workflowCols + " FROM " + t.Workflows + " WHERE status IN (" + nonTerminal + ") AND run_deadline_at <= ? LIMIT ?",
		WaitExpired:      "SELECT " + workflowCols + " FROM " + t.Workflows + " WHERE status = 'waiting_for_signal' AND wait_deadline_at <= ? ORDER BY wait_deadline_at, id LIMIT ?",
		RunningPositions: "SELECT id, current_step, total_steps FROM " + t.Workflows + strings.ReplaceAll(d.RunningHint, "{workflows}", t.Workflows) +
			" WHERE status = 'running' AND id > ? ORDER BY id LIMIT ?",
		DueSchedules:      "SELECT " + scheduleCols + " FROM " + t.Schedules + " WHERE enabled = 1 AND next_run <= ? ORDER BY next_run, id LIMIT ?",
		BufferedSchedules: "SELECT " + scheduleCols + " FROM " + t.Schedules + " WHERE enabled = 1 AND pending_run <= ? ORDER BY pending_run, id LIMIT ?",
		SignalPage:        func(q driver.SignalQuery) string { return signalPageSQL(t, q) },
		FailurePage:       func(q driver.FailureQuery) string { return failurePageSQL(t, q) },
		ArtifactPage:      func(q driver.ArtifactQuery) string { return artifactPageSQL(t, q) },
		FailureCounts:     "SELECT category, COUNT(*) FROM " + t.Failures + " WHERE workflow_id = ? GROUP BY category ORDER BY category",
		DependsOnMax:      "SELECT depends_on FROM " + t.Jobs + " WHERE depends_on IS NOT NULL ORDER BY depends_on DESC LIMIT 1",
		PendingDependents: func(n int) string {
			return "SELECT id, queue, handler, depends_on, status FROM " + t.Jobs + " WHERE depends_on IN (" + placeholders(n) + ")"
		},
	}
	for _, col := range []string{"schedule_to_close_at", "schedule_to_start_at", "heartbeat_deadline_at", "start_to_close_at"} {
		st.TimedOut = append(st.TimedOut, "SELECT id FROM "+t.Jobs+" WHERE "+col+" <= ? LIMIT ?")
	}
	return st
}

// SplitStatements splits a schema file into its statements, without the
// "--" comment lines and the terminating semicolons.
func SplitStatements(ddl string) []string {
	var out []string
	for _, stmt := range strings.Split(ddl, ";") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		if st := strings.TrimSpace(strings.Join(lines, "\n")); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// Info implements driver.Store.
func (s *Store) Info() driver.StoreInfo { return s.info }

// Migrate implements driver.Store.
func (s *Store) Migrate(ctx context.Context) error { return s.migrate(ctx) }

// Close implements driver.Store.
func (s *Store) Close() error {
	if s.stmts != nil {
		s.stmts.close()
	}
	return s.DB.Close()
}

// maxTxAttempts bounds how often InTx re-runs a transaction that hit a
// transient conflict.
const maxTxAttempts = 12

// ErrCommitUnknown wraps an error returned by COMMIT itself: the
// transaction may or may not have been applied, so it is not retried.
var ErrCommitUnknown = errors.New("sqlstore: commit outcome unknown")

// InTx implements driver.Store. Conflicts reported before COMMIT
// (deadlocks, lock-wait timeouts, a busy database, and a connection lost
// mid-transaction, which the server rolls back) re-run fn with jittered
// backoff. A COMMIT the server refused as a conflict (Dialect.Retryable:
// a deadlock, or a Galera certification failure, which surfaces only at
// COMMIT) re-runs fn too, since nothing of it was applied; any other error
// from COMMIT itself is returned, never retried. The job note of ctx
// (jobnote) keeps only what the attempt that committed noted: each
// attempt rolled back is rewound, so a retried transaction wakes workers
// for its jobs once, and one that fails for none. A COMMIT of unknown
// outcome keeps its notes: a wake-up for nothing is harmless, a missed
// one is not.
func (s *Store) InTx(ctx context.Context, fn func(driver.Tx) error) error {
	note := jobnote.Of(ctx)
	mark := note.Mark()
	var err error
	for attempt := 0; attempt < maxTxAttempts; attempt++ {
		if attempt > 0 {
			wait := time.Duration(1<<min(attempt, 7)) * 2 * time.Millisecond
			wait += time.Duration(rand.Int64N(int64(wait)))
			select {
			case <-ctx.Done():
				return errors.Join(ctx.Err(), err)
			case <-time.After(wait):
			}
		}
		if s.stmts != nil && s.stmts.hasWanted() {
			s.stmts.prepareWanted(ctx, s.DB)
		}
		var tx *sql.Tx
		tx, err = s.D.Begin(ctx, s.DB)
		if err != nil {
			if s.transient(err) {
				continue
			}
			return fmt.Errorf("begin: %w", err)
		}
		err = fn(&txn{s: s, tx: tx})
		if err != nil {
			_ = tx.Rollback()
			note.Rewind(mark)
			if s.transient(err) && ctx.Err() == nil {
				continue
			}
			return s.markRowData(ctx, err)
		}
		if cerr := tx.Commit(); cerr != nil {
			if s.D.Retryable(cerr) { // the server refused the commit: nothing applied
				note.Rewind(mark)
				err = cerr
				continue
			}
			return fmt.Errorf("%w: %w", ErrCommitUnknown, cerr)
		}
		return nil
	}
	return fmt.Errorf("transaction failed after %d attempts: %w", maxTxAttempts, err)
}

// markRowData marks err with driver.ErrRowData, keeping its text, when the
// values of a row caused it: the database refused a value (Dialect.
// DataError) or a value read could not be scanned into its Go type. An
// error after the context ended is never marked: a scan of a result the
// cancellation closed fails too.
func (s *Store) markRowData(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, driver.ErrRowData) {
		return err
	}
	var se scanError
	if errors.As(err, &se) || (s.D.DataError != nil && s.D.DataError(err)) {
		return rowDataError{err}
	}
	return err
}

// scanError is an error from scanning a row a query returned: the value
// the database sent does not convert to its Go type.
type scanError struct{ err error }

func (e scanError) Error() string { return e.err.Error() }
func (e scanError) Unwrap() error { return e.err }

// rowDataError marks an error as driver.ErrRowData without changing its
// text.
type rowDataError struct{ err error }

func (e rowDataError) Error() string        { return e.err.Error() }
func (e rowDataError) Unwrap() error        { return e.err }
func (e rowDataError) Is(target error) bool { return target == driver.ErrRowData }

// transient reports errors worth re-running a whole transaction for.
func (s *Store) transient(err error) bool {
	if errors.Is(err, driver.ErrNotFound) {
		return false
	}
	return s.D.Retryable(err) || errors.Is(err, sql.ErrConnDone) || isBadConn(err) || errors.Is(err, errIncrementChanged)
}

// errIncrementChanged reports a multi-row insert during which the step
// between auto-increment ids changed (a Galera node joined or left): the
// ids its rows took are unknown, so the transaction is run again.
var errIncrementChanged = errors.New("the auto-increment step changed during a multi-row insert")
