package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/queuety/queuety-go/store/driver"
)

// JobDependsOnMax implements driver.DependentsTx: it reads the last entry
// of idx_depends.
func (t *txn) JobDependsOnMax(ctx context.Context) (int64, error) {
	var most int64
	err := t.tx.QueryRowContext(ctx, t.s.SQL.DependsOnMax).Scan(&most)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the highest depends_on: %w", err)
	}
	return most, nil
}

// JobPendingDependents implements driver.DependentsTx: one seek of
// idx_depends per id, which finds the few dependents a job has, whatever
// their status.
func (t *txn) JobPendingDependents(ctx context.Context, ids []int64) ([]*driver.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	jobs, err := queryAll(ctx, t.tx, func(s scanner) (*driver.Job, error) {
		j := &driver.Job{}
		return j, s.Scan(&j.ID, &j.Queue, &j.Handler, &j.DependsOn, &j.Status)
	}, t.s.SQL.PendingDependents(len(ids)), idArgs(ids)...)
	if err != nil {
		return nil, fmt.Errorf("read pending dependents: %w", err)
	}
	return slices.DeleteFunc(jobs, func(j *driver.Job) bool { return j.Status != driver.JobPending }), nil
}

var _ driver.DependentsTx = (*txn)(nil)
