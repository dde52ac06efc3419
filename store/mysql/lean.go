package mysql

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// This file holds the lean index set (the DSN parameter schema=lean): for
// a database that only Go workers use, the store drops the indexes of
// Queuety PHP's tables that only Queuety PHP's own queries read, or whose
// lookups another index already serves. Every claim and every completion
// changes a job's status, and InnoDB rewrites the entry of every index
// that holds a changed column (a delete-mark and an insert): each index
// on status costs four secondary-index writes a job, each index of the
// logs table two (a started and a completed row).

// leanIndex is an index of Queuety PHP's schema that schema=lean drops,
// with its definition for putting it back.
type leanIndex struct {
	base, name, cols string
}

// leanDropped are the indexes schema=lean drops, each with the index that
// serves its lookups in the engine's queries (idx_queue_status_available
// stays: the oldest-due reads of the overview and the metrics find a
// queue's earliest due job through it):
//   - jobs idx_queue_claim (queue, status, priority, id, available_at):
//     Queuety PHP's claim order; the engine claims through idx_go_claim;
//   - jobs idx_status (status): a prefix of idx_status_completed and
//     idx_reserved;
//   - logs idx_handler (handler): a prefix of idx_go_handler_event;
//   - workflow_events idx_job (job_id) and idx_step_name (workflow_id,
//     step_name): Queuety PHP's lookups; the engine reads a workflow's
//     events by workflow, step index, id and time only. Every workflow
//     step writes two event rows, so these are four secondary-index
//     writes a step.
//
// The definitions are Queuety PHP's (queuety_tables.sql).
var leanDropped = []leanIndex{
	{"jobs", "idx_queue_claim", "(`queue`,`status`,`priority`,`id`,`available_at`)"},
	{"jobs", "idx_status", "(`status`)"},
	{"logs", "idx_handler", "(`handler`)"},
	{"workflow_events", "idx_job", "(`job_id`)"},
	{"workflow_events", "idx_step_name", "(`workflow_id`,`step_name`)"},
}

// Schema names of StoreInfo.Schema.
const (
	schemaQueuety = "queuety"
	schemaLean    = "lean"
)

// Migrate implements driver.Store: it applies the schema history, then
// gives the jobs and logs tables the DSN's index set. With schema=lean it
// drops leanDropped's indexes; otherwise it puts back any of them that are
// missing (a database a schema=lean store used, handed back to Queuety
// PHP, whose installer never alters an existing table) and logs a warning
// naming them.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.Store.Migrate(ctx); err != nil {
		return err
	}
	return s.shapeIndexes(ctx)
}

func (s *Store) shapeIndexes(ctx context.Context) error {
	names := s.cfg.names()
	tables := map[string]string{}
	var args []any
	for _, ix := range leanDropped {
		t := names.Table(ix.base)
		if _, ok := tables[ix.base]; !ok {
			tables[ix.base] = t
			args = append(args, t)
		}
	}
	rows, err := s.DB.QueryContext(ctx, "SELECT DISTINCT TABLE_NAME, INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ("+
		placeholders(len(args))+")", args...)
	if err != nil {
		return fmt.Errorf("inspect indexes: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var t, ix string
		if err := rows.Scan(&t, &ix); err != nil {
			rows.Close()
			return fmt.Errorf("inspect indexes: %w", err)
		}
		have[t+"."+ix] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("inspect indexes: %w", err)
	}
	alters := map[string][]string{}
	var order, added []string
	for _, ix := range leanDropped {
		t := tables[ix.base]
		var clause string
		switch present := have[t+"."+ix.name]; {
		case s.cfg.Lean && present:
			clause = "DROP INDEX `" + ix.name + "`"
		case !s.cfg.Lean && !present:
			clause = "ADD INDEX `" + ix.name + "` " + ix.cols
			added = append(added, t+"."+ix.name)
		default:
			continue
		}
		if _, ok := alters[t]; !ok {
			order = append(order, t)
		}
		alters[t] = append(alters[t], clause)
	}
	if len(added) > 0 {
		s.logger().Warn("queuety: adding back Queuety PHP's indexes that a schema=lean store dropped; add schema=lean to this DSN if only Go workers use these tables",
			"indexes", strings.Join(added, ", "))
	}
	for _, t := range order {
		if _, err := s.DB.ExecContext(ctx, "ALTER TABLE `"+t+"` "+strings.Join(alters[t], ", ")); err != nil {
			// Another process that opened the same tables at the same
			// time may have made the change first.
			if n := errNumber(err); n == 1091 || n == 1061 { // ER_CANT_DROP_FIELD_OR_KEY, ER_DUP_KEYNAME
				continue
			}
			return fmt.Errorf("index set of %s: %w", t, err)
		}
	}
	return nil
}

// logger is the store's logger (SetLogger), else slog's default.
func (s *Store) logger() *slog.Logger {
	s.wake.mu.Lock()
	defer s.wake.mu.Unlock()
	if s.wake.log != nil {
		return s.wake.log
	}
	return slog.Default()
}

// placeholders returns n comma-separated question marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
