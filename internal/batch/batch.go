package batch

// This file runs Queuety's batches (BatchBuilder, BatchManager): a batch
// row counts its jobs down, and its then/catch/finally callbacks fire
// when the batch finishes or first fails.
//
// The row transitions are Queuety's, applied under the batch row's lock in
// the transaction that completes or buries the job (record_completion and
// record_failure run in their own transaction right after in PHP), so a
// transition, and the callbacks it fires, happens once however many
// workers finish jobs at the same time:
//
//   - a completion decrements pending_jobs; the one that reaches 0 sets
//     finished_at and fires then (when failed_jobs is 0 or allow_failures
//     is set) and finally;
//   - a burial also adds the job to failed_job_ids and failed_jobs; the
//     first one fires catch; reaching 0 fires then only with
//     allow_failures, and finally;
//   - a finished batch is left alone (a cancelled batch's jobs still run,
//     as in Queuety, and change nothing);
//   - CancelBatch sets cancelled_at and finished_at, once, and fires
//     finally.
//
// Queuety calls a callback class in-process, in the worker that recorded
// the transition; the Go engine enqueues a job instead, in the same
// transaction, and records the event in the Go-owned batch events table
// (one row per batch and event). Where the job goes:
//
//   - when a worker of this process registered the callback
//     (HandleBatchCallback): a job named after the callback, payload = the
//     batch row, on that worker's first queue;
//   - else, when the client has a PHP bridge queue (WithPHPBatchCallbacks):
//     a job for the bridge class QueuetyGo\BatchCallback (php/ in this
//     repository) on that queue, which a PHP worker runs by calling the
//     callback class's handle(Batch) as BatchManager does;
//   - else a job named after the callback on the queue of the job that
//     fired it (for a cancel: of the batch's jobs), for the Go worker that
//     has it.
//
// Transitions Queuety PHP makes (its workers finish the batch) fire PHP
// callback classes in PHP and skip names that are not classes there. A
// Go sweep (RunForeignBatchCallbacks), and the next Go transition of the
// same batch, find such events by their missing event row and enqueue the
// callbacks this process registered, once.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Batch events, as stored in the batch events table.
const (
	BatchEventCatch   = "catch"
	BatchEventThen    = "then"
	BatchEventFinally = "finally"
	BatchEventCancel  = "cancel"
)

// HandlerPHPCallback is the PHP class a Go engine hands PHP batch
// callbacks and chain catch handlers to (see php/ in this repository).
const HandlerPHPCallback = `QueuetyGo\BatchCallback`

// Lookback is how far back in finished_at the batch sweep looks for
// batches another engine finished.
const Lookback = 24 * time.Hour

// Spec is a batch's header: Queuety's BatchBuilder settings.
type Spec struct {
	Name          string // "" for none (NULL)
	Queue         string // the jobs' queue unless a job names its own ("" = default)
	Then          string // callback names; "" for none
	Catch         string
	Finally       string
	AllowFailures bool
}

// Check checks a batch of n jobs with this header: a batch needs at least
// one job, and its name fits its column.
func (s Spec) Check(n int) error {
	if n == 0 {
		return fmt.Errorf("queuety: dispatch batch: %w", invalidf("a batch needs at least one job"))
	}
	if len(s.Name) > 255 {
		return fmt.Errorf("queuety: dispatch batch: %w", invalidf("batch name is longer than 255 characters"))
	}
	return nil
}

// options encodes the options column as BatchBuilder::dispatch does:
// then, catch, finally, allow_failures, only those set ("[]" when none).
func (s Spec) options() []byte {
	o := phpjson.NewObject()
	for _, kv := range [][2]string{{"then", s.Then}, {"catch", s.Catch}, {"finally", s.Finally}} {
		if kv[1] != "" {
			o.Set(kv[0], kv[1])
		}
	}
	if s.AllowFailures {
		o.Set("allow_failures", true)
	}
	return encodeJSON(o)
}

