// Package retention is the maintenance cleaner: it deletes the finished
// rows that are older than a policy keeps them (completed and buried jobs,
// log rows, finished workflows with their rows, finished batches), in
// small transactions, paced, under a fleet-wide lock so that one process
// cleans at a time.
//
// It deletes what Queuety's own purges delete (Queue::purge_completed,
// Logger::purge, BatchManager::prune, and the Go engine's workflow purge
// with its events, chunks, artifacts, signals, dependencies and dispatch
// keys), minus any row something unfinished still needs: the steps of a
// workflow that has not finished, a job an unfinished job depends on, a
// child of an unfinished parent, and a workflow an unfinished workflow
// waits on.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/locks"
	"github.com/queuety/queuety-go/store/driver"
)

// LockKey is the row in Queuety's locks table that the cleaner of one
// process holds while it runs a pass.
const LockKey = "queuety:retention"

// DueKey is the row in Queuety's locks table that spaces the passes of
// short-lived workers (RunOnce, started by cron): PassIfDue takes it for
// the interval and leaves it to expire, so the fleet runs such a pass at
// most once an interval whatever the cron frequency.
const DueKey = "queuety:retention:due"

// The kinds of rows a pass deletes, as Report and the observer name them.
const (
	KindWorkflows = "workflows"
	KindCompleted = "completed_jobs"
	KindBuried    = "buried_jobs"
	KindLogs      = "logs"
	KindBatches   = "batches"
)

// Policy says how long each kind of finished row is kept and how a pass
// deletes them. A kind whose age is zero or negative is never deleted.
type Policy struct {
	Completed time.Duration // completed jobs, after completed_at
	Buried    time.Duration // buried and failed jobs, after failed_at
	Logs      time.Duration // log rows, after created_at
	Workflows time.Duration // finished workflows with their rows, after completed_at or failed_at
	Batches   time.Duration // finished batches, after finished_at
	// BatchSize is how many jobs or log rows one transaction deletes; a
	// transaction deletes BatchSize/10 workflows (at least 1) with their
	// rows.
	BatchSize int
	// Pause is the least wait after each transaction; the cleaner waits
	// as long as the transaction took when that is longer, so it holds
	// the database at most half the time and claims and completions get
	// it between its transactions.
	Pause time.Duration
	// Budget caps one pass; what is left waits for the next pass. The
	// fleet lock expires a minute after it, so a process that dies in a
	// pass holds the others back for at most that long.
	Budget time.Duration
	// Deleted, if set, is called after each transaction of a pass with
	// the kind and how many rows it deleted.
	Deleted func(kind string, n int64)
}

// Report counts the rows one pass deleted, by kind.
type Report struct {
	// Skipped is set when another process held the lock: the pass did
	// nothing.
	Skipped bool
	// Deleted counts deleted rows by kind (workflows count once each,
	// with their rows).
	Deleted map[string]int64
	// More is set when the budget ended the pass with rows left.
	More bool
	// NotDue is set by PassIfDue when a pass ran within the interval: it
	// did nothing (Skipped is set too).
	NotDue bool
}

// Total is how many rows the pass deleted.
func (r Report) Total() int64 {
	var n int64
	for _, v := range r.Deleted {
		n += v
	}
	return n
}

// Cleaner runs retention passes for one engine.
type Cleaner struct {
	e     *engine.Engine
	p     Policy
	owner string
	// sleep waits d or until ctx is done.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a cleaner for e with policy p.
func New(e *engine.Engine, p Policy) *Cleaner {
	if p.BatchSize <= 0 {
		p.BatchSize = 1000
	}
	if p.Budget <= 0 {
		p.Budget = 5 * time.Minute
	}
	return &Cleaner{e: e, p: p, owner: locks.NewOwner(), sleep: sleep}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errBudget ends a pass whose budget ran out.
var errBudget = errors.New("retention budget spent")

// Pass takes the fleet lock and, if it got it, deletes each kind's rows
// older than the policy keeps them, oldest first, in transactions of at
// most BatchSize rows, until none are left or the budget is spent. It
// releases the lock at the end. The report counts what was deleted even
// when an error ends the pass.
func (c *Cleaner) Pass(ctx context.Context) (Report, error) {
	r := Report{Deleted: map[string]int64{}}
	ok, err := c.e.Locks().Acquire(ctx, LockKey, c.owner, c.p.Budget+time.Minute)
	if err != nil {
		return r, fmt.Errorf("retention: %w", err)
	}
	if !ok {
		r.Skipped = true
		return r, nil
	}
	defer func() { _, _ = c.e.Locks().Release(context.WithoutCancel(ctx), LockKey, c.owner) }()
	deadline := time.Now().Add(c.p.Budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	now := c.e.Clock().Now()
	wfBatch := max(c.p.BatchSize/10, 1)
	kinds := []struct {
		name string
		age  time.Duration
		step func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error)
	}{
		{KindWorkflows, c.p.Workflows, func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
			return deleteWorkflows(ctx, tx, before, wfBatch)
		}},
		{KindCompleted, c.p.Completed, c.jobs(driver.JobCompleted)},
		{KindBuried, c.p.Buried, c.buried},
		{KindLogs, c.p.Logs, func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
			n, err := tx.LogDeleteRetired(ctx, before, c.p.BatchSize)
			return n, n >= int64(c.p.BatchSize), err
		}},
		{KindBatches, c.p.Batches, func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
			n, err := tx.BatchDeleteFinished(ctx, before, c.p.BatchSize)
			return n, n >= int64(c.p.BatchSize), err
		}},
	}
	for _, k := range kinds {
		if k.age <= 0 {
			continue
		}
		add := func(n int64) {
			r.Deleted[k.name] += n
			if c.p.Deleted != nil {
				c.p.Deleted(k.name, n)
			}
		}
		err := c.drain(ctx, now.Add(-k.age), deadline, add, k.step)
		if errors.Is(err, errBudget) {
			r.More = true
			return r, nil
		}
		if err != nil {
			return r, fmt.Errorf("retention: delete %s: %w", k.name, err)
		}
	}
	return r, nil
}

