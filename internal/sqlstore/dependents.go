package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queuety/queuety-go/store/driver"
)

// JobDependsOnMax implements driver.DependentsTx: MIN/MAX over an index
// reads one end of it (idx_depends), on every engine.
func (t *txn) JobDependsOnMax(ctx context.Context) (int64, error) {
	var max sql.NullInt64
	q := "SELECT MAX(depends_on) FROM " + t.s.T.Jobs + " WHERE depends_on IS NOT NULL"
	if err := t.tx.QueryRowContext(ctx, q).Scan(&max); err != nil {
		return 0, fmt.Errorf("read the highest depends_on: %w", err)
	}
	return max.Int64, nil
}

// JobPendingDependents implements driver.DependentsTx: one seek of
// idx_depends per id.
func (t *txn) JobPendingDependents(ctx context.Context, ids []int64) ([]*driver.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := "SELECT id, queue, handler, depends_on FROM " + t.s.T.Jobs + " WHERE depends_on IN (" + placeholders(len(ids)) + ") AND status = 'pending'"
	jobs, err := queryAll(ctx, t.tx, func(s scanner) (*driver.Job, error) {
		j := &driver.Job{Status: driver.JobPending}
		return j, s.Scan(&j.ID, &j.Queue, &j.Handler, &j.DependsOn)
	}, q, idArgs(ids)...)
	if err != nil {
		return nil, fmt.Errorf("read pending dependents: %w", err)
	}
	return jobs, nil
}

var _ driver.DependentsTx = (*txn)(nil)
