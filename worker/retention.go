package worker

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/retention"
	"github.com/queuety/queuety-go/observe"
)

// Defaults of the retention cleaner (see Retention).
const (
	// RetainCompletedDefault is how long completed jobs and log rows are
	// kept: 7 days, Queuety's QUEUETY_RETENTION_DAYS default.
	RetainCompletedDefault = 7 * 24 * time.Hour
	// RetainWorkflowsDefault is how long finished workflows are kept with
	// their rows: 30 days.
	RetainWorkflowsDefault = 30 * 24 * time.Hour
	// RetainBatchesDefault is how long finished batches are kept: 30 days.
	RetainBatchesDefault = 30 * 24 * time.Hour
	// RetentionIntervalDefault is how often a worker runs a cleaner pass:
	// 15 minutes. One worker of a fleet runs it at a time.
	RetentionIntervalDefault = 15 * time.Minute
	// RetentionBatchDefault is how many rows one cleaner transaction
	// deletes.
	RetentionBatchDefault = 1000
	// RetentionPauseDefault is the cleaner's wait after each transaction.
	RetentionPauseDefault = 20 * time.Millisecond
	// RetentionBudgetDefault caps one cleaner pass: 5 minutes.
	RetentionBudgetDefault = 5 * time.Minute
)

// SweepRetention is the name of the retention cleaner's maintenance task
// in Hooks.Swept. Observers (observe.Observer.Swept) see one sweep per kind
// of row it deleted, named "retention-" and the kind: completed_jobs,
// buried_jobs, logs, workflows, batches.
const SweepRetention = "retention"

// Retention configures the cleaner a long-running worker runs with its
// maintenance, on by default: it deletes finished rows older than these
// ages, as Queuety's purge commands would (Queue::purge_completed,
// Logger::purge, BatchManager::prune, and the workflow purge of this
// module, with each workflow's jobs, events, chunks, artifacts, signals,
// dependencies and dispatch keys). It never deletes a running, waiting or
// paused workflow or a row one still needs: the steps of an unfinished
// workflow, a job an unfinished job depends on, a child of an unfinished
// parent, a workflow an unfinished workflow waits on.
//
// A zero age takes its default; a negative age keeps those rows forever.
// Ages count from when a row finished (completed_at, failed_at,
// finished_at) or, for log rows, was written, on the client's clock.
//
// Every worker schedules the pass every Interval (± the maintenance
// jitter), but one at a time across all processes on the database runs
// it: a pass holds the "queuety:retention" row of Queuety's locks table,
// and a worker that finds it held skips its turn. RunOnce runs a pass only
// when none ran within Interval (see retention.DueKey), so cron-started
// workers clean once an Interval too (unless NoMaintenance is set: then
// dedicated processes sweep and clean). A pass deletes at most
// BatchSize rows (BatchSize/10 workflows with their rows) per
// transaction, waits after each as long as it took (at least Pause), and
// stops after Budget, leaving the rest to the next pass.
type Retention struct {
	// Completed is how long completed jobs are kept (default
	// RetainCompletedDefault, 7 days).
	Completed time.Duration
	// Buried is how long buried (and failed) jobs are kept (default:
	// forever). A buried job waits for an operator to retry or delete it,
	// so it is only deleted when Buried is positive.
	Buried time.Duration
	// Logs is how long log rows are kept (default: the Completed age).
	Logs time.Duration
	// Workflows is how long completed, failed and cancelled workflows are
	// kept with their rows (default RetainWorkflowsDefault, 30 days).
	Workflows time.Duration
	// Batches is how long finished batches are kept (default
	// RetainBatchesDefault, 30 days).
	Batches time.Duration
	// Interval is the time between passes (default
	// RetentionIntervalDefault, 15 min).
	Interval time.Duration
	// BatchSize is how many rows one transaction deletes (default
	// RetentionBatchDefault, 1000).
	BatchSize int
	// Pause is the least wait after each transaction (default
	// RetentionPauseDefault, 20 ms); the cleaner waits as long as the
	// transaction took when that is longer, so it keeps the database busy
	// at most half the time.
	Pause time.Duration
	// Budget caps one pass (default RetentionBudgetDefault, 5 min).
	Budget time.Duration
}

// Retain sets the retention cleaner's ages and pacing (see Retention).
func Retain(r Retention) Option { return func(c *config) { c.retention, c.noRetention = r, false } }

