package advance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Clock tells the advancement rules the time: every row they write is
// stamped with it.
type Clock interface {
	Now() time.Time
}

// LockedFunc is the body Core.LockWorkflow runs: a workflow locked for
// update in tx, its decoded state, its step definitions, and the time.
type LockedFunc func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error

// Core is what the advancement rules need from the engine's job core:
// the job-level transitions and rules they run inside their
// transactions. The engine implements it, written once there.
type Core interface {
	// NonRetryable marks err final: the job or step fails at once,
	// without its remaining attempts.
	NonRetryable(err error) error
	// LockWorkflow locks workflow id in a new transaction, decodes its
	// state and step definitions, and runs fn.
	LockWorkflow(ctx context.Context, id int64, fn LockedFunc) error
	// BuryJob buries a locked job with msg.
	BuryJob(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, now time.Time) error
	// Knows reports whether a worker of this process runs the callback
	// handler, and whether the process has workers at all.
	Knows(handler string) (known, anyWorker bool)
	// Expired returns the timeout kind that has passed for a
	// non-terminal workflow at now, or "".
	Expired(wf *driver.Workflow, now time.Time) driver.TimeoutKind
	// StartRun starts a new run of wf: its run clock and run deadline.
	StartRun(wf *driver.Workflow, state *phpjson.Object, now time.Time)
	// ScheduleDeadlines sets the deadlines of a new job that start when
	// it is scheduled.
	ScheduleDeadlines(j *driver.Job, t queuetytype.ActivityTimeouts, now time.Time)
	// HandlerDefinition is the stored form of a callback handler.
	HandlerDefinition(class string) *phpjson.Object
	// Child returns how to prepare the workflows a step starts (see
	// ChildSpec). Its error is the definition's fault.
	Child(spec ChildSpec) (PrepareChild, error)
}

// ChildSpec describes the workflows a run_workflow or start_workflows
// step starts. Runtime is a start_workflows step's runtime definition
// (Queuety's build_runtime_definition shape); without it, the child is a
// run_workflow child made of the other fields.
type ChildSpec struct {
	// Runtime is the runtime definition of start_workflows children.
	Runtime *phpjson.Object
	// Name, Steps, Queue, Priority and MaxAttempts describe a
	// run_workflow child.
	Name        string
	Steps       []any
	Queue       string
	Priority    queuetytype.Priority
	MaxAttempts int
	// ParentWorkflowID and ParentStepIndex link a run_workflow child to
	// the step that waits for it.
	ParentWorkflowID int64
	ParentStepIndex  int
	// StartedByWorkflowID and StartedByStepIndex record the step that
	// started start_workflows children.
	StartedByWorkflowID int64
	StartedByStepIndex  int
}

// PrepareChild prepares one child workflow from its initial state; its
// error is the state's or the definition's fault.
type PrepareChild func(initial *phpjson.Object) (InsertChild, error)

// InsertChild writes a prepared child workflow (its row and first
// step's jobs) in tx and returns its id.
type InsertChild func(ctx context.Context, tx driver.Tx, now time.Time) (int64, error)

// Attempt is the step attempt a transition records, as the engine's
// claim and result know it.
type Attempt interface {
	// Job is the job as claimed.
	Job() *driver.Job
	// Owns reports whether the attempt still owns row, the job locked.
	Owns(row *driver.Job) bool
	// ClaimedAt, StartedAt and Duration time the attempt.
	ClaimedAt() time.Time
	StartedAt() time.Time
	Duration() time.Duration
	// Funcs finds the reducers and repeat conditions; nil for none.
	Funcs() Functions
	// StartedLog is the attempt's 'started' log row.
	StartedLog() *driver.LogEntry
	// Artifacts lists the artifacts the attempt stored, for its events.
	Artifacts() []byte
	// TraceCompleted, TraceItemCompleted and TraceFailed add the
	// attempt's runtime trace to its events.
	TraceCompleted(ev *driver.WorkflowEvent)
	TraceItemCompleted(ev *driver.WorkflowEvent, itemCtx *phpjson.Object)
	TraceFailed(ev *driver.WorkflowEvent)
	// SetOutcome records what the transition did to the job.
	SetOutcome(o observe.Outcome)
	// Payload is the tree the claim decoded Job().Payload to, read only,
	// or nil when there is none.
	Payload() *phpjson.Object
}

