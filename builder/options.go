package builder

import (
	"maps"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// StepOption tunes one step. Name applies to every step. Options that set
// a field of the step's job (Queue, Priority, Retry, Backoff, the activity
// timeouts and Job) apply to Then, Parallel and ForEach steps; ResultKey to
// WaitForSignal, ForEach, StartWorkflows and the WaitForWorkflow steps;
// Timeout, MatchPayload and CorrelationKey to the signal waits; FirstSuccess and Reducer to ForEach; Quorum to
// ForEach and the WaitForWorkflow steps; Any to the WaitForWorkflow steps;
// MaxIterations to the repeat steps; PayloadKey, InheritState and Group to
// StartWorkflows. An option given to a step it does not apply to is
// reported by Definition and Dispatch.
//
// A StepOption is a plain function on queuety.WorkflowStep, so tools may
// write their own.
type StepOption func(*queuety.WorkflowStep)

// Name names the step (Queuety's then(Class, name), stored as
// _steps[i].name, at most 191 bytes). Names must be unique within the
// workflow. A step handler jumps to a named step by returning
// queuety.State{"_next_step": name}; events and the CLI show the name.
// Without it a step is named after its index ("0", "1", ...), or
// "wait_for_<signal>" for a signal wait.
func Name(name string) StepOption {
	return func(s *queuety.WorkflowStep) { s.Name = name }
}

// Queue puts the step's job(s) on queue instead of the workflow's queue
// (stored as _steps[i].queue, at most 64 bytes). Only workers that claim
// that queue run the step.
func Queue(q string) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Queue = q }
}

// Priority sets the priority of the step's job(s) instead of the
// workflow's (stored as _steps[i].priority, 0-3).
func Priority(p queuetytype.Priority) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Priority, s.Options.PrioritySet = p, true }
}

// Retry sets how many attempts the step gets in total, the first one
// included (stored as _steps[i].max_attempts, at most 255; 0 keeps the
// workflow's MaxAttempts), and optionally the wait between them (see
// Backoff). When the attempts run out the step is buried and the workflow
// fails.
func Retry(maxAttempts int, backoff ...queuetytype.Backoff) StepOption {
	return func(s *queuety.WorkflowStep) { queuety.Retry(maxAttempts, backoff...)(&s.Options) }
}

// Backoff sets the wait between the step's attempts (stored in the job's
// __queuety_runtime.backoff, which Queuety PHP reads too). The default is
// the client's, queuety.BackoffExponential unless configured.
func Backoff(b queuetytype.Backoff) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Backoff = b }
}

// ScheduleToStart bounds how long each attempt of the step may wait in the
// queue before a worker claims it, counted from when it becomes due. On
// expiry the attempt counts as failed and is retried while attempts remain.
// At least one second. Only Go workers enforce it.
func ScheduleToStart(d time.Duration) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Timeouts.ScheduleToStart = d }
}

// StartToClose bounds one attempt of the step, from claim to result. The
// handler's ctx expires at that deadline; a timed-out attempt is retried
// while attempts remain. At least one second. It is also stored as the
// job's timeout_seconds (rounded up), which Queuety PHP workers read as
// their execution time limit.
func StartToClose(d time.Duration) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Timeouts.StartToClose = d }
}

// ScheduleToClose bounds the whole step, all attempts and backoffs
// included, from the moment its job is enqueued. It is final: on expiry the
// step is buried and the workflow fails. At least one second. Only Go
// workers enforce it.
func ScheduleToClose(d time.Duration) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Timeouts.ScheduleToClose = d }
}

// Heartbeat bounds the gap between heartbeats (queuety.Heartbeat) of a
// running attempt of the step, counted from the claim. A handler that
// stops heartbeating for longer is timed out and retried while attempts
// remain. At least one second. Only Go workers enforce it.
func Heartbeat(d time.Duration) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Timeouts.Heartbeat = d }
}

// Job applies queuety.JobOptions to the step's job(s), for options that
// have no StepOption of their own, such as queuety.Delay (wait before the
// step's first attempt, stored as _steps[i].job_delay_seconds).
// queuety.DependsOn and queuety.Unique do not apply to steps.
func Job(opts ...queuety.JobOption) StepOption {
	return func(s *queuety.WorkflowStep) {
		for _, o := range opts {
			if o != nil {
				o(&s.Options)
			}
		}
	}
}

