package workflowdef

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
)

// Step is a decoded _steps entry. Raw is the entry itself, defaults not
// filled in, for the keys a step type reads when it runs (payloads,
// options, human waits, child definitions).
type Step struct {
	Raw         *phpjson.Object
	Type        queuetytype.StepType // default StepSingle
	Name        string               // default the step's index
	Class       string               // single; for_each: the branch handler
	Branches    []*phpjson.Object    // parallel branches, each with "class"
	Delay       int64                // delay_seconds
	SignalNames []string
	WaitMode    string // wait_for_signal, wait_for_workflows: all (default), any, quorum
	ResultKey   string
	Timeout     time.Duration // wait_for_signal: timeout_ms

	// for_each
	ItemsKey string
	Mode     string // all (default), first_success, quorum
	Quorum   int
	Reducer  string
	// repeat
	RepeatMode    string // while (default) or until
	Target        string
	StateKey      string
	Condition     string
	MaxIterations int // 0: no limit
}

// Handlers returns the handler names that run this step's jobs.
func (s *Step) Handlers() []string {
	switch s.Type {
	case queuetytype.StepParallel:
		out := make([]string, len(s.Branches))
		for i, b := range s.Branches {
			v, _ := b.Get("class")
			out[i], _ = v.(string)
		}
		return out
	case queuetytype.StepSingle:
		return []string{s.Class}
	case queuetytype.StepForEach:
		return []string{PlaceholderHandler(s.Type), s.Class}
	}
	return []string{PlaceholderHandler(s.Type)}
}

