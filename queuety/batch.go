package queuety

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Batch is one batch of jobs, as Queuety stores it in its batches table:
// counts, the failed job ids, the callbacks, and when it was created,
// finished and cancelled.
type Batch struct {
	ID           int64
	Name         string // "" when it has none
	TotalJobs    int
	PendingJobs  int // jobs not yet completed or buried
	FailedJobs   int // jobs buried
	FailedJobIDs []int64
	Options      BatchOptions
	CreatedAt    time.Time
	FinishedAt   time.Time // zero until every job ended, or the batch was cancelled
	CancelledAt  time.Time // zero unless cancelled
	// Event is set on the Batch a callback receives: "then", "catch",
	// "finally", or "cancel" (the finally callback, run by CancelBatch).
	Event string
}

// BatchOptions are a batch's callbacks and failure policy (Queuety's
// options column).
type BatchOptions struct {
	Then, Catch, Finally string // callback names; "" for none
	AllowFailures        bool
}

// Progress is the share of jobs that ended (completed or buried), in
// whole percent rounded down: 100 for a batch without jobs, as in Queuety.
func (b *Batch) Progress() int {
	if b.TotalJobs == 0 {
		return 100
	}
	return (b.TotalJobs - b.PendingJobs) * 100 / b.TotalJobs
}

// Finished reports whether every job ended or the batch was cancelled.
func (b *Batch) Finished() bool { return !b.FinishedAt.IsZero() }

// Cancelled reports whether the batch was cancelled.
func (b *Batch) Cancelled() bool { return !b.CancelledAt.IsZero() }

// HasFailures reports whether any job of the batch was buried.
func (b *Batch) HasFailures() bool { return b.FailedJobs > 0 }

// BatchCallbackFunc handles a batch's then, catch or finally callback
// (registered with HandleBatchCallback under the name given to the
// builder's Then, Catch or Finally). It receives the batch as it was right
// after the transition that fired it. It runs once, as a job: its error
// (or panic) buries that job and changes nothing on the batch, and it is
// not retried. If the worker running it dies, stale recovery hands the job
// back and it runs again (up to 3 attempts), so under a crash it runs at
// least once: make it safe to run twice.
type BatchCallbackFunc func(ctx context.Context, batch *Batch) error

// ChainFailure is what a chain's catch handler receives: the job that was
// buried and why.
type ChainFailure struct {
	JobID   int64
	Handler string
	Queue   string
	Payload Payload // the job's payload, without the engine's keys
	Error   string  // the job's error message
}

// ChainCatchFunc handles a chain's catch callback (registered with
// HandleChainCatch under the name given to ChainBuilder.Catch). It runs
// once per buried chain job, as a job that is not retried when it fails;
// like a BatchCallbackFunc it runs again only if its worker dies.
type ChainCatchFunc func(ctx context.Context, failure ChainFailure) error

// HandleBatchCallback registers a batch callback under the name given to
// BatchBuilder's Then, Catch or Finally (see HandleJob for panics). The
// engine enqueues it as a job named after it, so only workers that
// registered it run it. A name registered here also tells the engine that
// this process runs it: with WithPHPBatchCallbacks, names not registered
// are handed to Queuety PHP instead.
func (r *Registry) HandleBatchCallback(name string, fn BatchCallbackFunc) {
	if fn == nil {
		r.HandleJob(name, nil) // panics with the usual message
	}
	r.HandleJob(name, func(ctx context.Context, p Payload) error {
		b, err := batchFromPayload(p)
		if err != nil {
			return NonRetryable(err)
		}
		return fn(ctx, b)
	})
	r.markBatchCallback(name)
}