// Config holds what a Service needs beside its store. Zero fields take the
// defaults named on each field.
type Config struct {
	// Clock tells the time (default: the system clock in UTC).
	Clock Clock
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// KnownCallback reports whether a worker of this process runs the
	// batch callback or chain catch handler name, and the queue that
	// worker polls (default: none is known).
	KnownCallback func(name string) (queue string, known bool)
	// PHPCallbacks is the queue on which callbacks no worker of this
	// process registered are handed to Queuety PHP's bridge class; ""
	// sends them to Go workers.
	PHPCallbacks string
	// BridgeRuntime returns the __queuety_runtime object of a job for the
	// PHP bridge class (default: none).
	BridgeRuntime func() *phpjson.Object
	// CallbackAttempts is the attempt limit of a callback job (default
	// queuetytype.DefaultMaxAttempts).
	CallbackAttempts int
	// Handoff is how long after a batch finished a Go worker leaves a
	// callback it does not have to the worker that has it (default
	// queuetytype.DefaultDeadlineHandoff).
	Handoff time.Duration
}

// Clock tells the batches the time.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// Service writes batches and chains and runs their transitions. It is safe
// for concurrent use.
type Service struct {
	store driver.Store
	cfg   Config
	skips skipSet
}

// New returns the batches and chains of store.
func New(store driver.Store, cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KnownCallback == nil {
		cfg.KnownCallback = func(string) (string, bool) { return "", false }
	}
	if cfg.BridgeRuntime == nil {
		cfg.BridgeRuntime = phpjson.NewObject
	}
	if cfg.CallbackAttempts <= 0 {
		cfg.CallbackAttempts = queuetytype.DefaultMaxAttempts
	}
	if cfg.Handoff <= 0 {
		cfg.Handoff = queuetytype.DefaultDeadlineHandoff
	}
	return &Service{store: store, cfg: cfg}
}

