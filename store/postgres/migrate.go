package postgres

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/sqlstore"
	"github.com/queuety/queuety-go/store/migrate"
)

//go:embed schema.sql
var schemaSQL string

// maxIdent is the longest name PostgreSQL keeps; it cuts longer ones.
const maxIdent = 63

var indexNameRE = regexp.MustCompile(`INDEX IF NOT EXISTS (\w+) ON`)

// indexName keeps an index name within maxIdent bytes: a longer one
// (a long prefix) is cut and ends in a hash of the whole, so two names
// that share their first 63 bytes stay apart.
func indexName(name string) string {
	if len(name) <= maxIdent {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxIdent-9] + "_" + hex.EncodeToString(sum[:4])
}

// schemaStatements is the DDL of version 1 for a table prefix.
func schemaStatements(prefix string) []string {
	ddl := strings.ReplaceAll(schemaSQL, "{prefix}", prefix)
	ddl = indexNameRE.ReplaceAllStringFunc(ddl, func(s string) string {
		return "INDEX IF NOT EXISTS " + indexName(indexNameRE.FindStringSubmatch(s)[1]) + " ON"
	})
	return sqlstore.SplitStatements(ddl)
}

// migrations returns the PostgreSQL schema history for a table prefix.
// PostgreSQL's DDL is transactional: each version runs in a transaction
// with its record, under an advisory lock that keeps concurrent
// processes from migrating the same tables at once.
func migrations(prefix, lock string) migrate.Migrations {
	return migrate.Migrations{
		List: []migrate.Migration{
			{Version: 1, Name: "Queuety tables and the Go engine's columns, tables and indexes", Up: migrate.Statements(func() []string {
				return schemaStatements(prefix)
			})},
			{Version: 2, Name: "Go engine: fewer job index entries (idx_status, a prefix of idx_status_completed, dropped; idx_workflow holds workflow jobs only)",
				Up: migrate.Statements(func() []string { return fewerJobIndexes(prefix) })},
			{Version: 3, Name: "Go engine: workflow rows updated in place (fillfactor " + workflowsFillfactor + "), its parent, deadline and failed_at indexes partial, idx_status replaced by the running workflows' idx_go_running, and workflow events without idx_job and idx_step_name",
				Up: migrate.Statements(func() []string { return inPlaceWorkflows(prefix) })},
			{Version: 4, Name: "Go engine: fewer index entries a job writes (idx_queue_status_available replaced by the pending jobs' idx_go_due; idx_status_completed, idx_handler_status and the logs' idx_event partial; failed jobs' idx_go_status_failed)",
				Up: migrate.Statements(func() []string { return partialJobIndexes(prefix) })},
			{Version: 5, Name: "Go engine: the pending jobs by queue and handler in claim order (idx_go_claim_handler), which a claim reads handler by handler",
				Up: migrate.Statements(func() []string { return claimByHandlerIndex(prefix) })},
		},
		VersionsTable: "CREATE TABLE IF NOT EXISTS %s (version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at TIMESTAMP(6) NOT NULL)",
		Lock:          migrate.PostgresLock(lock, 120*time.Second),
		Transactional: true,
	}
}

// fewerJobIndexes is version 2: tables made by version 1 before its
// schema dropped the jobs' idx_status and made idx_workflow partial get
// the same indexes. On tables version 1 made since, it changes nothing.
func fewerJobIndexes(prefix string) []string {
	jobs := prefix + "queuety_jobs"
	return []string{
		"DROP INDEX IF EXISTS " + indexName(jobs+"_idx_status"),
		"CREATE INDEX IF NOT EXISTS " + indexName(jobs+"_idx_workflow_step") + " ON " + jobs +
			" (workflow_id, step_index) WHERE workflow_id IS NOT NULL",
		"DROP INDEX IF EXISTS " + indexName(jobs+"_idx_workflow"),
	}
}

// workflowsFillfactor is the share of each page of the workflows table
// that inserts fill. A workflow step rewrites its row (state, current
// step) without changing an indexed column: with room left on the page,
// PostgreSQL writes the new version beside the old one (a heap-only
// update) and adds no index entry; on a full page the new version goes
// to another page and every index of the table gets an entry.
const workflowsFillfactor = "50"