// HandleChainCatch registers a chain's catch handler under the name given
// to ChainBuilder.Catch (see HandleJob for panics). It runs as a job named
// after it, once per buried chain job.
func (r *Registry) HandleChainCatch(name string, fn ChainCatchFunc) {
	if fn == nil {
		r.HandleJob(name, nil)
	}
	r.HandleJob(name, func(ctx context.Context, p Payload) error {
		f := ChainFailure{Handler: p.String("handler"), Queue: p.String("queue"), Error: p.String("error_message")}
		f.JobID, _ = p.Int("job_id")
		if inner, ok := p["payload"].(map[string]any); ok {
			f.Payload = Payload(inner)
		} else {
			f.Payload = Payload{}
		}
		return fn(ctx, f)
	})
	r.markBatchCallback(name)
}

func (r *Registry) markBatchCallback(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batchCallbacks == nil {
		r.batchCallbacks = map[string]bool{}
	}
	r.batchCallbacks[name] = true
}

// IsBatchCallback reports whether name was registered with
// HandleBatchCallback or HandleChainCatch.
func (r *Registry) IsBatchCallback(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.batchCallbacks[name]
}

// WithPHPBatchCallbacks hands the batch callbacks and chain catch handlers
// that no worker of this process registered (HandleBatchCallback,
// HandleChainCatch) to Queuety PHP: when a Go worker finishes such a batch
// or buries such a chain job, it enqueues a job for the PHP class
// QueuetyGo\BatchCallback (php/queuety-go-bridge.php in this repository)
// on queue, which a PHP worker polling that queue runs: it re-reads the
// batch and calls the callback class's handle(Batch), as Queuety's
// BatchManager does. Without this option (the default) every callback is
// enqueued for Go workers.
func WithPHPBatchCallbacks(queue string) Option {
	return func(cfg *config) { cfg.phpBatchQueue = queue }
}

// WithPHPCallbacks hands every callback class that no worker of this
// process registered to Queuety PHP, on queue: the batch callbacks and
// chain catch handlers of WithPHPBatchCallbacks, and a workflow's
// compensations (CompensateWith) and cancel callback (OnCancel). A
// compensation or cancel callback becomes a job for the PHP class
// QueuetyGo\WorkflowCallback (php/ in this repository), which a PHP
// worker polling queue runs: it calls the class as Queuety does
// (handle($snapshot) for a compensation, handle($state) for a cancel
// callback) and then enqueues the next compensation, newest first, for
// PHP or for the Go worker that has it. A name that is not a PHP class
// there is handed back to Go workers as the job the engine enqueues
// without this option. Workers register the Go ones (HandleCompensation,
// HandleDeadline) so that this process keeps them. Use it on every Go
// process that fails or cancels workflows whose callbacks are PHP
// classes, including operator commands (queuety-worker workflow cancel
// --php-callbacks). With it a worker's sweep also hands the workflows
// Queuety PHP failed or cancelled to the bridge, which enqueues the Go
// compensations and cancel callback PHP skipped (see
// deadline.Sweeper.WorkflowCallbacks).
func WithPHPCallbacks(queue string) Option {
	return func(cfg *config) { cfg.phpBatchQueue, cfg.phpWorkflowQueue = queue, queue }
}

// BatchBuilder collects a batch's jobs and settings; create it with
// Client.NewBatch and finish it with Dispatch.
type BatchBuilder struct {
	c    *Client
	jobs []JobRequest
	spec batch.Spec
}

// NewBatch starts a batch of jobs (Queuety's create_batch). Each job keeps
// its own options; a job without OnQueue goes on the batch's queue.
func (c *Client) NewBatch(jobs ...JobRequest) *BatchBuilder {
	return &BatchBuilder{c: c, jobs: jobs}
}

// Name names the batch.
func (b *BatchBuilder) Name(name string) *BatchBuilder { b.spec.Name = name; return b }

// OnQueue sets the queue of the jobs that do not name their own (default
// "default").
func (b *BatchBuilder) OnQueue(queue string) *BatchBuilder { b.spec.Queue = queue; return b }

// Then names the callback that runs when every job completed (or every job
// ended, with AllowFailures).
func (b *BatchBuilder) Then(name string) *BatchBuilder { b.spec.Then = name; return b }

