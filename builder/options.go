package builder

import (
	"time"

	"github.com/queuety/queuety-go/queuety"
)

// StepOption tunes one step. Options that set a field of the step's job
// (Queue, Priority, Retry, Backoff, the activity timeouts and Job) apply to
// Then and Parallel steps; ResultKey and Timeout apply to WaitForSignal;
// Name applies to all three. An option given to a step it does not apply
// to is reported by Definition and Dispatch.
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
func Priority(p queuety.Priority) StepOption {
	return func(s *queuety.WorkflowStep) { s.Options.Priority, s.Options.PrioritySet = p, true }
}

// Retry sets how many attempts the step gets in total, the first one
// included (stored as _steps[i].max_attempts, at most 255; 0 keeps the
// workflow's MaxAttempts), and optionally the wait between them (see
// Backoff). When the attempts run out the step is buried and the workflow
// fails.
func Retry(maxAttempts int, backoff ...queuety.Backoff) StepOption {
	return func(s *queuety.WorkflowStep) { queuety.Retry(maxAttempts, backoff...)(&s.Options) }
}

// Backoff sets the wait between the step's attempts (stored in the job's
// __queuety_runtime.backoff, which Queuety PHP reads too). The default is
// the client's, queuety.BackoffExponential unless configured.
func Backoff(b queuety.Backoff) StepOption {
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

// ResultKey stores the signal's payload under this one state key instead
// of merging its keys into the state (WaitForSignal only; stored as
// _steps[i].result_key).
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
