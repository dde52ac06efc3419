package engine

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
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
		return nil, NonRetryable(fmt.Errorf("Workflow %d: repeat step %d is missing a target step.", sc.wf.ID, idx))
	}
	if step.StateKey == "" && step.Condition == "" {
		return nil, NonRetryable(fmt.Errorf("Workflow %d: repeat step %d is missing a state key.", sc.wf.ID, idx))
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
		return nil, NonRetryable(fmt.Errorf("Unsupported repeat mode '%s'.", step.RepeatMode))
	}
	iterations := repeatIterations(sc.state, idx)
	out := phpjson.NewObject()
	if !again {
		out.Set("_repeat_steps", repeatSteps(sc.state, idx, iterations))
		return out, nil
	}
	iterations++
	if step.MaxIterations > 0 && iterations > int64(step.MaxIterations) {
		return nil, constraintf("Workflow %d: repeat step '%s' exceeded max_iterations of %d.", sc.wf.ID, step.Name, step.MaxIterations)
	}
	out.Set("_next_step", step.Target)
	out.Set("_repeat_steps", repeatSteps(sc.state, idx, iterations))
	return out, nil
}

// repeatMatches evaluates the repeat's condition on the public state.
func (sc *stepCtx) repeatMatches() (bool, error) {
	step := sc.step
	if step.Condition != "" {
		var fn ConditionFunc
		if sc.r != nil && sc.r.Funcs != nil {
			fn, _ = sc.r.Funcs.RepeatCondition(step.Condition)
		}
		if fn == nil {
			return false, failAttemptWith(fmt.Errorf("Repeat condition class '%s' not found: no repeat condition of that name is registered with this worker", step.Condition))
		}
		ok, err := callUser(func() (bool, error) { return fn(context.Background(), PublicState(sc.state).ToMap()) })
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
	return valuesEqual(actual, expected), nil
}

// valuesEqual compares two stored values as Queuety's values_equal does:
// objects compare regardless of key order, lists in order.
func valuesEqual(a, b any) bool {
	return string(EncodeJSON(canonical(a))) == string(EncodeJSON(canonical(b)))
}

// canonical sorts object keys, recursively.
func canonical(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		keys := x.Keys()
		if phpjson.ListKeys(keys) {
			out := make([]any, len(keys))
			for i, k := range keys {
				e, _ := x.Get(k)
				out[i] = canonical(e)
			}
			return out
		}
		out := phpjson.NewObject()
		for _, k := range sortedKeys(x.ToMap()) {
			e, _ := x.Get(k)
			out.Set(k, canonical(e))
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return v
}

// repeatIterations is the count stored for a repeat step.
func repeatIterations(state *phpjson.Object, idx int) int64 {
	raw, _ := state.Get("_repeat_steps")
	v, _ := asIntArray(raw).Get(intKey(idx))
	o, ok := v.(*phpjson.Object)
	if !ok {
		return 0
	}
	n, _ := o.Get("iterations")
	return max(0, toInt(n))
}

// repeatSteps returns _repeat_steps with step idx's count set.
func repeatSteps(state *phpjson.Object, idx int, iterations int64) *phpjson.Object {
	raw, _ := state.Get("_repeat_steps")
	in := asIntArray(raw)
	out := phpjson.NewObject()
	for _, k := range in.Keys() {
		v, _ := in.Get(k)
		o, ok := v.(*phpjson.Object)
		if !ok {
			continue
		}
		n, _ := o.Get("iterations")
		e := phpjson.NewObject()
		e.Set("iterations", max(0, toInt(n)))
		out.Set(k, e)
	}
	e := phpjson.NewObject()
	e.Set("iterations", max(0, iterations))
	out.Set(intKey(idx), e)
	return out
}
