package sqlstore

// The bounded reads of the operator's smaller lists: schedules, webhooks,
// the worker registry, and the counts beside the jobs list.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// SchedulePage implements driver.Tx.
func (t *txn) SchedulePage(ctx context.Context, k driver.Keyset) (*driver.Page[*driver.Schedule], error) {
	p := newPageSQL(t.s.T.Schedules, scheduleCols, k)
	q, args := p.rowsQuery()
	rows, err := t.querySchedules(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("schedule page: %w", err)
	}
	if p.asc {
		slices.Reverse(rows)
	}
	return &driver.Page[*driver.Schedule]{Rows: rows}, nil
}

// ScheduleSummary implements driver.Tx.
func (t *txn) ScheduleSummary(ctx context.Context) (*driver.ScheduleSummary, error) {
	out := &driver.ScheduleSummary{}
	rows, err := t.tx.QueryContext(ctx, "SELECT enabled, COUNT(*), MIN(next_run) FROM "+t.s.T.Schedules+" GROUP BY enabled")
	if err != nil {
		return nil, fmt.Errorf("summarise schedules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var enabled, n int64
		var next time.Time
		if err := rows.Scan(&enabled, &n, nullTime{&next}); err != nil {
			return nil, fmt.Errorf("summarise schedules: %w", err)
		}
		if enabled != 0 {
			out.Enabled, out.NextRun = n, next
		} else {
			out.Disabled = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summarise schedules: %w", err)
	}
	return out, nil
}

// WebhookPage implements driver.Tx: the page of webhook rows, joined to
// the secrets table only to tell which are signed.
func (t *txn) WebhookPage(ctx context.Context, k driver.Keyset) (*driver.Page[*driver.Webhook], error) {
	p := newPageSQL(t.s.T.Webhooks, "id, event, url, created_at", k)
	inner, args := p.rowsQuery()
	order := " ORDER BY w.id DESC"
	if p.asc {
		order = " ORDER BY w.id"
	}
	q := "SELECT w.id, w.event, w.url, w.created_at, s.webhook_id FROM (" + inner + ") w LEFT JOIN " + t.s.T.WebhookSecrets +
		" s ON s.webhook_id = w.id" + order
	rows, err := queryAll(ctx, t.tx, func(sc scanner) (*driver.Webhook, error) {
		w := &driver.Webhook{}
		var signed int64
		if err := sc.Scan(&w.ID, &w.Event, &w.URL, nullTime{&w.CreatedAt}, nullInt{&signed}); err != nil {
			return nil, fmt.Errorf("scan webhook: %w", err)
		}
		w.Signed = signed != 0
		return w, nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhook page: %w", err)
	}
	if p.asc {
		slices.Reverse(rows)
	}
	return &driver.Page[*driver.Webhook]{Rows: rows}, nil
}

// WorkerPage implements driver.Tx.
func (t *txn) WorkerPage(ctx context.Context, limit int) ([]*queuetytype.Worker, int64, error) {
	var total int64
	if err := t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.s.T.Workers).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count workers: %w", err)
	}
	out, err := queryAll(ctx, t.tx, scanWorker, "SELECT "+workerCols+" FROM "+t.s.T.Workers+" ORDER BY last_heartbeat_at DESC, id LIMIT ?",
		max(limit, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("list workers: %w", err)
	}
	return out, total, nil
}

// internalHandlers bound a range of handler names that holds every name
// beginning with driver.InternalHandlerPrefix, in binary order and in
// MySQL's Unicode collations (both weigh "_" below "a"; a collation that
// skips punctuation at first, as many of PostgreSQL's do, would not), and
// the LIKE of JobInternalCounts keeps the names that begin with it.
var internalHandlers = [2]string{driver.InternalHandlerPrefix,
	driver.InternalHandlerPrefix[:len(driver.InternalHandlerPrefix)-1] + "a"}

// JobInternalCounts implements driver.Tx: a range of idx_handler_status
// on MySQL and SQLite, with the same LIKE as JobPage's HideInternal.
func (t *txn) JobInternalCounts(ctx context.Context, queue string) (map[driver.JobStatus]int64, error) {
	q := "SELECT status, COUNT(*) FROM " + t.s.T.Jobs + " WHERE handler LIKE ? ESCAPE '!'"
	args := []any{likeContains(driver.InternalHandlerPrefix)[1:]}
	if t.s.D.Name == "mysql" || t.s.D.Name == "sqlite" {
		// Collations where the range is known to hold every internal
		// name (a conformance case checks it); it makes the handler
		// index serve the read.
		q += " AND handler >= ? AND handler < ?"
		args = append(args, internalHandlers[0], internalHandlers[1])
	}
	if queue != "" {
		q += " AND queue = ?"
		args = append(args, queue)
	}
	rows, err := t.tx.QueryContext(ctx, q+" GROUP BY status", args...)
	if err != nil {
		return nil, fmt.Errorf("count internal jobs: %w", err)
	}
	defer rows.Close()
	out := map[driver.JobStatus]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count internal jobs: %w", err)
		}
		out[driver.JobStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count internal jobs: %w", err)
	}
	return out, nil
}
