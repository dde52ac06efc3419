package builder

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Builder collects a workflow definition. Create one with Workflow, add
// steps and settings with its methods (each returns the Builder, for
// chaining), then call Dispatch, or Definition to get the definition
// itself. The zero value is not usable.
type Builder struct {
	def queuety.WorkflowDefinition
	err error // the first mistake seen in a method's arguments
}

// Workflow starts a definition for a workflow called name (stored in the
// workflows.name column, at most 255 bytes). The defaults are Queuety's:
// queue "default", queuety.PriorityLow, 3 attempts per step, no deadline.
func Workflow(name string) *Builder {
	return &Builder{def: queuety.WorkflowDefinition{Name: name}}
}

// Then adds a step that runs one handler, the name a worker registered
// with HandleStep (Queuety's then(Class, name)). The handler receives the
// workflow's public state and returns the keys to merge into it.
//
// Every step option applies except ResultKey and Timeout, which belong to
// WaitForSignal. Without Name the step is named after its index ("0",
// "1", ...).
func (b *Builder) Then(handler string, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: handler}
	return b.add(step, "Then", handler, opts, jobStep)
}

// Parallel adds a step that runs every handler at once, each as its own
// job, and advances when all of them have completed (Queuety's parallel()).
// The branches' outputs are merged into the state as each one finishes; if
// one branch fails for good, the workflow fails. Use ParallelWith to give
// the step options.
func (b *Builder) Parallel(handlers ...string) *Builder {
	return b.ParallelWith(handlers)
}

// ParallelWith is Parallel with step options, which apply to every branch
// (ResultKey and Timeout do not apply). The builder keeps its own copy of
// handlers.
func (b *Builder) ParallelWith(handlers []string, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepParallel, Handlers: slices.Clone(handlers)}
	return b.add(step, "Parallel", handlers, opts, jobStep)
}

// Sleep adds a durable timer: the workflow waits d before its next step
// without holding a worker, and the wait survives restarts because it is a
// row (Queuety's delay(), stored as delay_seconds). d is rounded up to whole
// seconds; zero continues at once. A negative d is an error. The step is
// named "delay_<n>", n counting the earlier Sleep steps from 0.
func (b *Builder) Sleep(d time.Duration) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepDelay, Delay: ceilSecond(d)}
	if d < 0 {
		b.fail(fmt.Errorf("%w: step %d (Sleep): duration must not be negative, got %s",
			queuetytype.ErrInvalidArgument, len(b.def.Steps), d))
	}
	b.def.Steps = append(b.def.Steps, step)
	return b
}

// WaitForSignal adds a step that parks the workflow (status
// waiting_for_signal, no worker busy) until the named signal is sent with
// Client.Signal (Queuety's wait_for_signal()). A signal sent before the
// workflow reaches the step counts too. The signal's payload keys are
// merged into the state, or stored under one key with ResultKey.
//
// With Timeout the wait gives up after that long: the workflow then
// continues with queuety.TimedOutKey(name) set to true (false when the
// signal won), where name is the ResultKey or else the signal name.
//
// Only the Name, ResultKey and Timeout options apply. Without Name the
// step is named "wait_for_<signal>".
func (b *Builder) WaitForSignal(signal string, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signal: signal}
	return b.add(step, "WaitForSignal", signal, opts, waitStep)
}

// WaitForSignals adds a step that parks the workflow until all of the
// named signals have arrived, or with Any() the first of them (Queuety's
// wait_for_signals()). Their payloads are merged into the state, or stored
// under ResultKey keyed by signal name. Options: Name, ResultKey, Any and
// Timeout (see WaitForSignal). Without Name the step is named
// "wait_for_<signal>" for one signal, else "wait_for_signals_<index>".
func (b *Builder) WaitForSignals(signals []string, opts ...StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: slices.Clone(signals)}
	return b.add(step, "WaitForSignals", signals, opts, waitStep)
}

// WaitForApproval adds a step that waits for a person's approval: the
// "approval" signal (Client.Approve sends it), stored under the result key
// "approval" (Queuety's wait_for_approval()). Options: Name, ResultKey,
// Timeout, and SignalNames to listen for another signal. Without Name the
// step is named "wait_for_approval".
func (b *Builder) WaitForApproval(opts ...StepOption) *Builder {
	return b.humanWait("WaitForApproval", "approval", []string{"approval"}, "approval", opts)
}