// Catch names the callback that runs when the first job is buried.
func (b *BatchBuilder) Catch(name string) *BatchBuilder { b.spec.Catch = name; return b }

// Finally names the callback that runs when the batch finishes, whatever
// the outcome, and when it is cancelled.
func (b *BatchBuilder) Finally(name string) *BatchBuilder { b.spec.Finally = name; return b }

// AllowFailures lets Then run even when jobs were buried.
func (b *BatchBuilder) AllowFailures() *BatchBuilder { b.spec.AllowFailures = true; return b }

// Dispatch writes the batch row and its jobs in one transaction and returns
// the batch id. The rows are the ones Queuety PHP's BatchBuilder writes.
// A batch needs at least one job; Unique is not supported in a batch.
func (b *BatchBuilder) Dispatch(ctx context.Context) (int64, error) {
	reqs, err := b.c.engineRequests(b.jobs)
	if err != nil {
		return 0, err
	}
	id, _, err := b.c.engine.Dispatcher().DispatchBatch(ctx, b.spec, reqs)
	return id, err
}

// ChainBuilder collects a chain's jobs; create it with Client.Chain and
// finish it with Dispatch.
type ChainBuilder struct {
	c     *Client
	jobs  []JobRequest
	queue string
	catch string
}

// Chain starts a chain of jobs that run one after another (Queuety's
// chain): each job depends on the previous one, so it runs only after that
// one completed. When a job is buried the chain stops there: the jobs after
// it stay pending, as in Queuety.
func (c *Client) Chain(jobs ...JobRequest) *ChainBuilder { return &ChainBuilder{c: c, jobs: jobs} }

// OnQueue sets the queue of the jobs that do not name their own (default
// "default").
func (b *ChainBuilder) OnQueue(queue string) *ChainBuilder { b.queue = queue; return b }

// Catch names the handler that runs when a job of the chain is buried
// (HandleChainCatch in Go; a class with handle($job, $exception) in
// Queuety PHP). It is stored in every job's payload as "__chain_catch".
func (b *ChainBuilder) Catch(name string) *ChainBuilder { b.catch = name; return b }

// Dispatch writes the chain's jobs in one transaction and returns the
// first job's id, as Queuety's ChainBuilder does.
func (b *ChainBuilder) Dispatch(ctx context.Context) (int64, error) {
	ids, err := b.DispatchIDs(ctx)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// DispatchIDs is Dispatch returning every job's id, in chain order.
func (b *ChainBuilder) DispatchIDs(ctx context.Context) ([]int64, error) {
	reqs, err := b.c.engineRequests(b.jobs)
	if err != nil {
		return nil, err
	}
	return b.c.engine.Dispatcher().DispatchChain(ctx, b.queue, b.catch, reqs)
}

// Batch reads a batch. It returns an error wrapping ErrNotFound when there
// is none.
func (c *Client) Batch(ctx context.Context, id int64) (*Batch, error) {
	var row *queuetytype.Batch
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { row, err = tx.BatchGet(ctx, id, driver.LockNone); return err })
	if err != nil {
		return nil, wrap("read batch", err)
	}
	return batchFromRow(row)
}

// ListBatches lists batches, newest first.
func (c *Client) ListBatches(ctx context.Context, f queuetytype.BatchFilter) ([]*Batch, error) {
	var rows []*queuetytype.Batch
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { rows, err = tx.BatchList(ctx, f); return err })
	if err != nil {
		return nil, wrap("list batches", err)
	}
	out := make([]*Batch, 0, len(rows))
	for _, r := range rows {
		b, err := batchFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// BatchJobCounts counts a batch's jobs by queue and status.
func (c *Client) BatchJobCounts(ctx context.Context, id int64) ([]queuetytype.QueueCount, error) {
	var out []queuetytype.QueueCount
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.BatchJobCounts(ctx, id); return err })
	return out, wrap("count batch jobs", err)
}

