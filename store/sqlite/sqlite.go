// Package sqlite is the embedded queuety store: a single SQLite file (or
// memory) through modernc.org/sqlite, pure Go with no cgo. It behaves like
// the MySQL store (the same conformance suite runs against both) and needs
// no setup, which makes it the default for development, tests, demos and
// single-machine deployments.
//
//	import _ "github.com/queuety/queuety-go/store/sqlite"
//
//	q, err := queuety.Open(ctx, "sqlite://queuety.db")
//	q, err := queuety.Open(ctx, "sqlite://:memory:")
//
// SQLite serialises writers. Every transaction starts with BEGIN
// IMMEDIATE, so a transaction holds the write lock from its first
// statement and row locks are unnecessary; other processes on the same
// file wait (busy_timeout, 10 s by default) instead of failing. Files use
// WAL journaling. Options in the DSN query: prefix (table prefix, default
// none) and busy_timeout (milliseconds).
package sqlite

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/store/migrate"
)

func init() { driver.Register("sqlite", driver.NewDriver(ParseDSN, OpenConfig)) }

//go:embed schema.sql
var schemaSQL string

// Config is a parsed sqlite:// DSN.
type Config struct {
	Path        string // file path, or ":memory:"
	Prefix      string
	BusyTimeout time.Duration
}

// ParseDSN parses sqlite://path?prefix=...&busy_timeout=ms.
func ParseDSN(dsn string) (*Config, error) {
	rest, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok {
		return nil, fmt.Errorf("%w: sqlite DSN must start with sqlite://", driver.ErrInvalidArgument)
	}
	path, rawQuery, _ := strings.Cut(rest, "?")
	if path == "" {
		return nil, fmt.Errorf("%w: sqlite DSN names no file (use sqlite://queuety.db or sqlite://:memory:)", driver.ErrInvalidArgument)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: sqlite DSN parameters: %v", driver.ErrInvalidArgument, err)
	}
	for k, vs := range q {
		switch {
		case strings.HasPrefix(k, "table_"):
			return nil, fmt.Errorf("%w: sqlite DSN parameter %s: table names can be changed on the MySQL store only, whose tables Queuety PHP shares (an SQLite file is Go's alone; use prefix)", driver.ErrInvalidArgument, k)
		case k != "prefix" && k != "busy_timeout":
			return nil, fmt.Errorf("%w: unknown sqlite DSN parameter %q (known: prefix, busy_timeout)", driver.ErrInvalidArgument, k)
		case len(vs) > 1:
			return nil, fmt.Errorf("%w: sqlite DSN parameter %s is given %d times", driver.ErrInvalidArgument, k, len(vs))
		}
	}
	c := &Config{Path: path, Prefix: q.Get("prefix"), BusyTimeout: 10 * time.Second}
	if v := q.Get("busy_timeout"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%w: busy_timeout must be milliseconds", driver.ErrInvalidArgument)
		}
		c.BusyTimeout = time.Duration(ms) * time.Millisecond
	}
	return c, driver.ValidatePrefix(c.Prefix)
}

// OpenConfig opens a store from a parsed Config.
func OpenConfig(ctx context.Context, cfg *Config) (*Store, error) {
	memory := cfg.Path == ":memory:"
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(0)")
	if !memory {
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", "synchronous(NORMAL)")
	}
	params.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+cfg.Path+"?"+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	// One connection: SQLite has one writer, and an in-memory database
	// lives exactly as long as its connection.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var version string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", cfg.Path, err)
	}
	s := &Store{cfg: cfg}
	info := driver.StoreInfo{Driver: "sqlite", Server: "SQLite " + version, Prefix: cfg.Prefix, Address: cfg.Path, SerialWriters: true}
	s.Store = sqlstore.New(db, dialect, cfg.Prefix, info, migrations(cfg.Prefix))
	return s, nil
}

// Store is the SQLite store.
type Store struct {
	*sqlstore.Store
	cfg *Config
}

