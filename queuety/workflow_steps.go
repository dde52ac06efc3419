package queuety

import (
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// Repeat modes (WorkflowStep.RepeatMode of a queuetytype.StepRepeat step).
const (
	// RepeatWhile jumps back while the condition holds.
	RepeatWhile = "while"
	// RepeatUntil jumps back until the condition holds.
	RepeatUntil = "until"
)

// Defaults of a queuetytype.StepStartWorkflows step, as in Queuety.
const (
	DefaultStartedWorkflowsKey = "started_workflow_ids"
	DefaultPayloadKey          = "item"
)

// validateComposite checks a for_each, repeat, run_workflow,
// start_workflows or wait_for_workflows step and fills in its defaults.
// earlier holds the names of the steps before it.
func (s *WorkflowStep) validateComposite(earlier map[string]int, depth int) error {
	if s.Type != queuetytype.StepForEach && workflowdef.JobOptionsSet(s.Options) {
		return invalidf("job options (queue, priority, retry, backoff, timeouts) apply only to single, parallel and for_each steps, not to a %s step", s.Type)
	}
	switch s.Type {
	case queuetytype.StepForEach:
		return s.validateForEach()
	case queuetytype.StepRepeat:
		return s.validateRepeat(earlier)
	case queuetytype.StepRunWorkflow:
		return s.validateRunWorkflow(depth)
	case queuetytype.StepStartWorkflows:
		return s.validateStartWorkflows(depth)
	default:
		return s.validateWaitForWorkflows()
	}
}

func (s *WorkflowStep) validateForEach() error {
	if blank(s.ItemsKey) {
		return invalidf("for-each steps require a non-empty items key")
	}
	if err := checkHandler("for-each handler", s.Handler); err != nil {
		return err
	}
	if s.Mode == "" {
		s.Mode = queuetytype.ForEachAll
	}
	switch s.Mode {
	case queuetytype.ForEachAll, queuetytype.ForEachFirstSuccess, queuetytype.ForEachQuorum:
	default:
		return invalidf("for-each mode %q is not one of all, first_success, quorum", s.Mode)
	}
	if err := checkQuorum("for-each", s.Mode == queuetytype.ForEachQuorum, s.Quorum); err != nil {
		return err
	}
	if s.Reducer != "" {
		return checkHandler("reducer", s.Reducer)
	}
	return nil
}

func (s *WorkflowStep) validateRepeat(earlier map[string]int) error {
	if s.RepeatMode != RepeatWhile && s.RepeatMode != RepeatUntil {
		return invalidf("repeat mode %q is not while or until", s.RepeatMode)
	}
	if blank(s.Target) {
		return invalidf("repeat steps require a non-empty target step name")
	}
	if s.StateKey != "" && blank(s.StateKey) {
		return invalidf("repeat steps require a non-empty state key")
	}
	if s.Condition != "" && blank(s.Condition) {
		return invalidf("repeat steps require a non-empty condition")
	}
	s.Target, s.StateKey, s.Condition = strings.TrimSpace(s.Target), strings.TrimSpace(s.StateKey), strings.TrimSpace(s.Condition)
	switch {
	case s.StateKey == "" && s.Condition == "":
		return invalidf("repeat steps require either a state key or a condition")
	case s.StateKey != "" && s.Condition != "":
		return invalidf("repeat steps cannot define both a state key and a condition")
	case s.Condition != "":
		if err := checkHandler("repeat condition", s.Condition); err != nil {
			return err
		}
	}
	if s.MaxIterations < 0 {
		return invalidf("repeat steps require max iterations to be at least 1, got %d", s.MaxIterations)
	}
	if _, ok := earlier[s.Target]; !ok {
		return invalidf("repeat target %q must reference an earlier named step", s.Target)
	}
	_, err := normalizeExpected(s.Expected)
	return err
}

// blank reports whether s is empty or only white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

func (s *WorkflowStep) validateRunWorkflow(depth int) error {
	child, err := s.validChild(depth)
	if err != nil {
		return err
	}
	switch {
	case child.ExecutionTimeout != 0 || child.RunTimeout != 0:
		return invalidf("run-workflow child %q: deadlines are not carried to a run-workflow child", child.Name)
	case child.OnDeadline != "" || child.OnCancel != "":
		return invalidf("run-workflow child %q: callbacks are not carried to a run-workflow child", child.Name)
	case child.CompensateOnFailure:
		return invalidf("run-workflow child %q: CompensateOnFailure is not carried to a run-workflow child", child.Name)
	case child.IdempotencyKey != "" || child.Version != "":
		return invalidf("run-workflow child %q: idempotency keys and versions are not carried to a run-workflow child", child.Name)
	case child.MaxForEachItems != 0 || child.MaxStartedWorkflows != 0 || child.MaxTransitions != 0 ||
		child.MaxStateBytes != 0 || child.MaxCostUnits != 0 || child.PruneStateAfter != 0:
		return invalidf("run-workflow child %q: budgets are not carried to a run-workflow child", child.Name)
	}
	return nil
}

func (s *WorkflowStep) validateStartWorkflows(depth int) error {
	if s.ResultKey == "" {
		s.ResultKey = DefaultStartedWorkflowsKey
	}
	if s.PayloadKey == "" {
		s.PayloadKey = DefaultPayloadKey
	}
	switch {
	case blank(s.ItemsKey):
		return invalidf("workflow start steps require a non-empty items key")
	case blank(s.ResultKey):
		return invalidf("workflow start steps require a non-empty result key")
	case blank(s.PayloadKey):
		return invalidf("workflow start steps require a non-empty payload key")
	case s.GroupKey != "" && blank(s.GroupKey):
		return invalidf("workflow start steps require a non-empty group key when one is given")
	}
	s.ItemsKey, s.ResultKey = strings.TrimSpace(s.ItemsKey), strings.TrimSpace(s.ResultKey)
	s.PayloadKey, s.GroupKey = strings.TrimSpace(s.PayloadKey), strings.TrimSpace(s.GroupKey)
	child, err := s.validChild(depth)
	if err != nil {
		return err
	}
	if child.RunTimeout != 0 || child.IdempotencyKey != "" {
		return invalidf("started workflow %q: run timeouts and idempotency keys are not carried to started workflows", child.Name)
	}
	return nil
}

// validChild validates the step's child definition and replaces it with
// the validated copy, default names filled in.
func (s *WorkflowStep) validChild(depth int) (*WorkflowDefinition, error) {
	if s.Child == nil {
		return nil, invalidf("%s steps require a child workflow definition", s.Type)
	}
	child := *s.Child
	child.Steps = append([]WorkflowStep(nil), child.Steps...)
	if err := child.validateAt(depth + 1); err != nil {
		return nil, fmt.Errorf("child workflow %q: %w", child.Name, err)
	}
	s.Child = &child
	return &child, nil
}

func (s *WorkflowStep) validateWaitForWorkflows() error {
	sources := 0
	if s.WorkflowIDs != nil {
		sources++
		if len(s.WorkflowIDs) == 0 {
			return invalidf("workflow waits require at least one workflow id")
		}
		for _, id := range s.WorkflowIDs {
			if id <= 0 {
				return invalidf("workflow ids must be positive, got %d", id)
			}
		}
	}
	if s.WorkflowIDKey != "" {
		sources++
		if blank(s.WorkflowIDKey) {
			return invalidf("workflow wait steps require a non-empty state key")
		}
		s.WorkflowIDKey = strings.TrimSpace(s.WorkflowIDKey)
	}
	if s.WorkflowGroupKey != "" {
		sources++
		if blank(s.WorkflowGroupKey) {
			return invalidf("workflow group waits require a non-empty group key")
		}
		s.WorkflowGroupKey = strings.TrimSpace(s.WorkflowGroupKey)
	}
	if sources != 1 {
		return invalidf("workflow waits need exactly one of workflow ids, a state key or a group key, got %d", sources)
	}
	if s.Mode == "" {
		s.Mode = queuetytype.WaitAll
	}
	switch s.Mode {
	case queuetytype.WaitAll, queuetytype.WaitAny, queuetytype.WaitQuorum:
	default:
		return invalidf("workflow wait mode %q is not one of all, any, quorum", s.Mode)
	}
	return checkQuorum("workflow wait", s.Mode == queuetytype.WaitQuorum, s.Quorum)
}

// checkQuorum checks a quorum: at least 1 in quorum mode, unset otherwise.
func checkQuorum(what string, quorumMode bool, n int) error {
	if quorumMode && n < 1 {
		return invalidf("%s quorum must be at least 1, got %d", what, n)
	}
	if !quorumMode && n != 0 {
		return invalidf("%s quorum applies only to the quorum mode", what)
	}
	return nil
}

// checkHandler checks a handler name a step refers to.
func checkHandler(what, name string) error {
	if err := dispatch.ValidateHandlerName(name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if blank(name) {
		return invalidf("%s: handler name is blank", what)
	}
	if engine.IsInternalHandler(name) {
		return invalidf("%s: names starting with __queuety_ are reserved", what)
	}
	return nil
}

// normalizeExpected converts a repeat's expected value into the JSON tree
// the engine compares state values with.
func normalizeExpected(v any) (any, error) {
	n, err := phpjson.Normalize(v)
	if err == nil {
		_, err = phpjson.Marshal(n)
	}
	if err != nil {
		return nil, invalidf("repeat expected value does not encode as JSON: %v", err)
	}
	return n, nil
}

// validateMatching checks a signal wait's MatchPayload and CorrelationKey.
func (s *WorkflowStep) validateMatching() error {
	if len(s.MatchPayload) > 0 {
		if _, err := workflowstate.ToObject("match payload", s.MatchPayload); err != nil {
			return err
		}
	}
	if s.CorrelationKey != "" && blank(s.CorrelationKey) {
		return invalidf("correlation key is blank")
	}
	if len(s.CorrelationKey) > 191 {
		return invalidf("correlation key is longer than 191 characters")
	}
	return nil
}