// PassIfDue runs a pass (see Pass) unless a pass started through
// PassIfDue within interval on this database, by any process: it takes
// DueKey for interval and leaves it to expire. When the pass could not
// finish (another process held the pass lock, the budget or ctx ran out
// with rows left, or it failed), it gives DueKey back so the next caller
// carries on rather than waiting a whole interval. A pass stops at ctx's
// deadline if that comes before its budget.
func (c *Cleaner) PassIfDue(ctx context.Context, interval time.Duration) (Report, error) {
	ok, err := c.e.Locks().Acquire(ctx, DueKey, c.owner, interval)
	if err != nil {
		return Report{Deleted: map[string]int64{}}, fmt.Errorf("retention: %w", err)
	}
	if !ok {
		return Report{Skipped: true, NotDue: true, Deleted: map[string]int64{}}, nil
	}
	r, err := c.Pass(ctx)
	if r.Skipped || r.More || err != nil {
		_, _ = c.e.Locks().Release(context.WithoutCancel(ctx), DueKey, c.owner)
	}
	return r, err
}

// drain runs step in its own transaction until it reports no more rows,
// waiting after each as long as it took (at least Pause), and stops with
// errBudget at the deadline.
func (c *Cleaner) drain(ctx context.Context, before, deadline time.Time, add func(int64),
	step func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error)) error {
	for {
		var n int64
		var more bool
		t0 := time.Now()
		err := c.e.Store().InTx(ctx, func(tx driver.Tx) (err error) {
			n, more, err = step(ctx, tx, before)
			return err
		})
		if err != nil {
			return err
		}
		add(n)
		if !more {
			return nil
		}
		if !time.Now().Before(deadline) {
			return errBudget
		}
		if err := c.sleep(ctx, max(c.p.Pause, time.Since(t0))); err != nil {
			return err
		}
	}
}

// jobs deletes one batch of jobs in status.
func (c *Cleaner) jobs(status driver.JobStatus) func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
	return func(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
		ids, err := tx.JobRetirable(ctx, status, driver.RetireParams{Before: before, Limit: c.p.BatchSize})
		if err != nil {
			return 0, false, err
		}
		n, err := tx.JobDeleteRetired(ctx, ids, status, before)
		return n, len(ids) >= c.p.BatchSize, err
	}
}

// buried deletes one batch of buried jobs, then of failed ones.
func (c *Cleaner) buried(ctx context.Context, tx driver.Tx, before time.Time) (int64, bool, error) {
	n, more, err := c.jobs(driver.JobBuried)(ctx, tx, before)
	if err != nil || more {
		return n, more, err
	}
	m, more, err := c.jobs(driver.JobFailed)(ctx, tx, before)
	return n + m, more, err
}

// deleteWorkflows deletes up to limit finished workflows with their rows:
// it finds them without locks, locks their rows, checks them again and
// deletes the ones that still qualify.
func deleteWorkflows(ctx context.Context, tx driver.Tx, before time.Time, limit int) (int64, bool, error) {
	ids, err := tx.WorkflowRetirable(ctx, driver.RetireParams{Before: before, Limit: limit})
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	if _, err := tx.WorkflowGetMany(ctx, ids, driver.LockUpdate); err != nil {
		return 0, false, err
	}
	still, err := tx.WorkflowRetirable(ctx, driver.RetireParams{Before: before, Limit: limit, Only: ids})
	if err != nil {
		return 0, false, err
	}
	n, err := tx.WorkflowDeleteWithRows(ctx, still)
	return n, len(ids) >= limit, err
}
