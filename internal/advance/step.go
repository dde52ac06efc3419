package advance

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Step is the workflow side of a claimed job that runs a workflow step: the
// workflow row as the claim read it, its decoded state, its step
// definitions and the definition of the step the job runs. The zero Step
// belongs to a plain job.
type Step struct {
	// Workflow is the workflow row, read in the claim's transaction.
	Workflow *driver.Workflow
	// State is the workflow's decoded state, private keys included.
	State *phpjson.Object
	// Steps are the workflow's step definitions, decoded from _steps.
	Steps []*workflowdef.Step
	// Def is the definition of the step the job runs.
	Def *workflowdef.Step
	// PublicJSON is the encoded public state of State (what a step
	// event's state_before holds), when the transition that handed the
	// step off already encoded it; nil otherwise. It is set with State
	// and, like State, never changed afterwards.
	PublicJSON []byte
}

// Attach decodes wf, the workflow of a claimed job that runs step idx,
// into s. Its error says why the step can never run.
func (s *Step) Attach(wf *driver.Workflow, idx int) error {
	s.Workflow = wf
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		return fmt.Errorf("workflow %d: %w", wf.ID, err)
	}
	steps, err := workflowdef.Parse(state)
	if err != nil {
		s.State = state
		return fmt.Errorf("workflow %d: malformed step definitions: %w", wf.ID, err)
	}
	return s.attach(wf, state, steps, idx)
}

// AttachFrom is Attach through svc's cache of large decoded states (see
// Service.DecodeState).
func (s *Step) AttachFrom(svc *Service, wf *driver.Workflow, idx int) error {
	s.Workflow = wf
	state, steps, err := svc.DecodeState(wf)
	if err != nil {
		s.State = state
		return err
	}
	return s.attach(wf, state, steps, idx)
}

func (s *Step) attach(wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int) error {
	s.Workflow, s.State, s.PublicJSON = wf, state, nil
	if idx < 0 || idx >= len(steps) {
		return fmt.Errorf("workflow %d has no step %d", wf.ID, idx)
	}
	s.Steps = steps
	s.Def = steps[idx]
	return nil
}

// Share attaches the workflow from already decoded (another claim of the
// same batch) for step idx. The state and steps are read-only once
// attached.
func (s *Step) Share(from Step, idx int) error {
	s.Workflow, s.State, s.Steps, s.PublicJSON = from.Workflow, from.State, from.Steps, from.PublicJSON
	if idx < 0 || idx >= len(s.Steps) {
		return fmt.Errorf("workflow %d has no step %d", s.Workflow.ID, idx)
	}
	s.Def = s.Steps[idx]
	return nil
}

// ForEachItem returns the item and index a for-each branch job (handler,
// payload) of this step carries in its payload (__for_each). ok is false
// for every other job.
func (s Step) ForEachItem(handler string, payload *phpjson.Object) (item any, index int, ok bool) {
	if s.Def == nil || s.Def.Type != queuetytype.StepForEach || handler == handlerForEach || payload == nil {
		return nil, 0, false
	}
	meta, _ := payload.Get(forEachKey)
	m, isObj := meta.(*phpjson.Object)
	if !isObj {
		return nil, 0, false
	}
	item, _ = m.Get("item")
	idx, _ := m.Get("item_index")
	return workflowstate.Plain(item), int(workflowstate.ToInt(idx)), true
}

// MissingFunction names the reducer or repeat condition the job (its
// handler) of this step needs that funcs does not have, or returns "". A
// for-each branch may be the one that settles its step (and calls the
// reducer), and a repeat placeholder calls its condition.
func (s Step) MissingFunction(handler string, funcs Functions) string {
	if s.Def == nil {
		return ""
	}
	switch {
	case s.Def.Type == queuetytype.StepForEach && handler != handlerForEach && s.Def.Reducer != "":
		if funcs == nil {
			return "reducer " + s.Def.Reducer
		}
		if _, ok := funcs.Reducer(s.Def.Reducer); !ok {
			return "reducer " + s.Def.Reducer
		}
	case handler == workflowdef.HandlerRepeat && s.Def.Type == queuetytype.StepRepeat && s.Def.Condition != "":
		if funcs == nil {
			return "repeat condition " + s.Def.Condition
		}
		if _, ok := funcs.RepeatCondition(s.Def.Condition); !ok {
			return "repeat condition " + s.Def.Condition
		}
	}
	return ""
}