// WaitForDecision adds a step that waits for a person to approve or
// reject: whichever of the "approved" and "rejected" signals comes first
// (Client.Approve and Client.Reject send them) settles it, and the state
// gets {"outcome": "approved"|"rejected", "signal", "data"} under the
// result key "decision" (Queuety's wait_for_decision()). Options: Name,
// ResultKey, Timeout, and SignalNames(approve, reject). Without Name the
// step is named "wait_for_decision".
func (b *Builder) WaitForDecision(opts ...StepOption) *Builder {
	return b.humanWait("WaitForDecision", "decision", []string{"approved", "rejected"}, "decision", opts)
}

// WaitForInput adds a step that waits for a person's input: the "input"
// signal (Client.SubmitInput sends it), stored under the result key
// "input" (Queuety's wait_for_input()). Options: Name, ResultKey, Timeout
// and SignalNames. Without Name the step is named "wait_for_input".
func (b *Builder) WaitForInput(opts ...StepOption) *Builder {
	return b.humanWait("WaitForInput", "input", []string{"input"}, "input", opts)
}

func (b *Builder) humanWait(method, kind string, signals []string, resultKey string, opts []StepOption) *Builder {
	step := queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: signals, HumanWait: kind, ResultKey: resultKey}
	if kind == "decision" {
		step.Mode = queuetytype.WaitAny
	}
	return b.add(step, method, kind, opts, humanStep)
}

// MustCompleteWithin sets the workflow's deadline to days, hours, minutes
// and seconds from dispatch, summed as Queuety's must_complete_within()
// does (so MustCompleteWithin(0, 1, 30, 0) is 90 minutes). When the deadline
// passes before the last step completes, the workflow fails with "Deadline
// exceeded" and the OnDeadline callback runs once. The deadline is stored
// in whole seconds (_deadline_seconds and deadline_at) and is never
// extended, not even by RetryWorkflow.
//
// Each part must be zero or positive and the total at least one second.
// It sets the same deadline as ExecutionTimeout; the last call wins.
func (b *Builder) MustCompleteWithin(days, hours, minutes, seconds int) *Builder {
	parts := []struct {
		name string
		n    int
		unit int64 // seconds
	}{{"days", days, 86400}, {"hours", hours, 3600}, {"minutes", minutes, 60}, {"seconds", seconds, 1}}
	const maxSeconds = int64(math.MaxInt64 / int64(time.Second))
	var total int64
	for _, p := range parts {
		if p.n < 0 {
			b.fail(fmt.Errorf("%w: must complete within: %s must not be negative, got %d",
				queuetytype.ErrInvalidTimeout, p.name, p.n))
			return b
		}
		if int64(p.n) > (maxSeconds-total)/p.unit {
			b.fail(fmt.Errorf("%w: must complete within: deadline is too far away (%d days, %d hours, %d minutes, %d seconds)",
				queuetytype.ErrInvalidTimeout, days, hours, minutes, seconds))
			return b
		}
		total += int64(p.n) * p.unit
	}
	d := time.Duration(total) * time.Second
	if total < 1 {
		b.fail(fmt.Errorf("%w: must complete within: deadline must be at least 1 second, got %s",
			queuetytype.ErrInvalidTimeout, d))
	}
	b.def.ExecutionTimeout = d
	return b
}

// ExecutionTimeout sets the workflow's deadline as a duration from
// dispatch: the same deadline as MustCompleteWithin (the last call wins).
// It is stored in whole seconds, rounded up. d must be positive; the engine
// rejects anything under one second at dispatch.
func (b *Builder) ExecutionTimeout(d time.Duration) *Builder {
	if d <= 0 {
		b.fail(fmt.Errorf("%w: execution timeout must be at least 1 second, got %s", queuetytype.ErrInvalidTimeout, d))
	}
	b.def.ExecutionTimeout = d
	return b
}

