// Package observe is the instrumentation seam of queuety: an Observer
// hears what clients dispatch, what workers claim and run and how each
// attempt ends, and what the maintenance sweeps change. Packages
// metrics/prom and metrics/otel implement it for Prometheus and
// OpenTelemetry; install one with queuety.WithObserver.
//
// Without an observer nothing here is called and the hot paths allocate
// nothing for it.
//
// The Start/End pairs follow one pattern, as database/sql tracers do: the
// Start call returns a context derived from the one it was given (with a
// span in it, say), the engine carries that context through the operation
// and hands it back to the End call. An observer that keeps nothing per
// operation returns the context it was given.
//
// The contexts nest like this for one job:
//
//	Claimed (claim round trip, one per batch)
//	└─ JobStart … JobEnd (one attempt: from its start until its outcome is recorded)
//	   └─ HandlerStart … HandlerEnd (the handler call; its context is the handler's)
//
// Every method must be safe for concurrent use and quick: they run on the
// workers' hot paths. They must not keep the structs' slices beyond the
// call.
package observe

import (
	"context"
	"time"
)

// Observer receives the engine's events. Embed Nop to implement only some
// of its methods.
type Observer interface {
	// DispatchStart is called before a client writes a dispatch. The
	// returned context is used for the write and passed to DispatchEnd.
	DispatchStart(ctx context.Context, d Dispatch) context.Context
	// DispatchEnd is called when the dispatch has committed or failed.
	DispatchEnd(ctx context.Context, d Dispatch, r Dispatched)

	// Claimed is called after each claim round trip of a worker, empty
	// and failed ones included, with a context derived from the worker's
	// (it outlives the claim: the jobs run under it). The returned context
	// is the parent of the claimed jobs' JobStart contexts.
	Claimed(ctx context.Context, c Claim) context.Context

	// JobStart is called when a worker starts a claimed job, before it
	// looks for the handler. ctx descends from Claimed's and carries the
	// attempt's cancellation; the returned context must descend from it.
	JobStart(ctx context.Context, j Job) context.Context
	// HandlerStart is called just before the handler runs, with a
	// context descended from JobStart's. The returned context is the
	// one the handler gets.
	HandlerStart(ctx context.Context, j Job) context.Context
	// HandlerEnd is called when the handler has returned (or panicked),
	// with HandlerStart's context.
	HandlerEnd(ctx context.Context, j Job, h Handled)
	// JobEnd is called once per JobStart, with its context, when the
	// attempt's outcome has been recorded, or the job was handed back, or
	// recording it was given up.
	JobEnd(ctx context.Context, j Job, e Ended)

	// Swept is called after each maintenance sweep (stale recovery,
	// activity timeouts, wait timers, workflow deadlines, the schedule
	// tick), whether or not it changed anything.
	Swept(ctx context.Context, s Sweep)
}

// AbandonObserver is implemented by observers that also hear about the
// handlers a worker abandons: a handler that ignores its cancelled
// context (its timeout passed, or its job was taken away) past the
// worker's abandon grace stops holding its slot, and its attempt is
// recorded as a timeout would be (see worker.AbandonGrace). It is
// separate from Observer so that observers written without it still
// satisfy Observer; Nop implements it, and Multi passes its calls on to
// those of its observers that implement it.
type AbandonObserver interface {
	// HandlerAbandoned is called when a worker abandons a handler (with
	// ctx the attempt's JobStart context, before the attempt's outcome
	// is recorded), and again, with a.Returned set, when an abandoned
	// handler finally returns. Each abandonment is followed by at most
	// one return, so a gauge of the abandoned handlers still running
	// goes up on the first call and down on the second.
	HandlerAbandoned(ctx context.Context, j Job, a Abandon)
}