// BatchEvents lists the batch transitions whose callbacks the Go engine
// handled, with the callback job it enqueued for each.
func (c *Client) BatchEvents(ctx context.Context, id int64) ([]*queuetytype.BatchEvent, error) {
	var out []*queuetytype.BatchEvent
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.BatchEventList(ctx, []int64{id}); return err })
	return out, wrap("list batch events", err)
}

// CancelBatch cancels a batch as Queuety's BatchManager::cancel does:
// cancelled_at and finished_at are set and the finally callback is
// enqueued, once; cancelling a cancelled batch does nothing. The batch's
// pending jobs are left alone: they still run (as in Queuety) and no
// longer change the batch. It returns an error wrapping ErrNotFound for a
// missing batch.
func (c *Client) CancelBatch(ctx context.Context, id int64) error {
	_, err := c.engine.CancelBatch(ctx, id)
	return err
}

// PruneBatches deletes the batches that finished more than olderThan ago
// (Queuety's BatchManager::prune), in chunks, and returns how many it
// deleted. Unfinished batches are never deleted.
func (c *Client) PruneBatches(ctx context.Context, olderThan time.Duration) (int64, error) {
	before := c.engine.Clock().Now().Add(-olderThan)
	var total int64
	for {
		var n int64
		err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { n, err = tx.BatchDeleteFinished(ctx, before, 1000); return err })
		if err != nil {
			return total, wrap("prune batches", err)
		}
		total += n
		if n < 1000 {
			return total, nil
		}
	}
}

// batchWire is a batch row as batch.Object writes it.
type batchWire struct {
	ID           int64           `json:"id"`
	Name         *string         `json:"name"`
	TotalJobs    int             `json:"total_jobs"`
	PendingJobs  int             `json:"pending_jobs"`
	FailedJobs   int             `json:"failed_jobs"`
	FailedJobIDs []int64         `json:"failed_job_ids"`
	Options      json.RawMessage `json:"options"`
	CancelledAt  *string         `json:"cancelled_at"`
	CreatedAt    *string         `json:"created_at"`
	FinishedAt   *string         `json:"finished_at"`
}

func batchFromRow(row *queuetytype.Batch) (*Batch, error) {
	return decodeBatch(workflowstate.EncodeJSON(batch.Object(row)))
}

func batchFromPayload(p Payload) (*Batch, error) {
	raw, err := json.Marshal(p["batch"])
	if err != nil {
		return nil, fmt.Errorf("queuety: batch callback payload: %w", err)
	}
	b, err := decodeBatch(raw)
	if err != nil {
		return nil, err
	}
	b.Event = p.String("event")
	return b, nil
}

func decodeBatch(raw []byte) (*Batch, error) {
	var w batchWire
	if err := json.Unmarshal(raw, &w); err != nil || w.ID == 0 {
		return nil, fmt.Errorf("queuety: malformed batch %s: %v", raw, err)
	}
	b := &Batch{ID: w.ID, TotalJobs: w.TotalJobs, PendingJobs: w.PendingJobs, FailedJobs: w.FailedJobs, FailedJobIDs: w.FailedJobIDs}
	if w.Name != nil {
		b.Name = *w.Name
	}
	if b.FailedJobIDs == nil {
		b.FailedJobIDs = []int64{}
	}
	var opts map[string]any
	if json.Unmarshal(w.Options, &opts) == nil {
		b.Options.Then, _ = opts["then"].(string)
		b.Options.Catch, _ = opts["catch"].(string)
		b.Options.Finally, _ = opts["finally"].(string)
		b.Options.AllowFailures = State(opts).Bool("allow_failures")
	}
	for _, t := range []struct {
		s   *string
		dst *time.Time
	}{{w.CreatedAt, &b.CreatedAt}, {w.FinishedAt, &b.FinishedAt}, {w.CancelledAt, &b.CancelledAt}} {
		if t.s != nil {
			if v, err := time.ParseInLocation(time.DateTime, *t.s, time.UTC); err == nil {
				*t.dst = v
			}
		}
	}
	return b, nil
}