// RunTimeout bounds each run of the workflow: the dispatch, and every
// RetryWorkflow or continue-as-new after it, gets run start + d as its run
// deadline, capped at the execution deadline. A run that passes it fails
// with "Run deadline exceeded" and the OnDeadline callback runs. Stored in
// whole seconds, rounded up. d must be positive; the engine rejects
// anything under one second at dispatch. This is a Go engine feature;
// Queuety PHP workers ignore it.
func (b *Builder) RunTimeout(d time.Duration) *Builder {
	if d <= 0 {
		b.fail(fmt.Errorf("%w: run timeout must be at least 1 second, got %s", queuetytype.ErrInvalidTimeout, d))
	}
	b.def.RunTimeout = d
	return b
}

// OnDeadline names the callback that runs once when the workflow passes
// its deadline (Queuety's on_deadline(), stored as _on_deadline), or again
// if the worker running it dies (see queuety.CallbackFunc). Register it on
// a worker with HandleDeadline; it receives the workflow's public state.
// An empty name is an error.
func (b *Builder) OnDeadline(handler string) *Builder {
	if handler == "" {
		b.fail(fmt.Errorf("%w: on deadline: handler name is empty", queuetytype.ErrInvalidArgument))
	}
	b.def.OnDeadline = handler
	return b
}

// CompensateWith names the handler that undoes the step added last
// (Queuety's compensate_with(); register it with HandleCompensation). When
// the workflow is cancelled, or fails with CompensateOnFailure, the
// completed steps' compensations run newest first, each with the public
// state as it was right after its step, durably and once each. It is an
// error before the first step or for an invalid name.
func (b *Builder) CompensateWith(handler string) *Builder {
	if len(b.def.Steps) == 0 {
		b.fail(fmt.Errorf("%w: compensate with %q: no step to compensate yet", queuetytype.ErrInvalidArgument, handler))
		return b
	}
	if handler == "" {
		b.fail(fmt.Errorf("%w: compensate with: handler name is empty", queuetytype.ErrInvalidArgument))
		return b
	}
	b.def.Steps[len(b.def.Steps)-1].Compensation = handler
	return b
}

// CompensateOnFailure runs the compensations (CompensateWith) when the
// workflow fails or passes its deadline, not only when it is cancelled
// (Queuety's compensate_on_failure()). A compensated workflow cannot be
// retried.
func (b *Builder) CompensateOnFailure() *Builder {
	b.def.CompensateOnFailure = true
	return b
}

// OnCancel names the callback that runs once when the workflow is
// cancelled (Queuety's on_cancel(), stored as _on_cancel), or again if
// the worker running it dies (see queuety.CallbackFunc). Register it on a
// worker with HandleDeadline; it receives the workflow's public state.
// An empty name is an error.
func (b *Builder) OnCancel(handler string) *Builder {
	if handler == "" {
		b.fail(fmt.Errorf("%w: on cancel: handler name is empty", queuetytype.ErrInvalidArgument))
	}
	b.def.OnCancel = handler
	return b
}

// OnQueue sets the queue the workflow's step jobs go to (stored as
// _queue; default "default", at most 64 bytes). A step's Queue option
// overrides it for that step. Empty means the default.
func (b *Builder) OnQueue(queue string) *Builder {
	b.def.Queue = queue
	return b
}

// WithPriority sets the priority of the workflow's step jobs (stored as
// _priority; default queuety.PriorityLow). A step's Priority option
// overrides it for that step.
func (b *Builder) WithPriority(p queuetytype.Priority) *Builder {
	b.def.Priority = p
	return b
}

// MaxAttempts sets how many attempts each step gets by default (stored as
// _max_attempts; default 3, at most 255; 0 keeps the default). A step's
// Retry option overrides it for that step.
func (b *Builder) MaxAttempts(n int) *Builder {
	b.def.MaxAttempts = n
	return b
}

// IdempotencyKey makes dispatch idempotent: the first Dispatch with key
// starts the workflow, and every later one (from any process, Go or PHP)
// returns that workflow's id and writes nothing, even after it finished.
// The key is stored in the workflow_dispatch_keys table and as
// _idempotency_key (at most 191 bytes). Empty means none.
func (b *Builder) IdempotencyKey(key string) *Builder {
	b.def.IdempotencyKey = key
	return b
}

