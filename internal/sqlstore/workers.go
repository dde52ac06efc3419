package sqlstore

// The worker registry: one row per running worker, renewed at every
// lease interval outside the claim path.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

const workerCols = "id, host, pid, version, queues, handlers, concurrency, jobs, heartbeat_interval_ms, started_at, last_heartbeat_at"

// WorkerSave implements driver.Tx.
func (t *txn) WorkerSave(ctx context.Context, w *queuetytype.Worker) error {
	return t.workerSave(ctx, t.tx, w)
}

// WorkerSaveOne implements driver.IdleReader: WorkerSave as one
// statement outside a transaction.
func (s *Store) WorkerSaveOne(ctx context.Context, w *queuetytype.Worker) error {
	t := &txn{s: s}
	return t.workerSave(ctx, s.DB, w)
}

// workerSave runs WorkerSave's upsert on db (a transaction or the pool).
func (t *txn) workerSave(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, w *queuetytype.Worker) error {
	queues, err := json.Marshal(nonNilSlice(w.Queues))
	if err != nil {
		return fmt.Errorf("save worker %s: %w", w.ID, err)
	}
	handlers, err := json.Marshal(nonNilSlice(w.Handlers))
	if err != nil {
		return fmt.Errorf("save worker %s: %w", w.ID, err)
	}
	jobs, err := json.Marshal(nonNilSlice(w.Jobs))
	if err != nil {
		return fmt.Errorf("save worker %s: %w", w.ID, err)
	}
	_, err = db.ExecContext(ctx, "INSERT INTO "+t.s.T.Workers+" ("+workerCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"+
		t.s.D.Upsert([]string{"id"}, []string{"host", "pid", "version", "queues", "handlers", "concurrency", "jobs", "heartbeat_interval_ms", "last_heartbeat_at"}),
		w.ID, w.Host, w.PID, w.Version, string(queues), string(handlers), w.Concurrency, string(jobs), w.HeartbeatInterval.Milliseconds(),
		t.frac(w.StartedAt), t.frac(w.LastHeartbeat))
	if err != nil {
		return fmt.Errorf("save worker %s: %w", w.ID, err)
	}
	return nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WorkerDelete implements driver.Tx.
func (t *txn) WorkerDelete(ctx context.Context, id string) (bool, error) {
	ok, err := t.deleted(t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Workers+" WHERE id = ?", id))
	if err != nil {
		return false, fmt.Errorf("delete worker %s: %w", id, err)
	}
	return ok, nil
}

// WorkerList implements driver.Tx.
func (t *txn) WorkerList(ctx context.Context) ([]*queuetytype.Worker, error) {
	out, err := queryAll(ctx, t.tx, scanWorker, "SELECT "+workerCols+" FROM "+t.s.T.Workers+" ORDER BY started_at, id")
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return out, nil
}

func scanWorker(sc scanner) (*queuetytype.Worker, error) {
	w := &queuetytype.Worker{}
	var queues, handlers, jobs []byte
	var intervalMS int64
	if err := sc.Scan(&w.ID, &w.Host, &w.PID, &w.Version, &queues, &handlers, &w.Concurrency, &jobs, &intervalMS,
		nullTime{&w.StartedAt}, nullTime{&w.LastHeartbeat}); err != nil {
		return nil, fmt.Errorf("scan worker: %w", err)
	}
	w.HeartbeatInterval = time.Duration(intervalMS) * time.Millisecond
	for _, c := range []struct {
		text []byte
		into any
	}{{queues, &w.Queues}, {handlers, &w.Handlers}, {jobs, &w.Jobs}} {
		if err := json.Unmarshal(c.text, c.into); err != nil {
			return nil, fmt.Errorf("scan worker %s: %w", w.ID, err)
		}
	}
	return w, nil
}

// WorkerPrune implements driver.Tx: a plain read finds the rows, and the
// DELETE names them by primary key, so it never locks a range of the
// heartbeat index that live workers' renewals write into.
func (t *txn) WorkerPrune(ctx context.Context, before time.Time, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	scan := func(sc scanner) (id string, err error) { return id, sc.Scan(&id) }
	ids, err := queryAll(ctx, t.tx, scan, "SELECT id FROM "+t.s.T.Workers+" WHERE last_heartbeat_at < ? ORDER BY last_heartbeat_at LIMIT ?",
		t.frac(before), limit)
	if err != nil || len(ids) == 0 {
		return 0, wrapErr("prune workers", err)
	}
	args := make([]any, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, t.frac(before))
	res, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Workers+" WHERE id IN (?"+strings.Repeat(", ?", len(ids)-1)+") AND last_heartbeat_at < ?", args...)
	if err != nil {
		return 0, fmt.Errorf("prune workers: %w", err)
	}
	n, err := res.RowsAffected()
	return n, wrapErr("prune workers", err)
}

// wrapErr wraps a non-nil err with what failed.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