// ResultKey names the state key a step stores its result under (stored
// as _steps[i].result_key): a signal's payload instead of merging its keys
// (WaitForSignal), the for-each aggregate (ForEach), the started workflow
// ids (StartWorkflows, default "started_workflow_ids") or the awaited
// workflows' states instead of merging them (the WaitForWorkflow steps).
func ResultKey(key string) StepOption {
	return func(s *queuety.WorkflowStep) { s.ResultKey = key }
}

// Timeout makes a signal wait give up after d (WaitForSignal only): a
// durable timer races the signal, and exactly one of them settles the wait.
// The workflow then continues with queuety.TimedOutKey(name) in its state,
// true when the timer won and false when the signal did (name is the
// ResultKey, or else the signal name). At least one second; zero waits
// forever. Stored as _steps[i].timeout_ms, which only Go workers honour.
func Timeout(d time.Duration) StepOption {
	return func(s *queuety.WorkflowStep) { s.Timeout = d }
}

// FirstSuccess settles a ForEach step at the first branch that succeeds
// (Queuety's ForEachMode::FirstSuccess).
func FirstSuccess() StepOption {
	return func(s *queuety.WorkflowStep) { s.Mode = queuetytype.ForEachFirstSuccess }
}

// Quorum settles a ForEach step once n branches succeeded, or continues a
// WaitForWorkflows step once n workflows completed (the quorum modes).
// n must be at least 1.
func Quorum(n int) StepOption {
	return func(s *queuety.WorkflowStep) { s.Mode, s.Quorum = queuetytype.ForEachQuorum, n }
}

// Any continues a WaitForWorkflows step when any one of the workflows has
// completed, or a WaitForSignals step when any one of its signals arrived
// (Queuety's WaitMode::Any).
func Any() StepOption {
	return func(s *queuety.WorkflowStep) { s.Mode = queuetytype.WaitAny }
}

// Reducer names the reducer (registered with HandleReducer) that turns a
// settled ForEach step's aggregate into state keys (stored as
// _steps[i].reducer_class).
func Reducer(name string) StepOption {
	return func(s *queuety.WorkflowStep) { s.Reducer = name }
}

// MaxIterations caps how many times a repeat step may jump back (stored
// as _steps[i].max_iterations); one more would fail the workflow. n must be
// at least 1.
func MaxIterations(n int) StepOption {
	return func(s *queuety.WorkflowStep) {
		if n == 0 {
			n = -1 // zero means "no cap" in WorkflowStep: keep it an error
		}
		s.MaxIterations = n
	}
}

// PayloadKey is the state key a StartWorkflows step stores a non-object
// item under in each started workflow (default "item").
func PayloadKey(key string) StepOption {
	return func(s *queuety.WorkflowStep) { s.PayloadKey = key }
}

// InheritState says whether the workflows a StartWorkflows step starts
// get the parent's public state (default true); the item's keys are
// merged over it either way.
func InheritState(inherit bool) StepOption {
	return func(s *queuety.WorkflowStep) { s.InheritState = inherit }
}

// Group records the workflows a StartWorkflows step starts under group,
// for a later WaitForWorkflowGroup(group) (stored as _steps[i].group_key).
func Group(group string) StepOption {
	return func(s *queuety.WorkflowStep) { s.GroupKey = group }
}

// SignalNames replaces the signals a WaitForApproval or WaitForInput step
// listens for (one name), or a WaitForDecision step's approve and reject
// signals (two names, in that order).
func SignalNames(names ...string) StepOption {
	return func(s *queuety.WorkflowStep) { s.Signals = append([]string(nil), names...) }
}

// MatchPayload makes a signal wait (WaitForSignal, WaitForSignals and the
// human waits) count only signals whose payload contains every key of
// subset with an equal value, objects compared key by key (Queuety's
// match_payload, stored as _steps[i].match_payload with its keys sorted).
// Other signals of the awaited names are stored but do not settle the
// wait. subset must encode as a JSON object; the builder keeps a copy of
// its top level.
func MatchPayload(subset queuety.State) StepOption {
	return func(s *queuety.WorkflowStep) { s.MatchPayload = maps.Clone(subset) }
}

// CorrelationKey makes a signal wait count only signals whose payload has
// key with the same value as the workflow's state has under key (Queuety's
// correlation_key, stored as _steps[i].correlation_key), so one signal
// name can serve many workflows: an "order_paid" signal with
// {"order_id": 7} settles only the wait of the workflow whose state has
// order_id 7. A signal or state without the key does not count.
func CorrelationKey(key string) StepOption {
	return func(s *queuety.WorkflowStep) { s.CorrelationKey = key }
}
