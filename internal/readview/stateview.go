package readview

import (
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file says what the read views need to know about the workflow
// state the engine writes (its private keys, its _steps and the runtime of
// its steps), in plain fields. It reads the state with package
// internal/workflowstate, the definition with internal/workflowdef and a
// step's runtime with internal/jobruntime, where those formats are
// written.

// StateView is what a workflow's stored state says, for a read view.
type StateView struct {
	// State is the decoded state; an empty object when it does not decode.
	State *phpjson.Object
	// Err says why the state does not decode, or why its steps do not
	// parse when it has some; nil when both read.
	Err error
	// StepsOK reports whether the steps parsed; Steps lists them when so.
	StepsOK bool
	Steps   []StepView

	Queue          string          // the queue of the workflow's jobs
	Priority       driver.Priority // their priority
	MaxAttempts    int             // their attempts
	DefinitionHash string          // the definition's hash
	IdempotencyKey string          // the key the workflow was dispatched with
	StartedBy      int64           // the workflow whose step started this one, or 0
	OnDeadline     string          // the deadline handler, or ""
	OnCancel       string          // the cancel handler, or ""
	// ExecutionTimeoutSeconds and RunTimeoutSeconds are the workflow's
	// timeouts (0: none).
	ExecutionTimeoutSeconds int64
	RunTimeoutSeconds       int64
	// Wait is the wait the state records (_wait), nil when none.
	Wait *WaitView
}

// WaitView is the wait a workflow's state records.
type WaitView struct {
	Type       string   // "signal" or "workflows"
	WaitingFor []string // the signal names or workflow ids
	Mode       string   // all, any or quorum
}

// StepView is one step of a workflow, as its definition and its runtime
// state say.
type StepView struct {
	Name     string
	Type     string
	Handlers []string             // the handlers that run its jobs
	Timeouts queuetytype.Timeouts // its configured timeouts; zero when none
	// WaitAnswers lists the answers (approve, reject, input) a signal wait
	// step takes.
	WaitAnswers []string
	// ForEach is a for_each step's progress, nil until it has expanded.
	ForEach *queuetytype.ForEachInfo
	// Iterations counts how often a repeat step jumped back.
	Iterations int64
	// StartedIDs are the workflows a start_workflows step started, read
	// from its result key.
	StartedIDs []int64
}

// ViewState reads a workflow's stored state for a read view. A state or
// steps that do not read are reported in Err, not refused: the workflow's
// page is where a person finds out what is wrong with it. totalSteps is
// the workflow row's: a state without _steps is malformed only when the
// row says the workflow has steps.
func ViewState(raw []byte, totalSteps int) *StateView {
	v := &StateView{}
	state, err := workflowstate.DecodeObject("workflow state", raw)
	if err != nil {
		state, v.Err = phpjson.NewObject(), err
	}
	v.State = state
	steps, stepsErr := workflowdef.Parse(state)
	if _, has := state.Get("_steps"); v.Err == nil && stepsErr != nil && (has || totalSteps > 0) {
		v.Err = fmt.Errorf("queuety: malformed workflow steps in the state: %w", stepsErr)
	}
	v.Queue, v.Priority, v.MaxAttempts = workflowstate.Queue(state), workflowstate.Priority(state), workflowstate.MaxAttempts(state)
	v.DefinitionHash, v.IdempotencyKey = workflowdef.String(state, "_definition_hash"), workflowdef.String(state, "_idempotency_key")
	if s, ok := state.Get("_started_by_workflow_id"); ok {
		v.StartedBy = workflowstate.ToInt(s)
	}
	v.OnDeadline, v.OnCancel = workflowdef.HandlerRef(state, "_on_deadline"), workflowdef.HandlerRef(state, "_on_cancel")
	v.ExecutionTimeoutSeconds, v.RunTimeoutSeconds = workflowdef.Int(state, "_deadline_seconds"), workflowdef.Int(state, workflowstate.RunTimeoutKey)
	if w, ok := state.Get("_wait"); ok {
		if wo, ok := w.(*phpjson.Object); ok {
			v.Wait = &WaitView{Type: workflowdef.String(wo, "type"), WaitingFor: workflowdef.Strings(wo, "waiting_for"), Mode: workflowdef.String(wo, "wait_mode")}
		}
	}
	if stepsErr != nil {
		return v
	}
	v.StepsOK = true
	v.Steps = make([]StepView, len(steps))
	for i, s := range steps {
		v.Steps[i] = viewStep(state, i, s)
	}
	return v
}

// viewStep reads step i of a workflow.
func viewStep(state *phpjson.Object, i int, s *workflowdef.Step) StepView {
	sv := StepView{Name: s.Name, Type: string(s.Type), Handlers: s.Handlers(), WaitAnswers: workflowstate.WaitAnswers(s)}
	rt := jobruntime.FromDefinition(s.Raw)
	sv.Timeouts = queuetytype.Timeouts{
		ScheduleToStart: isoDuration(rt.Timeouts.ScheduleToStart),
		StartToClose:    isoDuration(rt.StartToClose()),
		ScheduleToClose: isoDuration(rt.Timeouts.ScheduleToClose),
		Heartbeat:       isoDuration(rt.Timeouts.Heartbeat),
		Signal:          isoDuration(s.Timeout),
	}
	switch s.Type {
	case queuetytype.StepForEach:
		if _, fe := workflowstate.LoadForEach(state, i); fe != nil {
			sv.ForEach = &queuetytype.ForEachInfo{Mode: s.Mode, Items: len(fe.Items), Succeeded: fe.Results.Len(), Failed: fe.Failures.Len(),
				Open: len(fe.Missing()), Settled: fe.Settled()}
			if s.Mode == queuetytype.ForEachQuorum {
				sv.ForEach.Quorum = workflowstate.Quorum(s)
			}
		}
	case queuetytype.StepRepeat:
		sv.Iterations = workflowstate.RepeatIterations(state, i)
	case queuetytype.StepStartWorkflows:
		key := workflowdef.String(s.Raw, "result_key")
		if key == "" {
			key = workflowdef.DefaultStartedWorkflowsKey
		}
		ids, _ := state.Get(key)
		sv.StartedIDs = workflowstate.IDsOf(ids)
	}
	return sv
}

// isoDuration formats a duration as ISO 8601 (PT1H30M, PT0.5S).
func isoDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	out := "PT"
	if h := d / time.Hour; h > 0 {
		out += fmt.Sprintf("%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		out += fmt.Sprintf("%dM", m)
		d -= m * time.Minute
	}
	if d > 0 || out == "PT" {
		s := d.Seconds()
		if d%time.Second == 0 {
			out += fmt.Sprintf("%dS", int64(s))
		} else {
			out += fmt.Sprintf("%gS", s)
		}
	}
	return out
}