// migrations returns the SQLite schema history for a table prefix. Each
// version runs in its own immediate transaction, so concurrent openers
// serialise on SQLite's write lock and re-check under it.
func migrations(prefix string) migrate.Migrations {
	t := sqlstore.NewTables(prefix).Schedules
	return migrate.Migrations{
		List: []migrate.Migration{
			{Version: 1, Name: "Queuety tables and Go engine columns", Up: migrate.Statements(func() []string {
				return sqlstore.SplitStatements(strings.ReplaceAll(schemaSQL, "{prefix}", prefix))
			})},
			{Version: 2, Name: "Go engine: workflow schedules, catch-up policy, buffered firings", Up: migrate.Statements(func() []string {
				return []string{
					"ALTER TABLE " + t + " ADD COLUMN workflow_definition TEXT DEFAULT NULL",
					"ALTER TABLE " + t + " ADD COLUMN catch_up TEXT DEFAULT NULL",
					"ALTER TABLE " + t + " ADD COLUMN last_run_ref INTEGER DEFAULT NULL",
					"ALTER TABLE " + t + " ADD COLUMN pending_run TEXT DEFAULT NULL",
					"CREATE INDEX IF NOT EXISTS " + t + "_idx_go_pending_run ON " + t + " (enabled, pending_run)",
				}
			})},
			{Version: 3, Name: "Go engine: claim tokens name their attempt; clear tokens left on pending jobs", Up: migrate.Statements(func() []string {
				return []string{"UPDATE " + sqlstore.NewTables(prefix).Jobs + " SET claim_token = NULL WHERE status = 'pending' AND claim_token IS NOT NULL"}
			})},
			{Version: 4, Name: "Go engine: batch events table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS " + sqlstore.NewTables(prefix).BatchEvents + " (batch_id INTEGER NOT NULL, " +
					"event TEXT NOT NULL, callback TEXT DEFAULT NULL, runtime TEXT DEFAULT NULL, job_id INTEGER DEFAULT NULL, " +
					"created_at TEXT NOT NULL, PRIMARY KEY (batch_id, event))"}
			})},
			{Version: 5, Name: "Go engine: rate limits and concurrency limits", Up: migrate.Statements(func() []string {
				return limitTables(prefix)
			})},
			{Version: 6, Name: "Go engine: partial indexes, so a claim and a completion update fewer index entries", Up: migrate.Statements(func() []string {
				return partialIndexes(prefix)
			})},
			{Version: 7, Name: "Go engine: webhook signing secrets table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS " + sqlstore.NewTables(prefix).WebhookSecrets +
					" (webhook_id INTEGER NOT NULL PRIMARY KEY, secret TEXT NOT NULL, created_at TEXT NOT NULL)"}
			})},
			{Version: 8, Name: "Go engine: history page indexes (a workflow's signals by id, its failures by category)", Up: migrate.Statements(func() []string {
				t := sqlstore.NewTables(prefix)
				return []string{
					"CREATE INDEX IF NOT EXISTS " + t.Signals + "_idx_go_workflow ON " + t.Signals + " (workflow_id, id)",
					"CREATE INDEX IF NOT EXISTS " + t.Failures + "_idx_workflow_category ON " + t.Failures + " (workflow_id, category)",
				}
			})},
			{Version: 9, Name: "Go engine: workflow ends table (failed and cancelled workflows whose compensations it dealt with), workflows index by failed_at", Up: migrate.Statements(func() []string {
				t := sqlstore.NewTables(prefix)
				return []string{
					"CREATE TABLE IF NOT EXISTS " + t.WorkflowEnds + " (workflow_id INTEGER NOT NULL PRIMARY KEY, runtime TEXT NOT NULL, created_at TEXT NOT NULL)",
					"CREATE INDEX IF NOT EXISTS " + t.Workflows + "_idx_go_status_failed ON " + t.Workflows + " (status, failed_at)",
					// Workflows ended before this version count as dealt with.
					"INSERT OR IGNORE INTO " + t.WorkflowEnds + " (workflow_id, runtime, created_at) SELECT id, 'go', COALESCE(failed_at, completed_at, started_at)" +
						" FROM " + t.Workflows + " WHERE status IN ('failed', 'cancelled')",
				}
			})},
			{Version: 10, Name: "Go engine: state machine timers table", Up: migrate.Statements(func() []string {
				t := sqlstore.NewTables(prefix)
				return []string{
					"CREATE TABLE IF NOT EXISTS " + t.MachineTimers + " (machine_id INTEGER NOT NULL PRIMARY KEY, state_name TEXT NOT NULL," +
						" entry_event_id INTEGER NOT NULL, event TEXT NOT NULL, fire_at TEXT NOT NULL)",
					"CREATE INDEX IF NOT EXISTS " + t.MachineTimers + "_idx_fire_at ON " + t.MachineTimers + " (fire_at)",
				}
			})},
			{Version: 11, Name: "Go engine: worker registry table", Up: migrate.Statements(func() []string {
				t := sqlstore.NewTables(prefix)
				return []string{
					"CREATE TABLE IF NOT EXISTS " + t.Workers + " (id TEXT NOT NULL PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL," +
						" version TEXT NOT NULL, queues TEXT NOT NULL, handlers TEXT NOT NULL, concurrency INTEGER NOT NULL, jobs TEXT NOT NULL," +
						" heartbeat_interval_ms INTEGER NOT NULL, started_at TEXT NOT NULL, last_heartbeat_at TEXT NOT NULL)",
					"CREATE INDEX IF NOT EXISTS " + t.Workers + "_idx_last_heartbeat ON " + t.Workers + " (last_heartbeat_at)",
				}
			})},
		},
		VersionsTable: "CREATE TABLE IF NOT EXISTS %s (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
	}
}

