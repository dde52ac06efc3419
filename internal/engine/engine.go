package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/advance"
	"github.com/queuety/queuety-go/internal/artifact"
	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/internal/locks"
	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// Engine holds the engine's state transitions: claiming, completing,
// failing, retrying, timing out and recovering jobs and workflow steps.
// Workers and sweepers drive it; applications rarely call it directly.
//
// Every transition runs in one store transaction and is fenced: a result
// from an attempt that no longer owns its job changes nothing and returns
// ErrStaleAttempt.
type Engine struct {
	store   driver.Store
	clock   Clock
	log     *slog.Logger
	cfg     Config
	workers workerSet
	// held combines the held claims of this engine's workers into shared
	// held transactions (heldcombine.go); heldScan and heldWrite take
	// turns among those: one locking scan, and one settling write and
	// commit, at a time.
	held                heldCombiner
	heldScan, heldWrite sync.Mutex
	// claims, completions and branches combine the claims, plain-job
	// completions and for-each branch completions that workers make at
	// the same time (combine.go).
	claims      claimCombiner
	completions completionCombiner
	branches    branchCombiner
	wakes       *wakeHub          // new jobs: see wake.go
	remote      *remoteWake       // nil unless the store carries notifications between processes
	deps        *depGate          // which completed jobs may have dependents: see dependents.go
	schedWakes  *wakeHub          // saved schedules
	obs         observe.Observer  // nil: no instrumentation
	batches     *batch.Service    // batches and chains (batches.go)
	schedules   *schedule.Service // saved schedules and their tick (schedules.go)
	operations  *operate.Service  // operator actions (operations.go)
	artifacts   *artifact.Service // workflow artifacts (artifacttrace.go)
	dispatcher  *dispatch.Service // dispatching jobs and workflows (dispatch.go)
	locks       *locks.Service    // the middleware's locks and counters (locks.go)
	flow        *advance.Service  // workflow advancement (advancing.go)
	// overrun is where the overrun sweep (internal/sweep) stopped.
	overrun SweepCursor
	// completedHook is dependentsCompleted bound once, so that a job
	// note allocates no method value (newNote).
	completedHook jobnote.CompletedFunc
}

// Config holds the engine's settings. Zero fields take the defaults named
// on each field.
type Config struct {
	// Clock tells the engine the time (default: the system clock in UTC).
	Clock Clock
	// Logger receives the engine's warnings (default slog.Default()).
	Logger *slog.Logger
	// DefaultBackoff applies to jobs that carry no backoff of their own
	// (default BackoffExponential, as in Queuety).
	DefaultBackoff Backoff
	// StaleTimeout is the age at which an unrenewed claim counts as stale
	// (default DefaultStaleTimeout).
	StaleTimeout time.Duration
	// LeaseTimeout is the age at which a Go worker's unrenewed claim
	// counts as stale (default DefaultLeaseTimeout). It never exceeds
	// StaleTimeout.
	LeaseTimeout time.Duration
	// DeadlineHandoff is how long past a running workflow's deadline a
	// process whose workers lack its deadline handler leaves the expiry
	// to a worker that has it, such as Queuety PHP's sweep (default
	// DefaultDeadlineHandoff; negative: never, expire at once).
	DeadlineHandoff time.Duration
	// WakeKey names the store (its DSN): engines of one process with the
	// same key wake each other's idle workers when they commit new jobs.
	// Empty: only this engine's workers.
	WakeKey string
	// Observer hears dispatches, and the workers and sweeps of this
	// engine report to it (default nil: none).
	Observer observe.Observer
	// MaxForEachItems caps the items one for-each step of a workflow that
	// sets no max_for_each_items budget may expand into (default
	// DefaultMaxForEachItems; negative: no cap). A workflow's own budget
	// replaces it, above or below.
	MaxForEachItems int
	// PHPBatchCallbacks is the queue on which batch callbacks and chain
	// catch handlers that no worker of this process registered are handed
	// to Queuety PHP (package batch); "" sends them to Go workers.
	PHPBatchCallbacks string
	// PHPWorkflowCallbacks is the queue on which compensations and cancel
	// callbacks that no worker of this process registered are handed to
	// Queuety PHP (see phpbridge.go); "" sends them to Go workers.
	PHPWorkflowCallbacks string
}