// Version labels the definition (stored as _definition_version), for
// telling apart workflows started by different releases. Empty means none.
func (b *Builder) Version(v string) *Builder {
	b.def.Version = v
	return b
}

// Definition returns the workflow definition built so far, validated: the
// first mistake the builder saw in its methods' arguments, or else the
// engine's checks (queuety.WorkflowDefinition.Validate). Only the initial
// state is left for Dispatch to check. The result is a deep copy: changing
// it, or the Builder afterwards, does not affect the other.
func (b *Builder) Definition() (queuety.WorkflowDefinition, error) {
	if b == nil {
		return queuety.WorkflowDefinition{}, fmt.Errorf("builder: %w: nil Builder (use builder.Workflow)", queuetytype.ErrInvalidArgument)
	}
	if b.err != nil {
		return queuety.WorkflowDefinition{}, fmt.Errorf("builder: workflow %q: %w", b.def.Name, b.err)
	}
	def := cloneDefinition(b.def)
	if err := def.Validate(); err != nil {
		return queuety.WorkflowDefinition{}, fmt.Errorf("builder: workflow %q: %w", b.def.Name, err)
	}
	return def, nil
}

// Dispatch starts the workflow on c with state as its initial state (a
// queuety.State, a map or a struct that encodes as a JSON object; nil for
// none; keys must not start with "_") and returns the workflow's id. The
// workflow row, its first step's job(s) and the workflow_started log are
// written in one transaction; on any error nothing is written. Errors wrap
// queuety.ErrInvalidArgument or queuety.ErrInvalidTimeout when the
// definition or the state is invalid.
//
// Each call starts a new workflow, unless IdempotencyKey is set and the key
// was used before, in which case it returns the existing workflow's id.
func (b *Builder) Dispatch(ctx context.Context, c *queuety.Client, state any) (int64, error) {
	def, err := b.Definition()
	if err != nil {
		return 0, err
	}
	if c == nil {
		return 0, fmt.Errorf("builder: dispatch workflow %q: %w: nil client", def.Name, queuetytype.ErrInvalidArgument)
	}
	return c.DispatchWorkflow(ctx, def, state)
}

// stepKind says which step options a step accepts.
type stepKind int

const (
	jobStep          stepKind = iota // Then, Parallel: job options, no signal options
	waitStep                         // WaitForSignal(s): Name, ResultKey, Timeout, Any
	humanStep                        // WaitForApproval, WaitForDecision, WaitForInput: Name, ResultKey, Timeout, SignalNames
	forEachStep                      // ForEach: job options, ResultKey and the for-each options
	repeatStep                       // RepeatWhile, RepeatUntil: Name, MaxIterations
	runStep                          // RunWorkflow: Name only
	startStep                        // StartWorkflows: Name, ResultKey and the start options
	waitWorkflowStep                 // WaitForWorkflow*: Name, ResultKey, Any, Quorum
)

// add applies opts to step, checks that they fit the kind of step, and
// appends it. method and arg describe the call in an error.
func (b *Builder) add(step queuety.WorkflowStep, method string, arg any, opts []StepOption, kind stepKind) *Builder {
	before := step
	for _, o := range opts {
		if o != nil {
			o(&step)
		}
	}
	if problem := checkOptions(before, step, kind); problem != "" {
		b.fail(fmt.Errorf("%w: step %d (%s(%s)): %s", queuetytype.ErrInvalidArgument, len(b.def.Steps), method, describeArg(arg), problem))
	}
	b.def.Steps = append(b.def.Steps, step)
	return b
}

// describeArg formats a method's argument for an error: strings quoted.
func describeArg(arg any) string {
	switch arg.(type) {
	case string, []string:
		return fmt.Sprintf("%q", arg)
	}
	return fmt.Sprint(arg)
}

// optionRule is one step option: its description ("X applies"), whether
// it was used on a step (given the step before and after its options) and
// the step kinds it applies to.
type optionRule struct {
	name      string
	used      func(before, after queuety.WorkflowStep) bool
	kinds     []stepKind
	appliesTo string
}