// Config holds the engine's settings and core that the advancement
// rules run with. The engine fills every field in New.
type Config struct {
	// Clock tells the time.
	Clock Clock
	// Logger receives the warnings.
	Logger *slog.Logger
	// Core is the engine's job core.
	Core Core
	// MaxForEachItems caps the items of a for-each step whose workflow
	// sets no budget (negative: no cap).
	MaxForEachItems int
	// DeadlineHandoff is how long past a deadline a process leaves a
	// workflow whose deadline handler it cannot run (see handoff.go).
	DeadlineHandoff time.Duration
	// PHPWorkflowCallbacks is the queue of Queuety PHP's bridge class
	// for compensations and cancel callbacks; "" for none.
	PHPWorkflowCallbacks string
	// CallbackAttempts is the attempts of a callback job.
	CallbackAttempts int
	// CallbackRuntime is the __queuety_runtime object of a callback job
	// for Queuety PHP's bridge class.
	CallbackRuntime func() *phpjson.Object
}

// Service runs workflow advancement on one store. It is safe for
// concurrent use.
type Service struct {
	store driver.Store
	cfg   Config
	core  Core
	clock Clock
	log   *slog.Logger
	// skips remembers the workflows the foreign sweeps move past.
	skips callbackKnowers
	// states keeps the decoded states of large workflows (statecache.go).
	states stateCache
}

// New returns the advancement rules of store, on cfg's core.
func New(store driver.Store, cfg Config) *Service {
	return &Service{store: store, cfg: cfg, core: cfg.Core, clock: cfg.Clock, log: cfg.Logger}
}

// callbackKnowers remembers workflows expired or ended elsewhere whose
// handlers this process does not run, so the sweeps move past them;
// entries older than the lookback are dropped.
type callbackKnowers struct {
	mu      sync.Mutex
	foreign map[int64]time.Time
	// ends holds the workflows the foreign end sweep moves past, until
	// when (foreignends.go).
	ends map[int64]time.Time
}

// completeJobs completes the step jobs ids in tx at now. The store's
// completion tells the job note of ctx, whose hook (the engine's) notes
// the jobs that wait on them (depends_on) as claimable.
func (s *Service) completeJobs(ctx context.Context, tx driver.Tx, ids []int64, now time.Time) error {
	return tx.JobComplete(ctx, ids, now)
}

// final marks err final (Core.NonRetryable).
func (s *Service) final(err error) error { return s.core.NonRetryable(err) }

// isFinal reports whether err, or any error it wraps, has a
// NonRetryable() bool method that returns true.
func isFinal(err error) bool {
	var nr interface{ NonRetryable() bool }
	return errors.As(err, &nr) && nr.NonRetryable()
}

// stepDef is a decoded _steps entry.
type stepDef = workflowdef.Step

// parseSteps decodes the _steps value of a state.
func parseSteps(state *phpjson.Object) ([]*stepDef, error) { return workflowdef.Parse(state) }

// handlerRef reads a handler reference stored under one of keys.
func handlerRef(o *phpjson.Object, keys ...string) string { return workflowdef.HandlerRef(o, keys...) }

// strField returns the trimmed string at k, or "".
func strField(o *phpjson.Object, k string) string { return workflowdef.String(o, k) }

// intValue returns the number at k as an integer, or 0.
func intValue(o *phpjson.Object, k string) int64 { return workflowdef.Int(o, k) }

func mustObject(o *phpjson.Object, k string) (*phpjson.Object, bool) {
	v, _ := o.Get(k)
	x, ok := v.(*phpjson.Object)
	return x, ok
}

func ptr[T any](v T) *T { return &v }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Reserved payload keys and placeholder handlers (see internal/workflowdef
// and internal/workflowstate).
const (
	callbackKey             = batch.CallbackKey
	runtimeKey              = jobruntime.Key
	forEachKey              = workflowstate.ForEachKey
	stepIndexKey            = "step_index"
	handlerForEach          = workflowdef.HandlerForEach
	handlerWaitForSignal    = workflowdef.HandlerWaitForSignal
	handlerWaitForWorkflows = workflowdef.HandlerWaitForWorkflows
)
