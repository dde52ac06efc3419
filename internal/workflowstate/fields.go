package workflowstate

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuetytype"
)

// ObjectField returns the object at k, or an empty object when k holds
// none.
func ObjectField(o *phpjson.Object, k string) *phpjson.Object {
	if v, ok := o.Get(k); ok {
		if p, ok := v.(*phpjson.Object); ok {
			return p
		}
	}
	return phpjson.NewObject()
}

// PriorityField reads the "priority" of a definition object.
func PriorityField(o *phpjson.Object) (queuetytype.Priority, bool) { return PriorityAt(o, "priority") }

// PriorityAt reads a valid priority stored under key.
func PriorityAt(o *phpjson.Object, key string) (queuetytype.Priority, bool) {
	v, ok := o.Get(key)
	if !ok {
		return 0, false
	}
	switch p := v.(type) {
	case int64:
		if queuetytype.Priority(p).Valid() {
			return queuetytype.Priority(p), true
		}
	case string:
		if pr, err := queuetytype.ParsePriority(p); err == nil {
			return pr, true
		}
	}
	return 0, false
}

// Queue returns the queue of the workflow's jobs (_queue), or the
// default queue.
func Queue(state *phpjson.Object) string {
	if q := workflowdef.String(state, "_queue"); q != "" {
		return q
	}
	return queuetytype.DefaultQueue
}

// Priority returns the priority of the workflow's jobs (_priority).
func Priority(state *phpjson.Object) queuetytype.Priority {
	if p := queuetytype.Priority(workflowdef.Int(state, "_priority")); p.Valid() {
		return p
	}
	return queuetytype.PriorityLow
}

// MaxAttempts returns the attempts of the workflow's jobs (_max_attempts),
// at most MaxAttemptsLimit, or the default.
func MaxAttempts(state *phpjson.Object) int {
	if n := int(min(workflowdef.Int(state, "_max_attempts"), queuetytype.MaxAttemptsLimit)); n > 0 {
		return n
	}
	return queuetytype.DefaultMaxAttempts
}

// NextStepTarget returns the step a step's output names under
// _next_step, if any.
func NextStepTarget(output *phpjson.Object) (string, bool) {
	v, ok := output.Get("_next_step")
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok && s != ""
}

// CheckNextStep rejects a _next_step that names no step.
func CheckNextStep(output *phpjson.Object, steps []*workflowdef.Step) error {
	if t, ok := NextStepTarget(output); ok && steps != nil && StepIndex(steps, t) < 0 {
		return fmt.Errorf("_next_step target '%s' not found", t)
	}
	return nil
}

// StepIndex returns the index of the step called name, or -1.
func StepIndex(steps []*workflowdef.Step, name string) int {
	for i, s := range steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// MergeOutput applies Queuety's merge rule: top-level keys overwrite (a
// shallow merge); "_" keys are dropped except _workflow_groups and
// _repeat_steps, which replace their state key; state pruning bookkeeping
// runs when the workflow uses prune_state_after. It changes only state's
// top level: a nested value it updates is replaced, never changed in
// place, so state may share its nested values with another state.
func MergeOutput(state, output *phpjson.Object, currentStep int) {
	var outputKeys []any
	for _, k := range output.Keys() {
		v, _ := output.Get(k)
		switch {
		case k == "_workflow_groups" || k == "_repeat_steps":
			if _, isObj := v.(*phpjson.Object); isObj || IsList(v) {
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
		outputs = v.Shallow() // a copy: the state's nested values may be shared
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

// IsList reports whether v is a JSON list.
func IsList(v any) bool { _, ok := v.([]any); return ok }

// StringsToAny converts a string list to a JSON list.
func StringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// SortedKeys returns a map's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