// Abandon is a change in a worker's abandoned handlers.
type Abandon struct {
	// Returned is false when the worker abandoned the handler, true when
	// an abandoned handler returned.
	Returned bool
	// Running is how long the handler had run by then (wall clock).
	Running time.Duration
	// Cause is why the handler's context was cancelled: a
	// queuety.TimeoutError, queuety.ErrDeadlineExceeded or
	// queuety.ErrLeaseLost.
	Cause error
	// Abandoned is how many of the worker's abandoned handlers are still
	// running after the change, and MaxAbandoned how many the worker
	// tolerates: with more it is unhealthy (see Unhealthy).
	Abandoned, MaxAbandoned int
}

// Unhealthy reports whether the worker is unhealthy after the change: it
// has more abandoned handlers running than it tolerates, and should be
// restarted.
func (a Abandon) Unhealthy() bool { return a.Abandoned > a.MaxAbandoned }

// WasUnhealthy reports whether the worker was unhealthy before the
// change, so that an observer can count the workers that are unhealthy.
func (a Abandon) WasUnhealthy() bool {
	before := a.Abandoned - 1
	if a.Returned {
		before = a.Abandoned + 1
	}
	return before > a.MaxAbandoned
}

// DispatchKind says which client call dispatched.
type DispatchKind string

// The dispatch kinds.
const (
	DispatchJob      DispatchKind = "job"      // Client.Dispatch
	DispatchBatch    DispatchKind = "batch"    // Client.DispatchMany
	DispatchWorkflow DispatchKind = "workflow" // Client.DispatchWorkflow (and the builder's Dispatch)
)

// Dispatch describes a dispatch before it is written.
type Dispatch struct {
	Kind DispatchKind
	// Name is the job's handler (DispatchJob) or the workflow's name
	// (DispatchWorkflow); "" for a batch.
	Name string
	// Queue is the job's or the workflow's queue; "" for a batch.
	Queue string
	// Count is the number of jobs asked for: 1, a batch's length, or 0
	// for a workflow.
	Count int
}

// Dispatched is the outcome of a dispatch.
type Dispatched struct {
	// Jobs are the jobs written, in order; empty for a workflow, and when
	// nothing was written.
	Jobs []JobRef
	// ID is the job's id (DispatchJob) or the workflow's (DispatchWorkflow).
	ID int64
	// Existing is true when an identical job (queuety.Unique) or the
	// workflow of the same idempotency key was found: ID is that one's
	// and nothing was written.
	Existing bool
	// Err is the dispatch's error; nil when it committed.
	Err error
}

// JobRef names one dispatched job.
type JobRef struct {
	ID      int64
	Queue   string
	Handler string
}

// Claim is one claim round trip of a worker.
type Claim struct {
	// Queues are the queues the worker claims from, in priority order
	// (shared with the worker: do not modify).
	Queues []string
	// Limit is the most jobs the claim could take (the free slots).
	Limit int
	// Jobs are the jobs claimed, ready to start; empty when none was due.
	Jobs []Job
	// Started is when the claim began (wall clock) and Duration how long
	// its transaction took.
	Started  time.Time
	Duration time.Duration
	// Err is the claim's error; the worker retries with backoff.
	Err error
}

// Job is one claimed attempt.
type Job struct {
	ID         int64
	Queue      string
	Handler    string
	WorkflowID int64 // 0 for a plain job
	StepIndex  int   // -1 for a plain job
	Attempt    int   // 1 for the first attempt
	// Wait is the dispatch-to-start latency: from when the job became due
	// (available_at, or created_at when later) to its claim, on the
	// client's clock. Both stored times have whole-second precision, so a
	// job dispatched and claimed at once shows up to a second.
	Wait time.Duration
}

// Handled is how a handler call went.
type Handled struct {
	Duration time.Duration // wall-clock time of the call
	Err      error         // the handler's error (a panic becomes a queuetytype.PanicError)
}

// Outcome is what became of an attempt.
type Outcome string

