package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/migrate"
)

//go:embed queuety_tables.sql
var queuetyTablesSQL string

// claimIndex is the index the claim query reads: its order is exactly the
// claim's ORDER BY (priority DESC, available_at, id), so a claim is an
// ordered range scan that stops after LIMIT rows instead of sorting the
// whole backlog.
const claimIndex = "idx_go_claim"

// migrations returns the MySQL schema history for a table prefix: Queuety's
// tables, then the Go engine's additions. Every step checks what exists
// before it changes anything (see migrate.Migration), and GET_LOCK keeps
// concurrent processes from migrating the same prefix at once.
func migrations(prefix string) migrate.Migrations {
	return namedMigrations(sqlstore.DefaultNames(prefix))
}

// namedMigrations is migrations for the tables n names.
func namedMigrations(n sqlstore.Names) migrate.Migrations {
	t := sqlstore.NamedTables(n)
	step := func(up func(m *migrator, ctx context.Context) error) func(context.Context, migrate.Execer) error {
		return func(ctx context.Context, x migrate.Execer) error { return up(&migrator{conn: x, t: t}, ctx) }
	}
	lock := "queuety_migrate:" + n.Prefix
	if !n.IsDefault() {
		// GET_LOCK names are at most 64 characters; the migrations
		// table's name tells one set of tables from another.
		sum := sha256.Sum256([]byte(t.Migrations))
		lock = "queuety_migrate:" + hex.EncodeToString(sum[:16])
	}
	return migrate.Migrations{
		List: []migrate.Migration{
			{Version: 1, Name: "Queuety 0.22 tables (created when missing, missing columns and indexes added)", Up: step((*migrator).queuetyTables)},
			{Version: 2, Name: "Go engine: claim index, claim token, activity deadlines, run and wait deadlines", Up: step((*migrator).goColumns)},
			{Version: 3, Name: "Go engine: failures table", Up: step((*migrator).failuresTable)},
			{Version: 4, Name: "Go engine: workflow schedules, catch-up policy, buffered firings", Up: step((*migrator).scheduleColumns)},
			{Version: 5, Name: "Go engine: claim tokens name their attempt; clear tokens left on pending jobs", Up: migrate.Statements(func() []string {
				return []string{"UPDATE " + t.Jobs + " SET claim_token = NULL WHERE status = 'pending' AND claim_token IS NOT NULL"}
			})},
			{Version: 6, Name: "Go engine: batch events table", Up: step((*migrator).batchEventsTable)},
			{Version: 7, Name: "Go engine: rate limits and concurrency limits (limit lock rows, rate-limited starts, logs index by handler and event)", Up: step((*migrator).limitTables)},
			{Version: 8, Name: "Go engine: webhook signing secrets table", Up: step((*migrator).webhookSecretsTable)},
			{Version: 9, Name: "Go engine: history page indexes (a workflow's signals by id, its failures by category)", Up: step((*migrator).historyIndexes)},
			{Version: 10, Name: "Go engine: workflow ends table (failed and cancelled workflows whose compensations it dealt with), workflows index by failed_at", Up: step((*migrator).workflowEndsTable)},
			{Version: 11, Name: "Go engine: state machine timers table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS " + t.MachineTimers + ` (
		machine_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		state_name VARCHAR(191) NOT NULL,
		entry_event_id BIGINT UNSIGNED NOT NULL,
		event VARCHAR(191) NOT NULL,
		fire_at DATETIME NOT NULL,
		KEY idx_fire_at (fire_at)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`}
			})},
			{Version: 12, Name: "Go engine: worker registry table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS " + t.Workers + ` (
		id VARCHAR(191) NOT NULL PRIMARY KEY,
		host VARCHAR(255) NOT NULL,
		pid INT NOT NULL,
		version VARCHAR(255) NOT NULL,
		queues TEXT NOT NULL,
		handlers MEDIUMTEXT NOT NULL,
		concurrency INT NOT NULL,
		jobs MEDIUMTEXT NOT NULL,
		heartbeat_interval_ms BIGINT NOT NULL,
		started_at DATETIME(6) NOT NULL,
		last_heartbeat_at DATETIME(6) NOT NULL,
		KEY idx_last_heartbeat (last_heartbeat_at)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`}
			})},
			{Version: 13, Name: "Go engine: held claims journal table", Up: migrate.Statements(func() []string {
				return []string{"CREATE TABLE IF NOT EXISTS " + t.HeldClaims + ` (
		id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		jobs MEDIUMTEXT NOT NULL,
		expires_at DATETIME(6) NOT NULL,
		KEY idx_expires (expires_at)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`}
			})},
		},
		VersionsTable: `CREATE TABLE IF NOT EXISTS %s (
		version INT UNSIGNED NOT NULL PRIMARY KEY,
		name VARCHAR(255) NOT NULL,
		applied_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
		Lock: migrate.MySQLLock(lock, 120*time.Second),
	}
}

// LatestVersion is the schema version this package migrates to.
var LatestVersion = migrations("").Latest()

// migrator runs one migration's statements for a prefix.
type migrator struct {
	conn migrate.Execer
	t    sqlstore.Tables
}

// SchemaVersion returns the highest applied migration (0 when none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.DB.QueryRowContext(ctx, "SELECT MAX(version) FROM "+s.T.Migrations).Scan(&v)
	if err != nil {
		if errNumber(err) == 1146 { // table does not exist
			return 0, nil
		}
		return 0, err
	}
	return int(v.Int64), nil
}

var (
	createRE = regexp.MustCompile("(?s)CREATE TABLE IF NOT EXISTS `\\{prefix\\}queuety_(\\w+)` \\((.*?)\\n\\) ENGINE")
	tableRE  = regexp.MustCompile("`\\{prefix\\}queuety_(\\w+)`")
	columnRE = regexp.MustCompile("^\\s*`(\\w+)` (.+?),?$")
	indexRE  = regexp.MustCompile("^\\s*((?:UNIQUE )?KEY) `(\\w+)` (\\(.*\\)),?$")
)

// queuetyTables creates Queuety's tables when missing and adds any column
// or index an older Queuety install lacks (Queuety itself never alters
// existing tables).
func (m *migrator) queuetyTables(ctx context.Context) error {
	ddl := tableRE.ReplaceAllStringFunc(queuetyTablesSQL, func(s string) string {
		return "`" + m.t.Names.Table(tableRE.FindStringSubmatch(s)[1]) + "`"
	})
	for _, stmt := range sqlstore.SplitStatements(ddl) {
		if _, err := m.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%.60s...: %w", stmt, err)
		}
	}
	for _, match := range createRE.FindAllStringSubmatch(queuetyTablesSQL, -1) {
		table := m.t.Names.Table(match[1])
		var adds []string
		for _, line := range strings.Split(match[2], "\n") {
			if c := columnRE.FindStringSubmatch(line); c != nil {
				ok, err := m.columnExists(ctx, table, c[1])
				if err != nil {
					return err
				}
				if !ok {
					adds = append(adds, "ADD COLUMN `"+c[1]+"` "+c[2])
				}
			}
			if ix := indexRE.FindStringSubmatch(line); ix != nil {
				ok, err := m.indexExists(ctx, table, ix[2])
				if err != nil {
					return err
				}
				if !ok {
					adds = append(adds, "ADD "+ix[1]+" `"+ix[2]+"` "+ix[3])
				}
			}
		}
		if err := m.alter(ctx, table, adds); err != nil {
			return err
		}
	}
	return nil
}

// goColumns adds the Go engine's nullable columns and indexes. Queuety PHP
// names its columns when it inserts and ignores extra columns when it
// reads, so it keeps working after this migration.
func (m *migrator) goColumns(ctx context.Context) error {
	jobs := m.t.Jobs
	if err := m.ensure(ctx, jobs,
		[][2]string{
			{"claim_token", "BIGINT NULL DEFAULT NULL"},
			{"schedule_to_start_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"start_to_close_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"schedule_to_close_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"heartbeat_deadline_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"last_heartbeat_at", "DATETIME(6) NULL DEFAULT NULL"},
		},
		[][2]string{
			{claimIndex, "(queue, status, priority DESC, available_at, id)"},
			{"idx_go_schedule_to_start", "(schedule_to_start_at)"},
			{"idx_go_start_to_close", "(start_to_close_at)"},
			{"idx_go_schedule_to_close", "(schedule_to_close_at)"},
			{"idx_go_heartbeat", "(heartbeat_deadline_at)"},
		}); err != nil {
		return err
	}
	return m.ensure(ctx, m.t.Workflows,
		[][2]string{
			{"run_number", "INT UNSIGNED NULL DEFAULT NULL"},
			{"run_started_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"run_deadline_at", "DATETIME(6) NULL DEFAULT NULL"},
			{"wait_deadline_at", "DATETIME(6) NULL DEFAULT NULL"},
		},
		[][2]string{
			{"idx_go_run_deadline", "(status, run_deadline_at)"},
			{"idx_go_wait_deadline", "(status, wait_deadline_at)"},
		})
}

// scheduleColumns adds what Go schedules need beyond Queuety's columns:
// the workflow definition of workflow schedules, the catch-up policy, the
// id the last firing dispatched, and the slot of a buffered firing.
func (m *migrator) scheduleColumns(ctx context.Context) error {
	return m.ensure(ctx, m.t.Schedules,
		[][2]string{
			{"workflow_definition", "LONGTEXT NULL DEFAULT NULL"},
			{"catch_up", "VARCHAR(16) NULL DEFAULT NULL"},
			{"last_run_ref", "BIGINT UNSIGNED NULL DEFAULT NULL"},
			{"pending_run", "DATETIME(6) NULL DEFAULT NULL"},
		},
		[][2]string{
			{"idx_go_pending_run", "(enabled, pending_run)"},
		})
}

func (m *migrator) failuresTable(ctx context.Context) error {
	_, err := m.conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+m.t.Failures+` (
		id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		workflow_id BIGINT UNSIGNED NULL DEFAULT NULL,
		job_id BIGINT UNSIGNED NULL DEFAULT NULL,
		step_index TINYINT UNSIGNED NULL DEFAULT NULL,
		attempt INT UNSIGNED NULL DEFAULT NULL,
		run_number INT UNSIGNED NULL DEFAULT NULL,
		category VARCHAR(32) NOT NULL,
		timeout_kind VARCHAR(32) NULL DEFAULT NULL,
		non_retryable TINYINT(1) NOT NULL DEFAULT 0,
		message TEXT NOT NULL,
		error_class VARCHAR(255) NULL DEFAULT NULL,
		deadline_at DATETIME(6) NULL DEFAULT NULL,
		created_at DATETIME(6) NOT NULL,
		KEY idx_workflow (workflow_id, id),
		KEY idx_job (job_id),
		KEY idx_category (category, created_at)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`)
	return err
}

// historyIndexes adds the indexes of the bounded history reads: a
// workflow's newest signals in id order (Queuety's index on the signals
// table is by name), and a workflow's failure counts by category without
// reading the failure rows. Queuety PHP ignores an extra index.
func (m *migrator) historyIndexes(ctx context.Context) error {
	t := m.t
	if err := m.ensure(ctx, t.Signals, nil, [][2]string{{"idx_go_workflow", "(workflow_id, id)"}}); err != nil {
		return err
	}
	return m.ensure(ctx, t.Failures, nil, [][2]string{{"idx_workflow_category", "(workflow_id, category)"}})
}

// workflowEndsTable creates the table in which the Go engine marks the
// failed and cancelled workflows whose compensations and cancel callback
// it dealt with, and the index by which its sweep reads the workflows
// failed since a time. The workflows that are failed or cancelled already
// are marked as dealt with: the sweep looks only at those that end from
// now on.
func (m *migrator) workflowEndsTable(ctx context.Context) error {
	t := m.t
	if _, err := m.conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+t.WorkflowEnds+` (
		workflow_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		runtime VARCHAR(8) NOT NULL,
		created_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`); err != nil {
		return err
	}
	if err := m.ensure(ctx, t.Workflows, nil, [][2]string{{"idx_go_status_failed", "(status, failed_at)"}}); err != nil {
		return err
	}
	_, err := m.conn.ExecContext(ctx, "INSERT IGNORE INTO "+t.WorkflowEnds+" (workflow_id, runtime, created_at)"+
		" SELECT id, 'go', COALESCE(failed_at, completed_at, started_at) FROM "+t.Workflows+" WHERE status IN ('failed', 'cancelled')")
	return err
}

// batchEventsTable creates the table in which the Go engine records the
// batch transitions whose callbacks it handled, once each.
func (m *migrator) batchEventsTable(ctx context.Context) error {
	_, err := m.conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+m.t.BatchEvents+` (
		batch_id BIGINT UNSIGNED NOT NULL,
		event VARCHAR(16) NOT NULL,
		callback VARCHAR(255) NULL DEFAULT NULL,
		runtime VARCHAR(8) NULL DEFAULT NULL,
		job_id BIGINT UNSIGNED NULL DEFAULT NULL,
		created_at DATETIME(6) NOT NULL,
		PRIMARY KEY (batch_id, event)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`)
	return err
}

// webhookSecretsTable creates the table of webhook signing secrets, one
// row per webhook id. It is a table of its own, not a column of Queuety's
// webhooks table, because Queuety PHP lists webhooks with SELECT *: a
// secret column would reach its `wp queuety webhook list`.
func (m *migrator) webhookSecretsTable(ctx context.Context) error {
	_, err := m.conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+m.t.WebhookSecrets+` (
		webhook_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
		secret VARCHAR(255) NOT NULL,
		created_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`)
	return err
}

// ensure adds the missing columns and indexes of a table in one ALTER.
func (m *migrator) ensure(ctx context.Context, table string, cols, idxs [][2]string) error {
	var adds []string
	for _, c := range cols {
		ok, err := m.columnExists(ctx, table, c[0])
		if err != nil {
			return err
		}
		if !ok {
			adds = append(adds, "ADD COLUMN `"+c[0]+"` "+c[1])
		}
	}
	for _, ix := range idxs {
		ok, err := m.indexExists(ctx, table, ix[0])
		if err != nil {
			return err
		}
		if !ok {
			adds = append(adds, "ADD INDEX `"+ix[0]+"` "+ix[1])
		}
	}
	return m.alter(ctx, table, adds)
}

func (m *migrator) alter(ctx context.Context, table string, adds []string) error {
	if len(adds) == 0 {
		return nil
	}
	if _, err := m.conn.ExecContext(ctx, "ALTER TABLE `"+table+"` "+strings.Join(adds, ", ")); err != nil {
		return fmt.Errorf("alter %s: %w", table, err)
	}
	return nil
}

func (m *migrator) columnExists(ctx context.Context, table, col string) (bool, error) {
	var n int
	err := m.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", table, col).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("inspect %s.%s: %w", table, col, err)
	}
	return n > 0, nil
}

func (m *migrator) indexExists(ctx context.Context, table, idx string) (bool, error) {
	var n int
	err := m.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ?", table, idx).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("inspect index %s.%s: %w", table, idx, err)
	}
	return n > 0, nil
}

// limitTables creates the Go engine's admission tables and the logs index
// that finds a handler's recent starts (also the index Queuety's
// RateLimiter query wants).
func (m *migrator) limitTables(ctx context.Context) error {
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + m.t.Limits + ` (
		kind VARCHAR(16) NOT NULL,
		name VARCHAR(255) NOT NULL,
		locked_at DATETIME(6) NULL DEFAULT NULL,
		PRIMARY KEY (kind, name)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
		"CREATE TABLE IF NOT EXISTS " + m.t.RateStarts + ` (
		id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		handler VARCHAR(255) NOT NULL,
		started_at DATETIME(6) NOT NULL,
		job_id BIGINT UNSIGNED NOT NULL,
		attempt INT UNSIGNED NOT NULL,
		KEY idx_handler_started (handler, started_at),
		KEY idx_job_attempt (job_id, attempt)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
	} {
		if _, err := m.conn.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return m.ensure(ctx, m.t.Logs, nil, [][2]string{{"idx_go_handler_event", "(handler, event, created_at)"}})
}