// floorSecond truncates t to the whole second (Queuety's DATETIME columns
// have second precision).
func floorSecond(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// insertChunk is how many jobs one multi-row insert writes.
const insertChunk = 500

// Insert writes a batch row and its jobs, built from their requests by
// the engine, in one transaction, in Queuety's order (the batch row, then
// the jobs in order), sets the jobs' ids and returns the batch id. A
// batch needs at least one job. The jobs are noted in the jobnote.Note
// ctx carries, if any: the caller wakes workers for them.
func (e *Service) Insert(ctx context.Context, spec Spec, jobs []*driver.Job) (int64, error) {
	if err := spec.Check(len(jobs)); err != nil {
		return 0, err
	}
	b := &driver.Batch{Name: spec.Name, TotalJobs: len(jobs), PendingJobs: len(jobs), FailedJobIDs: []byte("[]"), Options: spec.options()}
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		b.ID = 0
		b.CreatedAt = floorSecond(e.cfg.Clock.Now())
		if err := tx.BatchInsert(ctx, b); err != nil {
			return err
		}
		for _, j := range jobs {
			j.ID, j.BatchID = 0, b.ID // InTx may run this again
		}
		for start := 0; start < len(jobs); start += insertChunk {
			if err := tx.JobInsert(ctx, jobs[start:min(start+insertChunk, len(jobs))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch batch: %w", err)
	}
	return b.ID, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// batchRow is a locked batch row being changed, with its decoded JSON.
type batchRow struct {
	row       *driver.Batch
	failedIDs []int64
	opts      *phpjson.Object
	changed   bool
	events    []string // fired by this transaction, in Queuety's order
	queue     string   // where Go callback jobs go: the queue of the job that fired them
}

func newBatchRow(b *driver.Batch) *batchRow {
	br := &batchRow{row: b, opts: phpjson.NewObject()}
	if o, err := decodeObject("batch options", b.Options); err == nil {
		br.opts = o
	}
	if v, err := phpjson.Decode(b.FailedJobIDs); err == nil {
		items, _ := workflowstate.ListOf(v)
		for _, x := range items {
			br.failedIDs = append(br.failedIDs, workflowstate.ToInt(x))
		}
	}
	return br
}

// complete is BatchManager::record_completion on a locked row.
func (br *batchRow) complete(now time.Time) {
	b := br.row
	if !b.FinishedAt.IsZero() {
		return
	}
	b.PendingJobs = max(b.PendingJobs-1, 0)
	br.changed = true
	if b.PendingJobs == 0 {
		b.FinishedAt = floorSecond(now)
		if b.FailedJobs == 0 || workflowstate.Truthy(br.opts, "allow_failures") {
			br.events = append(br.events, BatchEventThen)
		}
		br.events = append(br.events, BatchEventFinally)
	}
}

// fail is BatchManager::record_failure on a locked row.
func (br *batchRow) fail(jobID int64, now time.Time) {
	b := br.row
	if !b.FinishedAt.IsZero() {
		return
	}
	for _, id := range br.failedIDs {
		if id == jobID {
			return
		}
	}
	br.failedIDs = append(br.failedIDs, jobID)
	b.PendingJobs = max(b.PendingJobs-1, 0)
	first := b.FailedJobs == 0
	b.FailedJobs++
	ids := make([]any, len(br.failedIDs))
	for i, id := range br.failedIDs {
		ids[i] = id
	}
	b.FailedJobIDs = encodeJSON(ids)
	br.changed = true
	if first {
		br.events = append(br.events, BatchEventCatch)
	}
	if b.PendingJobs == 0 {
		b.FinishedAt = floorSecond(now)
		if workflowstate.Truthy(br.opts, "allow_failures") {
			br.events = append(br.events, BatchEventThen)
		}
		br.events = append(br.events, BatchEventFinally)
	}
}

// callback is the handler name the options hold for an event.
func (br *batchRow) callback(event string) string {
	key := event
	if event == BatchEventCancel {
		key = BatchEventFinally
	}
	return strField(br.opts, key)
}

// JobsCompleted records completed jobs on their batches, in the
// transaction that completed them: the batches are locked in id order with
// one statement, and each one gets one record_completion per job. Jobs of
// no batch, and workflow step jobs, are passed over.
func (e *Service) JobsCompleted(ctx context.Context, tx driver.Tx, jobs []*driver.Job, now time.Time) error {
	count := map[int64]int{}
	queue := map[int64]string{}
	var ids []int64
	for _, j := range jobs {
		if j.BatchID == 0 || j.WorkflowID != 0 {
			continue
		}
		if count[j.BatchID] == 0 {
			ids = append(ids, j.BatchID)
		}
		count[j.BatchID]++
		queue[j.BatchID] = j.Queue
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	rows, err := tx.BatchGetMany(ctx, ids, driver.LockUpdate)
	if err != nil {
		return err
	}
	for _, b := range rows {
		br := newBatchRow(b)
		br.queue = queue[b.ID]
		for range count[b.ID] {
			br.complete(now)
		}
		if err := e.saveBatch(ctx, tx, br, now); err != nil {
			return err
		}
	}
	return nil
}

// jobBuried records a buried plain job on its batch (record_failure).
func (e *Service) jobBuried(ctx context.Context, tx driver.Tx, row *driver.Job, now time.Time) error {
	if row.BatchID == 0 || row.WorkflowID != 0 {
		return nil
	}
	b, err := tx.BatchGet(ctx, row.BatchID, driver.LockUpdate)
	if errors.Is(err, queuetytype.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	br := newBatchRow(b)
	br.queue = row.Queue
	br.fail(row.ID, now)
	return e.saveBatch(ctx, tx, br, now)
}

// Cancel cancels a batch as BatchManager::cancel does: cancelled_at
// and finished_at are set, once, and the finally callback fires. Its
// pending jobs are left as they are: they still run, and change nothing
// on the batch. It reports whether the batch was cancelled now (false when
// it was cancelled before), and queuetytype.ErrNotFound for a missing batch.
func (e *Service) Cancel(ctx context.Context, id int64) (bool, error) {
	var done bool
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		done = false
		now := e.cfg.Clock.Now()
		b, err := tx.BatchGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		if !b.CancelledAt.IsZero() {
			return nil
		}
		br := newBatchRow(b)
		b.CancelledAt, b.FinishedAt = floorSecond(now), floorSecond(now)
		br.changed, br.events = true, []string{BatchEventCancel}
		done = true
		return e.saveBatch(ctx, tx, br, now)
	})
	if err != nil {
		return false, fmt.Errorf("queuety: cancel batch %d: %w", id, err)
	}
	return done, nil
}

// saveBatch writes a changed batch row and, when its transition fired
// events, settles them (settleBatch).
func (e *Service) saveBatch(ctx context.Context, tx driver.Tx, br *batchRow, now time.Time) error {
	if !br.changed {
		return nil
	}
	if err := tx.BatchUpdate(ctx, br.row); err != nil {
		return err
	}
	if len(br.events) == 0 {
		return nil
	}
	_, err := e.settleBatch(ctx, tx, br, now)
	return err
}

// dueEvents are the events a batch row's transitions so far have fired,
// in Queuety's order.
func (br *batchRow) dueEvents() []string {
	b := br.row
	var out []string
	if b.FailedJobs > 0 {
		out = append(out, BatchEventCatch)
	}
	if b.TotalJobs > 0 && b.PendingJobs == 0 && !b.FinishedAt.IsZero() {
		if b.FailedJobs == 0 || workflowstate.Truthy(br.opts, "allow_failures") {
			out = append(out, BatchEventThen)
		}
		out = append(out, BatchEventFinally)
	}
	if !b.CancelledAt.IsZero() {
		out = append(out, BatchEventCancel)
	}
	return out
}

// SettleForeign settles batch b, locked by the batch sweep in tx, whose
// last transition another engine made: see settleBatch. It returns how
// many callback jobs it enqueued.
func (e *Service) SettleForeign(ctx context.Context, tx driver.Tx, b *driver.Batch, now time.Time) (int, error) {
	return e.settleBatch(ctx, tx, newBatchRow(b), now)
}

// Skips returns the batches the sweep moves past: those left to another
// worker within the last handoff period.
func (e *Service) Skips(now time.Time) []int64 { return e.skips.list(now, e.cfg.Handoff) }

// skipSet holds the batches the sweep moves past, with when each was left.
type skipSet struct {
	mu  sync.Mutex
	ids map[int64]time.Time
}

// list returns the batches left within the last handoff period, and
// forgets the others.
func (s *skipSet) list(now time.Time, handoff time.Duration) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id, at := range s.ids {
		if !now.Before(at.Add(handoff)) {
			delete(s.ids, id)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// add notes that the batch was left to another worker at now, unless it
// was already.
func (s *skipSet) add(id int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[int64]time.Time{}
	}
	if _, ok := s.ids[id]; !ok {
		s.ids[id] = now
	}
}

// settleBatch enqueues the callbacks of the batch's due events that have
// no event row yet, in Queuety's order, and records them: the events this
// transaction fired (br.events) go where callbackRoute says; the others,
// transitions another engine made, only to this process's own Go
// callbacks (a PHP callback class ran in PHP already), and are left to
// other workers for the handoff otherwise. It runs under the batch's row
// lock and returns how many callback jobs it enqueued.
func (e *Service) settleBatch(ctx context.Context, tx driver.Tx, br *batchRow, now time.Time) (int, error) {
	b := br.row
	have, err := tx.BatchEventList(ctx, []int64{b.ID})
	if err != nil {
		return 0, err
	}
	recorded := map[string]bool{}
	for _, ev := range have {
		recorded[ev.Event] = true
	}
	own := map[string]bool{}
	for _, ev := range br.events {
		own[ev] = true
	}
	queue := br.queue
	n := 0
	var rows []*driver.BatchEvent
	for _, event := range br.dueEvents() {
		if recorded[event] {
			continue
		}
		name := br.callback(event)
		rec := &driver.BatchEvent{BatchID: b.ID, Event: event, Callback: name, CreatedAt: now}
		_, known := e.cfg.KnownCallback(name)
		if name != "" && !own[event] && !known {
			// Another engine made this transition and the callback is not
			// a Go callback of this process: Queuety PHP ran it if it is a
			// PHP class, or another Go worker has it. After the handoff
			// the event is recorded as left to them.
			if b.FinishedAt.IsZero() || now.Before(b.FinishedAt.Add(e.cfg.Handoff)) {
				e.skips.add(b.ID, now)
				if len(br.events) == 0 && event != BatchEventCatch {
					break // a sweep settles then before finally, finally before cancel
				}
				continue
			}
			rows = append(rows, rec)
			continue
		}
		if name != "" {
			if queue == "" {
				if queue, err = batchQueue(ctx, tx, b.ID); err != nil {
					return 0, err
				}
			}
			job := e.batchCallbackJob(br, event, name, queue, now)
			if err := tx.JobInsert(ctx, []*driver.Job{job}); err != nil {
				return 0, err
			}
			rec.JobID, rec.Runtime = job.ID, "go"
			if job.Handler == HandlerPHPCallback {
				rec.Runtime = "php"
			}
			n++
		}
		rows = append(rows, rec)
	}
	return n, tx.BatchEventInsert(ctx, rows)
}

// batchQueue is the queue of a batch's jobs (the first in name order), for
// the callbacks of a cancel.
func batchQueue(ctx context.Context, tx driver.Tx, batchID int64) (string, error) {
	counts, err := tx.BatchJobCounts(ctx, batchID)
	if err != nil || len(counts) == 0 {
		return queuetytype.DefaultQueue, err
	}
	return counts[0].Queue, nil
}

// callbackRoute says where the job of callback name goes: to the queue of
// a worker of this process that registered it; else, with a PHP bridge
// queue, to Queuety PHP (php true); else to fallback, for whichever Go
// worker has it.
func (e *Service) callbackRoute(name, fallback string) (queue string, php bool) {
	if q, known := e.cfg.KnownCallback(name); known {
		return q, false
	}
	if e.cfg.PHPCallbacks != "" {
		return e.cfg.PHPCallbacks, true
	}
	return fallback, false
}

// batchCallbackJob builds the job that runs one batch callback, routed by
// callbackRoute: a job named after the callback for a Go worker, or a job
// for Queuety PHP's bridge class. Queuety calls a callback once and ignores
// its errors: a callback job that fails is buried, and only a worker's
// death gives it another of its callbackAttempts (see callbackFailed).
func (e *Service) batchCallbackJob(br *batchRow, event, name, fallback string, now time.Time) *driver.Job {
	b := br.row
	payload := phpjson.NewObject()
	handler := name
	queue, php := e.callbackRoute(name, fallback)
	if php {
		handler = HandlerPHPCallback
		payload.Set("batch_id", b.ID)
		payload.Set("type", callbackType(event))
		payload.Set("callback", name) // for operators: the bridge reads the batch's options
		payload.Set("batch", phpBatchRow(b))
		payload.Set(RuntimeKey, e.cfg.BridgeRuntime())
	} else {
		payload.Set("batch_id", b.ID)
		payload.Set("event", event)
		payload.Set("batch", Object(b))
		marker := phpjson.NewObject()
		marker.Set("kind", "batch")
		marker.Set("batch_id", b.ID)
		marker.Set("event", event)
		payload.Set(CallbackKey, marker)
	}
	return &driver.Job{
		Queue: queue, Handler: handler, Payload: encodeJSON(payload), Status: driver.JobPending, MaxAttempts: e.cfg.CallbackAttempts,
		AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now),
	}
}

// callbackType is the options key a PHP bridge job names: Queuety's
// fire_callback type (a cancel runs the finally callback).
func callbackType(event string) string {
	if event == BatchEventCancel {
		return BatchEventFinally
	}
	return event
}

// phpBatchRow is a batch row as PDO fetches it for Queuety PHP's
// Batch::from_row: the JSON columns as text, times as stored, so the PHP
// bridge hands the callback the batch as it was right after the
// transition, as BatchManager::fire_callback does.
func phpBatchRow(b *driver.Batch) *phpjson.Object {
	o := Object(b)
	o.Set("failed_job_ids", string(b.FailedJobIDs))
	o.Set("options", string(b.Options))
	return o
}

// Object is a batch row as a JSON object, as Go batch callbacks
// receive it: the columns by name, JSON columns decoded, times as stored
// ("2006-01-02 15:04:05", null when unset).
func Object(b *driver.Batch) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", b.ID)
	if b.Name == "" {
		o.Set("name", nil)
	} else {
		o.Set("name", b.Name)
	}
	o.Set("total_jobs", int64(b.TotalJobs))
	o.Set("pending_jobs", int64(b.PendingJobs))
	o.Set("failed_jobs", int64(b.FailedJobs))
	ids, err := phpjson.Decode(b.FailedJobIDs)
	if err != nil || ids == nil {
		ids = []any{}
	}
	o.Set("failed_job_ids", ids)
	opts, err := decodeObject("batch options", b.Options)
	if err != nil {
		opts = phpjson.NewObject()
	}
	o.Set("options", opts)
	for _, kv := range []struct {
		k string
		t time.Time
	}{{"cancelled_at", b.CancelledAt}, {"created_at", b.CreatedAt}, {"finished_at", b.FinishedAt}} {
		if kv.t.IsZero() {
			o.Set(kv.k, nil)
		} else {
			o.Set(kv.k, kv.t.UTC().Format(time.DateTime))
		}
	}
	return o
}