// NoRetention turns the retention cleaner off: nothing is deleted unless
// an operator purges (the CLI's job purge, log purge, workflow purge,
// workflow prune-events).
func NoRetention() Option { return func(c *config) { c.noRetention = true } }

// withDefaults fills in the zero fields.
func (r Retention) withDefaults() Retention {
	def := func(d, v time.Duration) time.Duration {
		if d == 0 {
			return v
		}
		return d
	}
	r.Completed = def(r.Completed, RetainCompletedDefault)
	r.Logs = def(r.Logs, r.Completed)
	r.Workflows = def(r.Workflows, RetainWorkflowsDefault)
	r.Batches = def(r.Batches, RetainBatchesDefault)
	r.Interval = def(r.Interval, RetentionIntervalDefault)
	r.Pause = def(r.Pause, RetentionPauseDefault)
	r.Budget = def(r.Budget, RetentionBudgetDefault)
	if r.BatchSize <= 0 {
		r.BatchSize = RetentionBatchDefault
	}
	return r
}

// policy is the cleaner's policy for r (after withDefaults).
func (r Retention) policy() retention.Policy {
	return retention.Policy{Completed: r.Completed, Buried: r.Buried, Logs: r.Logs, Workflows: r.Workflows,
		Batches: r.Batches, BatchSize: r.BatchSize, Pause: max(r.Pause, 0), Budget: r.Budget}
}

// retentionTask is the cleaner's maintenance task, nil when it is off.
func (w *Worker) retentionTask() *task {
	if w.cfg.noRetention {
		return nil
	}
	r := w.cfg.retention
	if r.Interval < 0 {
		return nil
	}
	cl := retention.New(w.engine, r.policy())
	return &task{name: SweepRetention, interval: r.Interval, run: func(ctx context.Context) (int, error) {
		return w.retain(ctx, cl.Pass)
	}}
}

// retainOnce starts the cleaner's pass of a RunOnce call beside its
// drain, when one is due (see retention.Cleaner.PassIfDue: one pass an
// Interval across the fleet, however often cron starts workers), and
// bounded by the call's budget; not with NoRetention or NoMaintenance.
// The returned function waits for it.
func (w *Worker) retainOnce(ctx context.Context, budget time.Duration) (wait func()) {
	if w.cfg.noRetention || !w.cfg.maintenance || w.cfg.retention.Interval < 0 {
		return func() {}
	}
	r := w.cfg.retention
	cl := retention.New(w.engine, r.policy())
	pctx, cancel := context.WithTimeout(ctx, budget)
	t := &task{name: SweepRetention, run: func(ctx context.Context) (int, error) {
		return w.retain(ctx, func(ctx context.Context) (retention.Report, error) { return cl.PassIfDue(ctx, r.Interval) })
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		_ = w.sweepOnce(pctx, t)
	}()
	return func() { <-done }
}

// retain runs one cleaner pass, logs what it deleted and reports each
// kind to the observer.
func (w *Worker) retain(ctx context.Context, pass func(context.Context) (retention.Report, error)) (int, error) {
	t0 := time.Now()
	rep, err := pass(ctx)
	d := time.Since(t0)
	if err != nil && ctx.Err() != nil {
		// The worker's budget or shutdown ended the pass: what it
		// deleted stays deleted, and the next pass carries on.
		rep.More, err = true, nil
	}
	if rep.NotDue {
		w.log.Debug("queuety: retention pass not due; one ran within the interval")
		return 0, nil
	}
	if rep.Skipped {
		w.log.Debug("queuety: retention pass skipped; another process holds the lock")
		return 0, err
	}
	if total := rep.Total(); total > 0 || err != nil {
		attrs := []any{"duration", d.Round(time.Millisecond), "more", rep.More}
		for _, k := range []string{retention.KindWorkflows, retention.KindCompleted, retention.KindBuried, retention.KindLogs, retention.KindBatches} {
			attrs = append(attrs, k, rep.Deleted[k])
		}
		w.log.Info("queuety: retention pass deleted old rows", attrs...)
	}
	if w.obs != nil {
		for k, n := range rep.Deleted {
			if n > 0 {
				w.obs.Swept(ctx, observe.Sweep{Name: "retention-" + k, Duration: d, Rows: int(n)})
			}
		}
		if err != nil {
			w.obs.Swept(ctx, observe.Sweep{Name: SweepRetention, Duration: d, Err: err})
		}
	}
	return int(rep.Total()), err
}
