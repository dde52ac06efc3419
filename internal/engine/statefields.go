package engine

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

func objField(o *phpjson.Object, k string) *phpjson.Object {
	if v, ok := o.Get(k); ok {
		if p, ok := v.(*phpjson.Object); ok {
			return p
		}
	}
	return phpjson.NewObject()
}

func priorityField(o *phpjson.Object) (driver.Priority, bool) { return priorityAt(o, "priority") }

// priorityAt reads a valid priority stored under key.
func priorityAt(o *phpjson.Object, key string) (driver.Priority, bool) {
	v, ok := o.Get(key)
	if !ok {
		return 0, false
	}
	switch p := v.(type) {
	case int64:
		if driver.Priority(p).Valid() {
			return driver.Priority(p), true
		}
	case string:
		if pr, err := ParsePriority(p); err == nil {
			return pr, true
		}
	}
	return 0, false
}

func stateQueue(state *phpjson.Object) string {
	if q := strField(state, "_queue"); q != "" {
		return q
	}
	return DefaultQueue
}

func statePriority(state *phpjson.Object) driver.Priority {
	if p := driver.Priority(intValue(state, "_priority")); p.Valid() {
		return p
	}
	return driver.PriorityLow
}

func stateMaxAttempts(state *phpjson.Object) int {
	if n := clampAttempts(intValue(state, "_max_attempts")); n > 0 {
		return n
	}
	return DefaultMaxAttempts
}

func nextStepTarget(output *phpjson.Object) (string, bool) {
	v, ok := output.Get("_next_step")
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok && s != ""
}

// checkNextStep rejects a _next_step that names no step.
func checkNextStep(output *phpjson.Object, steps []*stepDef) error {
	if t, ok := nextStepTarget(output); ok && steps != nil && stepIndexByName(steps, t) < 0 {
		return fmt.Errorf("_next_step target '%s' not found", t)
	}
	return nil
}

func stepIndexByName(steps []*stepDef, name string) int {
	for i, s := range steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// mergeOutput applies Queuety's merge rule: top-level keys overwrite (a
// shallow merge); "_" keys are dropped except _workflow_groups and
// _repeat_steps, which replace their state key; state pruning bookkeeping
// runs when the workflow uses prune_state_after.
func mergeOutput(state, output *phpjson.Object, currentStep int) {
	var outputKeys []any
	for _, k := range output.Keys() {
		v, _ := output.Get(k)
		switch {
		case k == "_workflow_groups" || k == "_repeat_steps":
			if _, isObj := v.(*phpjson.Object); isObj || isList(v) {
				state.Set(k, v)
			}
		case IsPrivateKey(k):
		default:
			state.Set(k, v)
			outputKeys = append(outputKeys, k)
		}
	}
	pruneAfter, ok := state.Get("_prune_state_after")
	if !ok {
		return
	}
	n, _ := pruneAfter.(int64)
	outputs := phpjson.NewObject()
	switch so, _ := state.Get("_step_outputs"); v := so.(type) {
	case *phpjson.Object:
		outputs = v
	case []any:
		for i, e := range v {
			outputs.Set(strconv.Itoa(i), e)
		}
	}
	if outputKeys == nil {
		outputKeys = []any{}
	}
	outputs.Set(strconv.Itoa(currentStep), outputKeys)
	if int64(currentStep) >= n {
		cutoff := int64(currentStep) - n
		for _, k := range outputs.Keys() {
			idx, err := strconv.ParseInt(k, 10, 64)
			if err != nil || idx > cutoff {
				continue
			}
			keys, _ := outputs.Get(k)
			if list, ok := keys.([]any); ok {
				for _, key := range list {
					if s, ok := key.(string); ok && !IsPrivateKey(s) {
						state.Delete(s)
					}
				}
			}
			outputs.Delete(k)
		}
	}
	state.Set("_step_outputs", outputs)
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