var optionRules = []optionRule{
	{"ResultKey applies", func(b, a queuety.WorkflowStep) bool { return a.ResultKey != b.ResultKey },
		[]stepKind{waitStep, humanStep, forEachStep, startStep, waitWorkflowStep},
		"WaitForSignal, ForEach, StartWorkflows and WaitForWorkflow(s) steps"},
	{"Timeout applies", func(b, a queuety.WorkflowStep) bool { return a.Timeout != b.Timeout },
		[]stepKind{waitStep, humanStep},
		"WaitForSignal steps (use StartToClose or ScheduleToClose to bound a step)"},
	{"Job options (Queue, Priority, Retry, Backoff, timeouts, Job) apply", func(_, a queuety.WorkflowStep) bool { return workflowdef.JobOptionsSet(a.Options) },
		[]stepKind{jobStep, forEachStep},
		"Then, Parallel and ForEach steps"},
	{"FirstSuccess applies", func(_, a queuety.WorkflowStep) bool { return a.Mode == queuetytype.ForEachFirstSuccess },
		[]stepKind{forEachStep}, "ForEach steps"},
	{"Any applies", func(b, a queuety.WorkflowStep) bool {
		return a.Mode == queuetytype.WaitAny && b.Mode != queuetytype.WaitAny
	},
		[]stepKind{waitStep, waitWorkflowStep}, "WaitForSignals and WaitForWorkflow(s) steps"},
	{"SignalNames applies", func(b, a queuety.WorkflowStep) bool { return !slices.Equal(a.Signals, b.Signals) },
		[]stepKind{humanStep}, "WaitForApproval, WaitForDecision and WaitForInput steps"},
	{"Quorum applies", func(b, a queuety.WorkflowStep) bool {
		return a.Mode == queuetytype.ForEachQuorum || a.Quorum != b.Quorum
	},
		[]stepKind{forEachStep, waitWorkflowStep}, "ForEach and WaitForWorkflow(s) steps"},
	{"Reducer applies", func(b, a queuety.WorkflowStep) bool { return a.Reducer != b.Reducer },
		[]stepKind{forEachStep}, "ForEach steps"},
	{"MaxIterations applies", func(b, a queuety.WorkflowStep) bool { return a.MaxIterations != b.MaxIterations },
		[]stepKind{repeatStep}, "RepeatWhile and RepeatUntil steps"},
	{"PayloadKey applies", func(b, a queuety.WorkflowStep) bool { return a.PayloadKey != b.PayloadKey },
		[]stepKind{startStep}, "StartWorkflows steps"},
	{"InheritState applies", func(b, a queuety.WorkflowStep) bool { return a.InheritState != b.InheritState },
		[]stepKind{startStep}, "StartWorkflows steps"},
	{"Group applies", func(b, a queuety.WorkflowStep) bool { return a.GroupKey != b.GroupKey },
		[]stepKind{startStep}, "StartWorkflows steps"},
	{"MatchPayload applies", func(b, a queuety.WorkflowStep) bool { return len(a.MatchPayload) > 0 },
		[]stepKind{waitStep, humanStep}, "signal waits"},
	{"CorrelationKey applies", func(b, a queuety.WorkflowStep) bool { return a.CorrelationKey != b.CorrelationKey },
		[]stepKind{waitStep, humanStep}, "signal waits"},
}

// checkOptions describes an option that has no effect on this kind of
// step, or returns "". before is the step as its method built it.
func checkOptions(before, after queuety.WorkflowStep, kind stepKind) string {
	for _, r := range optionRules {
		if !r.used(before, after) || slices.Contains(r.kinds, kind) {
			continue
		}
		if kind == waitStep || kind == humanStep {
			return r.name + " only to " + r.appliesTo + "; a signal wait takes Name, ResultKey, Timeout, MatchPayload, CorrelationKey, and Any or SignalNames"
		}
		return r.name + " only to " + r.appliesTo
	}
	// queuety.DependsOn and queuety.Unique are rejected by
	// WorkflowDefinition.Validate.
	return ""
}

// fail records err unless an earlier mistake was recorded.
func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// ceilSecond rounds a non-negative d up to whole seconds.
func ceilSecond(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	if r := d % time.Second; r != 0 {
		if d > math.MaxInt64-time.Second {
			return d.Truncate(time.Second)
		}
		d += time.Second - r
	}
	return d
}