// The outcomes of an attempt.
const (
	// OutcomeCompleted: the job (or workflow step) completed.
	OutcomeCompleted Outcome = "completed"
	// OutcomeRetried: the attempt failed and the job is due again later.
	OutcomeRetried Outcome = "retried"
	// OutcomeBuried: the attempt failed for good and the job is buried
	// (attempts used up, a non-retryable error, a timeout that is final,
	// or a step result that arrived after its workflow's deadline).
	OutcomeBuried Outcome = "buried"
	// OutcomeStale: the result was discarded because the attempt no
	// longer owned its job (recovered as stale, or taken away).
	OutcomeStale Outcome = "stale"
	// OutcomeHandedBack: the job went back to its queue without using the
	// attempt (worker shutdown, or a reducer or repeat condition this
	// worker lacks).
	OutcomeHandedBack Outcome = "handed_back"
	// OutcomeUnrecorded: recording the outcome kept failing and the
	// worker gave up; stale recovery will return the job.
	OutcomeUnrecorded Outcome = "unrecorded"
)

// Failed reports whether the attempt was recorded as a failure (retried
// or buried).
func (o Outcome) Failed() bool { return o == OutcomeRetried || o == OutcomeBuried }

// Ended is how an attempt ended.
type Ended struct {
	Outcome Outcome
	// Err is the attempt's error as recorded (nil when it completed); for
	// a step it can be an error the engine found in the handler's output.
	Err error
	// Category classifies Err for metric labels: one of the Category
	// constants; "" when Err is nil.
	Category Category
	// Recorded is how long recording the outcome took, from the
	// handler's return (wall clock); 0 when nothing was recorded.
	Recorded time.Duration
}

// Category classifies an attempt's error.
type Category string

// The error categories.
const (
	CategoryError        Category = "error"             // a handler's error
	CategoryNonRetryable Category = "non_retryable"     // queuety.NonRetryable
	CategoryPanic        Category = "panic"             // the handler panicked
	CategoryTimeout      Category = "timeout"           // an activity timeout (queuetytype.TimeoutError)
	CategoryDeadline     Category = "deadline_exceeded" // the workflow's deadline passed
	CategoryNotFound     Category = "handler_not_found" // no handler registered by that name
	CategoryLeaseLost    Category = "lease_lost"        // the attempt lost its job while running
	CategoryShutdown     Category = "shutdown"          // interrupted by the worker's shutdown
)

// Sweep is one maintenance sweep.
type Sweep struct {
	// Name is the sweep's: "stale-recovery", "activity-timeouts",
	// "wait-timers", "workflow-waits", "workflow-deadlines",
	// "batch-callbacks", "workflow-overruns" or "schedule-tick".
	Name     string
	Duration time.Duration
	// Rows is how many jobs, workflows or schedules it changed (or fired).
	Rows int
	// Missed (schedule-tick only) is how many due schedule slots got no
	// firing of their own: merged into one firing (catch-up policy once)
	// or skipped (none) because the tick came after more than one slot of
	// their schedule, as after an outage.
	Missed int
	Err    error
}

// Nop is an Observer that does nothing. Embed it to implement only the
// methods you need.
type Nop struct{}

var (
	_ Observer        = Nop{}
	_ AbandonObserver = Nop{}
)

// DispatchStart returns ctx.
func (Nop) DispatchStart(ctx context.Context, _ Dispatch) context.Context { return ctx }

// DispatchEnd does nothing.
func (Nop) DispatchEnd(context.Context, Dispatch, Dispatched) {}

// Claimed returns ctx.
func (Nop) Claimed(ctx context.Context, _ Claim) context.Context { return ctx }

// JobStart returns ctx.
func (Nop) JobStart(ctx context.Context, _ Job) context.Context { return ctx }

// HandlerStart returns ctx.
func (Nop) HandlerStart(ctx context.Context, _ Job) context.Context { return ctx }

// HandlerEnd does nothing.
func (Nop) HandlerEnd(context.Context, Job, Handled) {}

// JobEnd does nothing.
func (Nop) JobEnd(context.Context, Job, Ended) {}

// Swept does nothing.
func (Nop) Swept(context.Context, Sweep) {}

// HandlerAbandoned does nothing.
func (Nop) HandlerAbandoned(context.Context, Job, Abandon) {}