// LatestVersion is the schema version this package migrates to.
var LatestVersion = migrations("").Latest()

// sqlite result codes.
const (
	codeBusy                 = 5
	codeLocked               = 6
	codeConstraintPrimaryKey = 1555
	codeConstraintUnique     = 2067
	codeTooBig               = 18
	codeMismatch             = 20
	codeConstraintCheck      = 275
	codeConstraintNotNull    = 1299
	codeConstraintTrigger    = 1811
	codeConstraintDataType   = 3091
)

// dataErrors are the result codes a row's values cause: the statement
// would succeed on other rows.
var dataErrors = map[int]bool{
	codeTooBig: true, codeMismatch: true, codeConstraintCheck: true, codeConstraintNotNull: true,
	codeConstraintTrigger: true, codeConstraintDataType: true,
}

func errCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

var dialect = sqlstore.Dialect{
	Name: "sqlite",
	// The claim reads the claim index in its order, (priority DESC,
	// available_at, id) within a queue's pending jobs, and stops at the
	// limit. Left to itself the planner takes the (queue, status,
	// available_at) index and sorts every due job, so a claim's cost grew
	// with the backlog.
	ClaimHint:   " INDEXED BY {jobs}_idx_go_claim",
	RunningHint: " INDEXED BY {workflows}_idx_status",
	LogsByTime:  " INDEXED BY {logs}_idx_created",
	// Statements on rows by id read the table by rowid. NOT INDEXED still
	// lets SQLite look rows up by rowid; without it the planner may read
	// an index on a column the statement also tests, such as status: a
	// claim's "WHERE id IN (...) AND status = 'pending'" would walk every
	// pending job.
	ByID: " NOT INDEXED",
	// A claim, a completion and a hundred log rows are long statements
	// that SQLite would parse and plan again in every batch.
	PrepareHot: true,
	Retryable: func(err error) bool {
		c := errCode(err) & 0xff
		return c == codeBusy || c == codeLocked
	},
	Duplicate: func(err error) bool {
		c := errCode(err)
		return c == codeConstraintUnique || c == codeConstraintPrimaryKey
	},
	DataError: func(err error) bool { return dataErrors[errCode(err)] },
	Time: func(t time.Time, frac bool) any {
		if frac {
			return t.UTC().Format("2006-01-02 15:04:05.000000")
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	SecondsBetween: func(from, to string) string {
		return "(CAST(strftime('%s', " + to + ") AS INTEGER) - CAST(strftime('%s', " + from + ") AS INTEGER))"
	},
	InsertIDs: func(res sql.Result, n int) ([]int64, error) {
		last, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = last - int64(n-1-i)
		}
		return ids, nil
	},
	Begin: func(ctx context.Context, db *sql.DB) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
	Upsert: func(key, set []string) string {
		parts := make([]string, len(set))
		for i, c := range set {
			parts[i] = c + " = excluded." + c
		}
		return " ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(parts, ", ")
	},
}

// partialIndexes is the DDL of version 6. Every claim and completion
// moves a job between statuses, and SQLite rewrites the entry of each
// index on a changed column: with version 1's indexes that was thirteen
// indexes per completion, and two log rows with six indexes each. Version
// 6 keeps the same lookups with fewer entries to move (idx_status stays:
// a statement on rows by id that also tests their status, written without
// NOT INDEXED, seeks it by (status, id)):
//   - idx_queue_claim is Queuety PHP's claim index on MySQL (the SQLite
//     claim reads idx_go_claim): it goes;
//   - idx_go_claim holds pending jobs only and idx_reserved processing
//     jobs only, the rows the claim and the stale sweep read;
//   - indexes of columns that are NULL on most rows (activity deadlines,
//     payload hash, concurrency group, dependency, batch, a log row's
//     workflow) hold only the rows where they are set, so writing NULL over
//     NULL costs nothing; every query on them compares the column with a
//     value, which implies it is not NULL;
//   - the logs' idx_handler is a prefix of idx_go_handler_event.
//
// Index names stay the same, so the claim's INDEXED BY still names
// idx_go_claim.
func partialIndexes(prefix string) []string {
	t := sqlstore.NewTables(prefix)
	jobs, logs := t.Jobs, t.Logs
	out := []string{
		"DROP INDEX IF EXISTS " + jobs + "_idx_queue_claim",
		"DROP INDEX IF EXISTS " + logs + "_idx_handler",
	}
	replace := func(table, index, def string) {
		out = append(out, "DROP INDEX IF EXISTS "+table+"_"+index, "CREATE INDEX "+table+"_"+index+" ON "+table+" "+def)
	}
	replace(jobs, "idx_go_claim", "(queue, priority DESC, available_at, id) WHERE status = 'pending'")
	replace(jobs, "idx_reserved", "(status, reserved_at) WHERE status = 'processing'")
	replace(jobs, "idx_unique", "(handler, payload_hash, status) WHERE payload_hash IS NOT NULL")
	replace(jobs, "idx_group_status", "(concurrency_group, status) WHERE concurrency_group IS NOT NULL")
	replace(jobs, "idx_depends", "(depends_on) WHERE depends_on IS NOT NULL")
	replace(jobs, "idx_batch", "(batch_id) WHERE batch_id IS NOT NULL")
	for _, col := range []string{"schedule_to_start", "start_to_close", "schedule_to_close"} {
		replace(jobs, "idx_go_"+col, "("+col+"_at) WHERE "+col+"_at IS NOT NULL")
	}
	replace(jobs, "idx_go_heartbeat", "(heartbeat_deadline_at) WHERE heartbeat_deadline_at IS NOT NULL")
	replace(logs, "idx_workflow", "(workflow_id) WHERE workflow_id IS NOT NULL")
	return out
}

// limitTables is the DDL of the Go engine's admission tables and the logs
// index that finds a handler's recent starts.
func limitTables(prefix string) []string {
	starts := sqlstore.RateStartsTable(prefix)
	logs := sqlstore.NewTables(prefix).Logs
	return []string{
		"CREATE TABLE IF NOT EXISTS " + sqlstore.LimitsTable(prefix) + " (kind TEXT NOT NULL, name TEXT NOT NULL, locked_at TEXT DEFAULT NULL, PRIMARY KEY (kind, name))",
		"CREATE TABLE IF NOT EXISTS " + starts + " (id INTEGER PRIMARY KEY AUTOINCREMENT, handler TEXT NOT NULL, started_at TEXT NOT NULL, job_id INTEGER NOT NULL, attempt INTEGER NOT NULL)",
		"CREATE INDEX IF NOT EXISTS " + starts + "_idx_handler_started ON " + starts + " (handler, started_at)",
		"CREATE INDEX IF NOT EXISTS " + starts + "_idx_job_attempt ON " + starts + " (job_id, attempt)",
		"CREATE INDEX IF NOT EXISTS " + logs + "_idx_go_handler_event ON " + logs + " (handler, event, created_at)",
	}
}
