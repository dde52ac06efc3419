package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file is the engine's read seam: what the read views of package
// internal/readview need to know about the workflow state the engine
// writes (its private keys, its _steps and the runtime of its steps),
// said in plain fields. It reads the state with package
// internal/workflowstate, where the state format is written.

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
	Handlers []string // the handlers that run its jobs
	Timeouts Timeouts // its configured timeouts; zero when none
	// WaitAnswers lists the answers (approve, reject, input) a signal wait
	// step takes.
	WaitAnswers []string
	// ForEach is a for_each step's progress, nil until it has expanded.
	ForEach *ForEachInfo
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
	steps, stepsErr := parseSteps(state)
	if _, has := state.Get("_steps"); v.Err == nil && stepsErr != nil && (has || totalSteps > 0) {
		v.Err = fmt.Errorf("queuety: malformed workflow steps in the state: %w", stepsErr)
	}
	v.Queue, v.Priority, v.MaxAttempts = workflowstate.Queue(state), workflowstate.Priority(state), workflowstate.MaxAttempts(state)
	v.DefinitionHash, v.IdempotencyKey = strField(state, "_definition_hash"), strField(state, "_idempotency_key")
	if s, ok := state.Get("_started_by_workflow_id"); ok {
		v.StartedBy = workflowstate.ToInt(s)
	}
	v.OnDeadline, v.OnCancel = handlerRef(state, "_on_deadline"), handlerRef(state, "_on_cancel")
	v.ExecutionTimeoutSeconds, v.RunTimeoutSeconds = intValue(state, "_deadline_seconds"), intValue(state, runTimeoutKey)
	if w, ok := state.Get("_wait"); ok {
		if wo, ok := w.(*phpjson.Object); ok {
			v.Wait = &WaitView{Type: strField(wo, "type"), WaitingFor: strList(wo, "waiting_for"), Mode: strField(wo, "wait_mode")}
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
func viewStep(state *phpjson.Object, i int, s *stepDef) StepView {
	sv := StepView{Name: s.Name, Type: string(s.Type), Handlers: s.Handlers(), WaitAnswers: workflowstate.WaitAnswers(s)}
	rt := parseRuntimeFromDefinition(s.Raw)
	sv.Timeouts = Timeouts{
		ScheduleToStart: isoDuration(rt.Timeouts.ScheduleToStart),
		StartToClose:    isoDuration(rt.StartToClose()),
		ScheduleToClose: isoDuration(rt.Timeouts.ScheduleToClose),
		Heartbeat:       isoDuration(rt.Timeouts.Heartbeat),
		Signal:          isoDuration(s.Timeout),
	}
	switch s.Type {
	case queuetytype.StepForEach:
		if _, fe := workflowstate.LoadForEach(state, i); fe != nil {
			sv.ForEach = &ForEachInfo{Mode: s.Mode, Items: len(fe.Items), Succeeded: fe.Results.Len(), Failed: fe.Failures.Len(),
				Open: len(fe.Missing()), Settled: fe.Settled()}
			if s.Mode == ForEachQuorum {
				sv.ForEach.Quorum = workflowstate.Quorum(s)
			}
		}
	case queuetytype.StepRepeat:
		sv.Iterations = workflowstate.RepeatIterations(state, i)
	case queuetytype.StepStartWorkflows:
		key := strField(s.Raw, "result_key")
		if key == "" {
			key = workflowdef.DefaultStartedWorkflowsKey
		}
		ids, _ := state.Get(key)
		sv.StartedIDs = workflowstate.IDsOf(ids)
	}
	return sv
}

// StateAfterStep returns the public state recorded right after step idx
// of workflow id (the newest step_completed or workflow_resumed event of
// that step with a state), or nil when no event records it.
func StateAfterStep(ctx context.Context, tx driver.Tx, id int64, idx int) (*phpjson.Object, error) {
	return operate.StateAfterStep(ctx, tx, id, idx)
}

// IsJSONKind reports whether an artifact of this kind holds JSON.
func IsJSONKind(kind string) bool { return isJSONKind(kind) }

// JSONColumn is Queuety's row_nullable_json_array: a stored JSON array or
// object, or nil.
func JSONColumn(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return nil
	}
	switch v.(type) {
	case *phpjson.Object, []any:
		return v
	}
	return nil
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