// Parse decodes the _steps value of a state: a list, or an object keyed by
// index.
func Parse(state *phpjson.Object) ([]*Step, error) {
	raw, ok := state.Get("_steps")
	if !ok {
		return nil, errors.New("state has no _steps")
	}
	var items []any
	switch v := raw.(type) {
	case []any:
		items = v
	case *phpjson.Object: // index-keyed object form
		for _, k := range v.Keys() {
			e, _ := v.Get(k)
			items = append(items, e)
		}
	default:
		return nil, fmt.Errorf("_steps is %T, not a list", raw)
	}
	out := make([]*Step, len(items))
	for i, it := range items {
		d, err := ParseStep(it, i)
		if err != nil {
			return nil, fmt.Errorf("_steps[%d]: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

// ParseStep decodes the _steps entry at index.
func ParseStep(v any, index int) (*Step, error) {
	if s, ok := v.(string); ok { // legacy: a bare class string
		o := phpjson.NewObject()
		o.Set("type", string(queuetytype.StepSingle))
		o.Set("name", strconv.Itoa(index))
		o.Set("class", s)
		v = o
	}
	o, ok := v.(*phpjson.Object)
	if !ok {
		return nil, fmt.Errorf("step is %T, not an object", v)
	}
	d := &Step{Raw: o, Type: queuetytype.StepType(String(o, "type")), Name: String(o, "name")}
	if d.Type == "" {
		d.Type = queuetytype.StepSingle
	}
	if d.Name == "" {
		d.Name = strconv.Itoa(index)
	}
	switch d.Type {
	case queuetytype.StepSingle:
		d.Class = String(o, "class")
		if d.Class == "" {
			return nil, errors.New("single step has no class")
		}
	case queuetytype.StepParallel:
		d.Branches = ParallelBranches(o)
		if len(d.Branches) == 0 {
			return nil, errors.New("parallel step has no handlers")
		}
	case queuetytype.StepDelay:
		d.Delay = Int(o, "delay_seconds")
	case queuetytype.StepWaitForSignal:
		d.SignalNames = Strings(o, "signal_names")
		if len(d.SignalNames) == 0 {
			if s := String(o, "signal_name"); s != "" {
				d.SignalNames = []string{s}
			}
		}
		d.WaitMode = String(o, "wait_mode")
		if d.WaitMode == "" {
			d.WaitMode = queuetytype.WaitAll
		}
		d.ResultKey = String(o, "result_key")
		d.Timeout = time.Duration(Int(o, "timeout_ms")) * time.Millisecond
	case queuetytype.StepForEach:
		d.Class = String(o, "class")
		d.ItemsKey = String(o, "items_key")
		d.ResultKey = String(o, "result_key")
		d.Mode = String(o, "mode")
		if d.Mode == "" {
			d.Mode = queuetytype.ForEachAll
		}
		if d.Mode != queuetytype.ForEachAll && d.Mode != queuetytype.ForEachFirstSuccess && d.Mode != queuetytype.ForEachQuorum {
			return nil, fmt.Errorf("for_each step %q has unknown mode %q", d.Name, d.Mode)
		}
		d.Quorum = int(Int(o, "quorum"))
		d.Reducer = HandlerRef(o, "reducer", "reducer_class")
	case queuetytype.StepRepeat:
		d.RepeatMode = String(o, "repeat_mode")
		if d.RepeatMode == "" {
			d.RepeatMode = RepeatWhile
		}
		d.Target = String(o, "target_step")
		d.StateKey = String(o, "state_key")
		d.Condition = HandlerRef(o, "condition", "condition_class")
		d.MaxIterations = int(Int(o, "max_iterations"))
	case queuetytype.StepWaitForWorkflows:
		d.WaitMode = String(o, "wait_mode")
		if d.WaitMode == "" {
			d.WaitMode = queuetytype.WaitAll
		}
		d.ResultKey = String(o, "result_key")
		d.Quorum = int(Int(o, "quorum"))
	}
	return d, nil
}

// ParallelBranches normalises "branches" (objects or strings) or
// "handlers" into branch objects with a "class".
func ParallelBranches(o *phpjson.Object) []*phpjson.Object {
	var out []*phpjson.Object
	if v, ok := o.Get("branches"); ok {
		if list, ok := v.([]any); ok {
			for _, b := range list {
				switch x := b.(type) {
				case string:
					if strings.TrimSpace(x) != "" {
						bo := phpjson.NewObject()
						bo.Set("class", strings.TrimSpace(x))
						out = append(out, bo)
					}
				case *phpjson.Object:
					h := String(x, "class")
					if h == "" {
						h = String(x, "handler")
					}
					if h != "" {
						bo := x.Clone()
						bo.Set("class", h)
						out = append(out, bo)
					}
				}
			}
			return out
		}
	}
	if v, ok := o.Get("handlers"); ok {
		if list, ok := v.([]any); ok {
			for _, h := range list {
				if s, ok := h.(string); ok && strings.TrimSpace(s) != "" {
					bo := phpjson.NewObject()
					bo.Set("class", strings.TrimSpace(s))
					out = append(out, bo)
				}
			}
		}
	}
	return out
}

// HandlerRef reads a handler reference stored under one of keys: a name,
// or a {class, payload} object (Queuety's handler_definition).
func HandlerRef(o *phpjson.Object, keys ...string) string {
	for _, k := range keys {
		switch v, _ := o.Get(k); h := v.(type) {
		case string:
			if s := strings.TrimSpace(h); s != "" {
				return s
			}
		case *phpjson.Object:
			if s := String(h, "class"); s != "" {
				return s
			}
		}
	}
	return ""
}

// String returns the string at k, trimmed; "" when it is missing or not a
// string.
func String(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// Strings returns the non-empty strings of the list at k.
func Strings(o *phpjson.Object, k string) []string {
	v, _ := o.Get(k)
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Int returns the number at k, truncated to an integer; 0 when it is
// missing or not a number.
func Int(o *phpjson.Object, k string) int64 {
	switch v, _ := o.Get(k); n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// ForEachResultKey is where a for_each step's aggregate goes: its
// result_key, or "<name>_results".
func (s *Step) ForEachResultKey() string {
	if s.ResultKey != "" {
		return s.ResultKey
	}
	return s.Name + "_results"
}
