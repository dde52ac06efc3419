package operate

// This file holds the operator actions on single jobs and on the logs
// table that Queuety's CLI offers: bury, delete, retry every buried job,
// purge logs and the per-handler metrics.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// operatorBatch is how many rows one transaction of a bulk operator
// action (retry-buried, log purge) changes.
const operatorBatch = 100

// purgeBatch is how many rows one purge transaction deletes.
const purgeBatch = 1000

// BuryJob buries a job by hand: status buried, failed_at now and msg
// (queuetytype.ManualBuryMessage when empty) as its error message, as Queuety's
// bury_job writes it, without a log row (a `buried` row would count as a
// handler failure in the metrics). A completed or already buried job is
// queuetytype.ErrInvalidState. A step of a workflow that has not ended is handled as a
// step whose attempts ran out, in the same transaction: a for_each branch
// counts as a failed branch, any other step fails the workflow (which
// `RetryWorkflow` can restart). Queuety PHP buries only the row and
// leaves such a workflow waiting for a job that never runs.
func (e *Service) BuryJob(ctx context.Context, id int64, msg string) error {
	if msg == "" {
		msg = queuetytype.ManualBuryMessage
	}
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		peek, err := tx.JobGet(ctx, id, driver.LockNone)
		if err != nil {
			return err
		}
		// Lock the workflow before its job, as every workflow transition does.
		var wf *driver.Workflow
		if peek.WorkflowID != 0 && peek.StepIndex != nil {
			wf, err = tx.WorkflowGet(ctx, peek.WorkflowID, driver.LockUpdate)
			if errors.Is(err, queuetytype.ErrNotFound) {
				wf, err = nil, nil
			}
			if err != nil {
				return err
			}
		}
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if j.Status == driver.JobCompleted || j.Status == driver.JobBuried {
			return fmt.Errorf("%w: job is %s; only pending, processing or failed jobs can be buried", queuetytype.ErrInvalidState, j.Status)
		}
		now := e.cfg.Clock.Now()
		if err := e.cfg.BuryJob(ctx, tx, j, msg, now); err != nil {
			return err
		}
		if wf == nil || wf.Status.Terminal() {
			return nil
		}
		return e.cfg.StepJobBuried(ctx, tx, wf, j, msg, now)
	})
	return wrap(fmt.Sprintf("bury job %d", id), err)
}

// DeleteJob deletes a job row, as Queuety's delete_job does; its log rows
// are kept. It returns queuetytype.ErrNotFound for an unknown job. It refuses, with
// queuetytype.ErrInvalidState, to delete a pending or processing step of a workflow
// that has not ended, which would leave the workflow waiting for good:
// cancel or rewind the workflow instead. Jobs that depend on a deleted
// job (depends_on) never become due, as in Queuety.
func (e *Service) DeleteJob(ctx context.Context, id int64) error {
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if j.WorkflowID != 0 && (j.Status == driver.JobPending || j.Status == driver.JobProcessing) {
			wf, err := tx.WorkflowGet(ctx, j.WorkflowID, driver.LockNone)
			if err != nil && !errors.Is(err, queuetytype.ErrNotFound) {
				return err
			}
			if err == nil && !wf.Status.Terminal() {
				return fmt.Errorf("%w: job %d is a %s step of workflow %d, which is %s; cancel or rewind the workflow instead",
					queuetytype.ErrInvalidState, id, j.Status, wf.ID, wf.Status)
			}
		}
		return tx.JobDelete(ctx, id)
	})
	return wrap(fmt.Sprintf("delete job %d", id), err)
}

// RetryBuried retries every buried plain job that matches f, as RetryJob
// retries one, and returns how many it retried. Buried workflow steps are
// left alone (retry their workflows). It works in batches of 100 jobs,
// each in its own transaction, oldest job first; a job that another
// process changes in the meantime is re-checked under its lock.
func (e *Service) RetryBuried(ctx context.Context, f queuetytype.BuriedFilter) (int64, error) {
	var total, after int64
	for {
		var n, next int64
		var seen int
		// The transaction may run again after a conflict: it pages from
		// after, and only a committed batch moves after on.
		err := e.store.InTx(ctx, func(tx driver.Tx) error {
			n, next, seen = 0, after, 0
			jobs, err := tx.JobList(ctx, driver.JobFilter{Status: driver.JobBuried, Queue: f.Queue, Handler: f.Handler,
				AfterID: after, Limit: operatorBatch})
			if err != nil {
				return err
			}
			seen = len(jobs)
			var ids []int64
			for _, j := range jobs {
				if j.WorkflowID == 0 {
					ids = append(ids, j.ID)
				}
			}
			if seen > 0 {
				next = jobs[seen-1].ID
			}
			locked, err := tx.JobGetMany(ctx, ids, driver.LockUpdate)
			if err != nil {
				return err
			}
			now := e.cfg.Clock.Now()
			for _, j := range locked {
				if j.Status != driver.JobBuried || j.WorkflowID != 0 {
					continue
				}
				if err := e.cfg.RequeueJob(ctx, tx, j, now); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return total, wrap("retry buried jobs", err)
		}
		total, after = total+n, next
		if seen < operatorBatch {
			return total, nil
		}
	}
}

// PurgeLogs deletes log rows created more than olderThan ago (Queuety's
// Logger::purge), in batches, and returns how many it deleted.
func (e *Service) PurgeLogs(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, invalidf("log purge age must not be negative")
	}
	before := e.cfg.Clock.Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		err := e.store.InTx(ctx, func(tx driver.Tx) (err error) { n, err = tx.LogDeleteBefore(ctx, before, purgeBatch); return err })
		if err != nil {
			return total, wrap("purge logs", err)
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}

// HandlerMetrics computes per-handler metrics from the log rows of the
// last window, as Queuety's Metrics::handler_stats does: completed,
// failed (failed plus buried rows), mean and 95th-percentile duration of
// the completed rows, and the error rate. Rows without a handler are not
// counted. Handlers come in name order. window must be positive.
func (e *Service) HandlerMetrics(ctx context.Context, window time.Duration) ([]queuetytype.HandlerMetric, error) {
	if window <= 0 {
		return nil, invalidf("metrics window must be positive, got %s", window)
	}
	since := rowtime.Floor(e.cfg.Clock.Now().Add(-window))
	var out []queuetytype.HandlerMetric
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		out = nil
		stats, err := tx.LogHandlerStats(ctx, since)
		if err != nil {
			return err
		}
		durations := map[string]int64{}
		for _, s := range stats {
			if len(out) == 0 || out[len(out)-1].Handler != s.Handler {
				out = append(out, queuetytype.HandlerMetric{Handler: s.Handler})
			}
			m := &out[len(out)-1]
			switch s.Event {
			case driver.LogCompleted:
				m.Completed = s.Count
				m.AvgMS = math.Round(s.AvgDurationMS*100) / 100
				durations[s.Handler] = s.Durations
			case driver.LogFailed, driver.LogBuried:
				m.Failed += s.Count
			}
		}
		for i := range out {
			m := &out[i]
			if total := m.Completed + m.Failed; total > 0 {
				m.ErrorRate = math.Round(float64(m.Failed)/float64(total)*10000) / 10000
			}
			n := durations[m.Handler]
			if n == 0 {
				continue
			}
			idx := min(max(int64(math.Ceil(0.95*float64(n)))-1, 0), n-1)
			d, ok, err := tx.LogDurationAt(ctx, m.Handler, since, idx)
			if err != nil {
				return err
			}
			if ok {
				m.P95MS = float64(d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("handler metrics", err)
	}
	return out, nil
}
