package advance

// This file hands a workflow's compensations and cancel callback to
// Queuety PHP when they are PHP classes.
//
// Queuety PHP calls a compensation class (handle($snapshot)) and an
// on_cancel class (handle($public_state)) in-process, in the PHP process
// that failed or cancelled the workflow; neither is a Handler, so a job
// named after the class is buried by a PHP worker. When the Go engine
// ends the workflow and the client has a PHP workflow callback queue
// (Config.PHPWorkflowCallbacks), each compensation or cancel callback that
// no worker of this process registered becomes a job for the bridge class
// QueuetyGo\WorkflowCallback (php/ in this repository) on that queue. The
// bridge reads the workflow row and, if the name is a PHP class, calls it
// as Queuety does; then it moves the compensations on as
// compensationEnded does (the next one, newest first, as a bridge job or
// as a job for the Go worker that has it; the cancel callback after the
// last one). If the name is not a PHP class there, the bridge enqueues the
// job a Go engine would have enqueued for it, so another Go process that
// has the handler runs it, and the chain moves on when that job ends.

import (
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// HandlerPHPWorkflowCallback is the PHP class a Go engine hands PHP
// compensations and cancel callbacks to (see php/ in this repository).
const HandlerPHPWorkflowCallback = `QueuetyGo\WorkflowCallback`

// phpWorkflowCallback reports whether a compensation or cancel callback
// goes to Queuety PHP's bridge class: no worker of this process
// registered it, and the client has a PHP workflow callback queue.
func (s *Service) phpWorkflowCallback(handler string) bool {
	if s.cfg.PHPWorkflowCallbacks == "" || handler == "" {
		return false
	}
	known, _ := s.knows(handler)
	return !known
}

// phpWorkflowCallbackJob builds the bridge job of a compensation (kind
// "compensation", its stack index and reason) or of the cancel callback
// (kind "cancel"). The payload names the workflow and carries the engine's
// marker, so the Go engine moves the compensations on if it buries the
// job (its attempts are for crashed PHP workers, as for batch callbacks).
func (s *Service) phpWorkflowCallbackJob(wf *driver.Workflow, kind, handler string, index int, reason string, now time.Time) *driver.Job {
	payload := phpjson.NewObject()
	payload.Set("kind", kind)
	payload.Set("workflow_id", wf.ID)
	payload.Set("handler", handler) // for operators: the bridge reads the workflow row
	marker := phpjson.NewObject()
	marker.Set("kind", kind)
	marker.Set("workflow_id", wf.ID)
	if kind == "compensation" {
		payload.Set("index", int64(index))
		payload.Set("reason", reason)
		marker.Set("index", int64(index))
		marker.Set("reason", reason)
	}
	payload.Set("bridge_queue", s.cfg.PHPWorkflowCallbacks)
	payload.Set(callbackKey, marker)
	payload.Set(runtimeKey, s.cfg.CallbackRuntime())
	return &driver.Job{
		Queue: s.cfg.PHPWorkflowCallbacks, Handler: HandlerPHPWorkflowCallback, Payload: workflowstate.EncodeJSON(payload), Status: driver.JobPending,
		MaxAttempts: s.cfg.CallbackAttempts, AvailableAt: rowtime.Floor(now), CostUnits: 1, CreatedAt: rowtime.Floor(now),
	}
}
