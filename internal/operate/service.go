package operate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/store/driver"
)

// Clock tells the operator actions the time: every row they write is
// stamped with it.
type Clock interface {
	Now() time.Time
}

// Locked is the body LockWorkflow runs: a workflow locked for update in
// tx, its decoded state, its step definitions, and the time.
type Locked func(tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, now time.Time) error

// Config holds the engine transitions the operator actions run inside
// their transactions. The engine fills every field in New; each one is
// the engine's rule, written once there.
type Config struct {
	// Clock tells the time.
	Clock Clock
	// LockWorkflow locks workflow id in a new transaction, decodes its
	// state and step definitions, and runs fn.
	LockWorkflow func(ctx context.Context, id int64, fn Locked) error
	// EnqueueStep enqueues the job (or jobs) of step idx of wf.
	EnqueueStep func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, idx int, now time.Time) error
	// BuryJob buries a locked job with msg.
	BuryJob func(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, now time.Time) error
	// BuryOpenJobs buries the pending and processing jobs of workflow
	// wfID, but except, with msg.
	BuryOpenJobs func(ctx context.Context, tx driver.Tx, wfID, except int64, msg string, now time.Time) error
	// StartCompensation starts the compensations of a cancelled workflow
	// when it asks for them, and reports whether any were started.
	StartCompensation func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) (bool, error)
	// AfterTerminal runs what follows a workflow's end (its parent and
	// the workflows waiting for it).
	AfterTerminal func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, now time.Time) error
	// StepJobBuried handles a step job of a running workflow that was
	// buried: as a step whose attempts ran out.
	StepJobBuried func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, j *driver.Job, msg string, now time.Time) error
	// EnqueueCallback enqueues the workflow callback stored under key
	// (kind names it in the logs), if any.
	EnqueueCallback func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, key, kind string, now time.Time) error
	// RequeueJob puts a locked buried or failed plain job back in its
	// queue, due now, with a fresh attempt count, and logs it.
	RequeueJob func(ctx context.Context, tx driver.Tx, j *driver.Job, now time.Time) error
	// StartRun starts a new run of wf: its run clock and run deadline.
	StartRun func(wf *driver.Workflow, state *phpjson.Object, now time.Time)
	// ClearAttempt removes what belongs to a job's current attempt (its
	// attempt and heartbeat deadlines).
	ClearAttempt func(j *driver.Job)
}

// Service runs the operator actions on the workflows, jobs, queues and
// logs of one store. It is safe for concurrent use.
type Service struct {
	store driver.Store
	cfg   Config
}

// New returns the operator actions of store, running cfg's transitions.
func New(store driver.Store, cfg Config) *Service {
	return &Service{store: store, cfg: cfg}
}

// msgWorkflowCancelled is the error message of the jobs and the failure
// row a cancel writes, as Queuety writes it.
const msgWorkflowCancelled = "Workflow cancelled"

// IsJSONKind reports whether artifact content of this kind is stored as
// JSON text (any other kind is stored as text).
func IsJSONKind(kind string) bool { return strings.ToLower(kind) == "json" }

// wrap prefixes err with the operation it failed in; nil stays nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queuety: %s: %w", what, err)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