// New returns an engine that runs its transitions on store.
func New(store driver.Store, cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DefaultBackoff == nil {
		cfg.DefaultBackoff = BackoffExponential
	}
	if cfg.StaleTimeout <= 0 {
		cfg.StaleTimeout = DefaultStaleTimeout
	}
	if cfg.LeaseTimeout <= 0 {
		cfg.LeaseTimeout = DefaultLeaseTimeout
	}
	cfg.LeaseTimeout = min(cfg.LeaseTimeout, cfg.StaleTimeout)
	if cfg.DeadlineHandoff == 0 {
		cfg.DeadlineHandoff = DefaultDeadlineHandoff
	}
	if cfg.MaxForEachItems == 0 {
		cfg.MaxForEachItems = DefaultMaxForEachItems
	}
	e := &Engine{wakes: hubFor(cfg.WakeKey, wakeJobs), schedWakes: hubFor(cfg.WakeKey, wakeSchedules), deps: gateFor(cfg.WakeKey), store: store, clock: cfg.Clock, log: cfg.Logger, cfg: cfg, obs: cfg.Observer}
	e.completedHook = e.dependentsCompleted
	if n, ok := store.(driver.JobNotifier); ok {
		e.remote = &remoteWake{n: n, log: cfg.Logger}
		if ws, ok := store.(driver.WakeSharer); ok && cfg.WakeKey != "" {
			ws.ShareWake(cfg.WakeKey) // its engines share a hub: their notifications are no news to one another
		}
	}
	e.flow = e.newAdvance()
	e.schedules = e.newSchedules()
	e.operations = e.newOperations()
	e.batches = e.newBatches()
	e.dispatcher = e.newDispatcher()
	e.locks = locks.New(store, cfg.Clock)
	e.artifacts = e.newArtifacts()
	return e
}

// Observer returns the engine's observer, nil when there is none.
func (e *Engine) Observer() observe.Observer { return e.obs }

// Store returns the store the engine runs on.
func (e *Engine) Store() driver.Store { return e.store }

// Clock returns the engine's clock.
func (e *Engine) Clock() Clock { return e.clock }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// StaleTimeout is the age at which an unrenewed claim counts as stale.
func (e *Engine) StaleTimeout() time.Duration { return e.cfg.StaleTimeout }

// LeaseTimeout is the age at which a Go worker's unrenewed claim counts as
// stale.
func (e *Engine) LeaseTimeout() time.Duration { return e.cfg.LeaseTimeout }

// jobsByID reads the jobs with the given ids with one statement, and
// returns them by id.
func jobsByID(ctx context.Context, tx driver.Tx, ids []int64, lock driver.LockMode) (map[int64]*driver.Job, error) {
	rows, err := tx.JobGetMany(ctx, ids, lock)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*driver.Job, len(rows))
	for _, row := range rows {
		byID[row.ID] = row
	}
	return byID, nil
}

// workflowsByID reads the workflows with the given ids (repeats allowed)
// with one statement, and returns them by id.
func workflowsByID(ctx context.Context, tx driver.Tx, ids []int64, lock driver.LockMode) (map[int64]*driver.Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	wfs, err := tx.WorkflowGetMany(ctx, uniqueIDs(ids), lock)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*driver.Workflow, len(wfs))
	for _, wf := range wfs {
		byID[wf.ID] = wf
	}
	return byID, nil
}

// describeError splits an error into the message, class and trace stored
// in a log row.
func describeError(err error) (msg, class, trace string) {
	if err == nil {
		return "", "", ""
	}
	msg = err.Error()
	var pe *PanicError
	if errors.As(err, &pe) {
		return msg, "panic", pe.Stack
	}
	class = errorClass(err)
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "%s: %s\n", reflect.TypeOf(e), e.Error())
	}
	return msg, class, strings.TrimSuffix(b.String(), "\n")
}

// errorClass names an error's type the way Queuety names exception
// classes: the first type in the chain that is not a plain wrapper.
func errorClass(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if c, ok := e.(interface{ ErrorClass() string }); ok {
			return c.ErrorClass()
		}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*nonRetryableError); ok {
			continue
		}
		t := strings.TrimPrefix(reflect.TypeOf(e).String(), "*")
		if strings.HasPrefix(t, "fmt.") || strings.HasPrefix(t, "errors.") {
			continue
		}
		return t
	}
	return "error"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func uniqueIDs(ids []int64) []int64 {
	seen := map[int64]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// HasDue reports whether any job is due for a worker with these queues and
// handlers, without locking anything. Once-mode workers use it to tell "the
// queue is empty" from "other workers hold the due rows right now".
func (e *Engine) HasDue(ctx context.Context, queues, handlers []string) (bool, error) {
	var due bool
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		due = false
		now := e.clock.Now()
		for _, q := range queues {
			ok, err := tx.JobHasDue(ctx, driver.ClaimParams{Queue: q, Handlers: handlers, Now: now})
			if err != nil {
				return err
			}
			if ok {
				due = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("queuety: check due jobs: %w", err)
	}
	return due, nil
}

// wrap prefixes err with the operation it failed in; nil stays nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queuety: %s: %w", what, err)
}