// inPlaceWorkflows is version 3: the workflows table leaves room on its
// pages for a step's new row version, and indexes that cost an entry on
// every row are dropped: the workflows' idx_status gives way to
// idx_go_running, the running workflows in id order (the read of running
// positions; a workflow enters it once, at its insert), and the events'
// idx_job and idx_step_name are Queuety PHP's lookups (the engine reads a
// workflow's events by workflow, step index, id and time).
// A fillfactor applies to pages filled from now on.
//
// The workflows' indexes of columns that are NULL on most rows (parent,
// deadlines, failed_at) become partial: every query on them compares the
// column with a value, and a workflow's insert and its last step (which
// changes its status) then add no entry to them.
func inPlaceWorkflows(prefix string) []string {
	wf, ev := prefix+"queuety_workflows", prefix+"queuety_workflow_events"
	out := []string{
		"ALTER TABLE " + wf + " SET (fillfactor = " + workflowsFillfactor + ")",
		"CREATE INDEX IF NOT EXISTS " + indexName(wf+"_idx_go_running") + " ON " + wf + " (id) WHERE status = 'running'",
		"DROP INDEX IF EXISTS " + indexName(wf+"_idx_status"),
		"DROP INDEX IF EXISTS " + indexName(ev+"_idx_job"),
		"DROP INDEX IF EXISTS " + indexName(ev+"_idx_step_name"),
	}
	for _, ix := range []struct{ name, cols, col string }{
		{"idx_parent", "parent_workflow_id", "parent_workflow_id"},
		{"idx_deadline", "status, deadline_at", "deadline_at"},
		{"idx_go_run_deadline", "status, run_deadline_at", "run_deadline_at"},
		{"idx_go_wait_deadline", "status, wait_deadline_at", "wait_deadline_at"},
		{"idx_go_status_failed", "status, failed_at", "failed_at"},
	} {
		name := indexName(wf + "_" + ix.name)
		out = append(out, "DROP INDEX IF EXISTS "+name,
			"CREATE INDEX "+name+" ON "+wf+" ("+ix.cols+") WHERE "+ix.col+" IS NOT NULL")
	}
	return out
}

// partialJobIndexes is version 4: no index of the jobs but the primary
// key holds every job, and the logs' idx_event only the rare events.
// A job's claim and its completion change its status, an indexed
// column: each write adds an entry to every index whose predicate the
// new row version meets, so an index that holds only the rows its
// queries read saves up to three entries a job.
//
//   - idx_queue_status_available gives way to idx_go_due, the pending
//     jobs by queue and due time: the oldest due job of a queue and the
//     worker's next due time read pending jobs only;
//   - idx_status_completed holds completed jobs (retention and purges
//     compare completed_at with a time), and idx_go_status_failed the
//     failed and buried ones by failed_at, which retention reads;
//   - idx_handler_status holds pending and processing jobs: the counts
//     of a handler's active jobs read no other;
//   - the logs' idx_event leaves out started and completed rows, which
//     the reads by time or handler find (idx_created,
//     idx_go_handler_event); a read of a rare event still finds it.
//
// On tables version 1 made since, it rebuilds the partial indexes as they
// are.
func partialJobIndexes(prefix string) []string {
	jobs, logs := prefix+"queuety_jobs", prefix+"queuety_logs"
	out := []string{
		"CREATE INDEX IF NOT EXISTS " + indexName(jobs+"_idx_go_due") + " ON " + jobs + " (queue, available_at) WHERE status = 'pending'",
		"DROP INDEX IF EXISTS " + indexName(jobs+"_idx_queue_status_available"),
		"CREATE INDEX IF NOT EXISTS " + indexName(jobs+"_idx_go_status_failed") + " ON " + jobs + " (status, failed_at) WHERE failed_at IS NOT NULL",
	}
	for _, ix := range []struct{ table, name, def string }{
		{jobs, "idx_status_completed", "(status, completed_at) WHERE completed_at IS NOT NULL"},
		{jobs, "idx_handler_status", "(handler, status) WHERE status IN ('pending', 'processing')"},
		{logs, "idx_event", "(event) WHERE event NOT IN ('started', 'completed')"},
	} {
		name := indexName(ix.table + "_" + ix.name)
		out = append(out, "DROP INDEX IF EXISTS "+name, "CREATE INDEX "+name+" ON "+ix.table+" "+ix.def)
	}
	return out
}

// claimByHandlerIndex is version 5: the pending jobs by queue and handler
// in claim order. A claim reads each of its handlers' first due jobs
// through it (sqlstore.Dialect.ClaimByHandler) instead of the queue's
// pending jobs in claim order through idx_go_claim, which passes every
// pending job of the handlers it does not run (and reads each one's row
// to find its handler). Like idx_go_claim it holds pending jobs only: a
// job adds an entry to it at its insert, none at its claim or
// completion. idx_go_claim stays for claims of more handlers than a
// claim reads one by one.
func claimByHandlerIndex(prefix string) []string {
	jobs := prefix + "queuety_jobs"
	return []string{"CREATE INDEX IF NOT EXISTS " + indexName(jobs+"_idx_go_claim_handler") + " ON " + jobs +
		" (queue, handler, priority DESC, available_at, id) WHERE status = 'pending'"}
}

// LatestVersion is the schema version this package migrates to.
var LatestVersion = migrations("", "").Latest()
