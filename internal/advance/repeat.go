package advance

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// This file runs Queuety's repeat steps: a placeholder job
// (__queuety_repeat) that jumps back to an earlier named step while (or
// until) a condition on the public state holds. The condition is a state
// key compared with an expected value, or a registered repeat condition.
// Iterations are counted in _repeat_steps[step index].iterations; a repeat
// that would pass max_iterations fails the workflow.

// repeatOutput decides the repeat step and returns its output:
// {_next_step, _repeat_steps} to jump back, or {_repeat_steps} to fall
// through (Queuety's handle_repeat_step).
func (sc *stepCtx) repeatOutput() (*phpjson.Object, error) {
	step, idx := sc.step, sc.wf.CurrentStep
	if step.Target == "" {
		return nil, sc.s.final(fmt.Errorf("Workflow %d: repeat step %d is missing a target step.", sc.wf.ID, idx))
	}
	if step.StateKey == "" && step.Condition == "" {
		return nil, sc.s.final(fmt.Errorf("Workflow %d: repeat step %d is missing a state key.", sc.wf.ID, idx))
	}
	matches, err := sc.repeatMatches()
	if err != nil {
		return nil, err
	}
	var again bool
	switch step.RepeatMode {
	case "while":
		again = matches
	case "until":
		again = !matches
	default:
		return nil, sc.s.final(fmt.Errorf("Unsupported repeat mode '%s'.", step.RepeatMode))
	}
	iterations := workflowstate.RepeatIterations(sc.state, idx)
	out := phpjson.NewObject()
	if !again {
		out.Set("_repeat_steps", workflowstate.RepeatSteps(sc.state, idx, iterations))
		return out, nil
	}
	iterations++
	if step.MaxIterations > 0 && iterations > int64(step.MaxIterations) {
		return nil, sc.s.constraintf("Workflow %d: repeat step '%s' exceeded max_iterations of %d.", sc.wf.ID, step.Name, step.MaxIterations)
	}
	out.Set("_next_step", step.Target)
	out.Set("_repeat_steps", workflowstate.RepeatSteps(sc.state, idx, iterations))
	return out, nil
}

// repeatMatches evaluates the repeat's condition on the public state.
func (sc *stepCtx) repeatMatches() (bool, error) {
	step := sc.step
	if step.Condition != "" {
		var fn ConditionFunc
		if funcs := sc.at.Funcs(); funcs != nil {
			fn, _ = funcs.RepeatCondition(step.Condition)
		}
		if fn == nil {
			return false, failAttemptWith(fmt.Errorf("Repeat condition class '%s' not found: no repeat condition of that name is registered with this worker", step.Condition))
		}
		ok, err := callUser(func() (bool, error) { return fn(context.Background(), workflowstate.PublicMap(sc.state)) })
		if err != nil {
			return false, failAttemptWith(fmt.Errorf("repeat condition %s: %w", step.Condition, err))
		}
		return ok, nil
	}
	expected, ok := step.Raw.Get("expected")
	if !ok {
		expected = true
	}
	actual, _ := sc.state.Get(step.StateKey)
	return workflowstate.ValuesEqual(actual, expected), nil
}
