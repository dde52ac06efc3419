package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// runTimeoutKey stores the run timeout in the workflow's private state.
const runTimeoutKey = "_run_timeout_seconds"

// stepDef is a decoded _steps entry.
type stepDef struct {
	raw         *phpjson.Object
	Type        string
	Name        string
	Class       string
	Branches    []*phpjson.Object // parallel branches, each with "class"
	Delay       int64             // delay_seconds
	SignalNames []string
	WaitMode    string
	ResultKey   string
	Timeout     time.Duration

	// for_each: Class is the branch handler.
	ItemsKey string
	Mode     string // for_each: all, first_success, quorum
	Quorum   int
	Reducer  string
	// repeat
	RepeatMode    string // while or until
	Target        string
	StateKey      string
	Condition     string
	MaxIterations int // 0: no limit
}

// handlers returns the handler names that run this step's jobs.
func (s *stepDef) handlers() []string {
	switch s.Type {
	case "parallel":
		out := make([]string, len(s.Branches))
		for i, b := range s.Branches {
			v, _ := b.Get("class")
			out[i], _ = v.(string)
		}
		return out
	case "single":
		return []string{s.Class}
	case "for_each":
		return []string{placeholderHandler(s.Type), s.Class}
	}
	return []string{placeholderHandler(s.Type)}
}

// placeholderHandler maps a step type to its internal handler.
func placeholderHandler(typ string) string {
	switch typ {
	case "delay":
		return HandlerDelay
	case "wait_for_signal":
		return HandlerWaitForSignal
	case "for_each":
		return HandlerForEach
	case "repeat":
		return HandlerRepeat
	case "run_workflow":
		return HandlerRunWorkflow
	case "start_workflows":
		return HandlerStartWorkflows
	case "wait_for_workflows":
		return HandlerWaitForWorkflows
	}
	return "__queuety_" + typ
}

// parseSteps decodes the _steps value of a state.
func parseSteps(state *phpjson.Object) ([]*stepDef, error) {
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
	out := make([]*stepDef, len(items))
	for i, it := range items {
		d, err := parseStep(it, i)
		if err != nil {
			return nil, fmt.Errorf("_steps[%d]: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

func parseStep(v any, index int) (*stepDef, error) {
	if s, ok := v.(string); ok { // legacy: a bare class string
		o := phpjson.NewObject()
		o.Set("type", "single")
		o.Set("name", strconv.Itoa(index))
		o.Set("class", s)
		v = o
	}
	o, ok := v.(*phpjson.Object)
	if !ok {
		return nil, fmt.Errorf("step is %T, not an object", v)
	}
	d := &stepDef{raw: o, Type: strField(o, "type"), Name: strField(o, "name")}
	if d.Type == "" {
		d.Type = "single"
	}
	if d.Name == "" {
		d.Name = strconv.Itoa(index)
	}
	switch d.Type {
	case "single":
		d.Class = strField(o, "class")
		if d.Class == "" {
			return nil, errors.New("single step has no class")
		}
	case "parallel":
		d.Branches = parallelBranches(o)
		if len(d.Branches) == 0 {
			return nil, errors.New("parallel step has no handlers")
		}
	case "delay":
		d.Delay = intValue(o, "delay_seconds")
	case "wait_for_signal":
		d.SignalNames = strList(o, "signal_names")
		if len(d.SignalNames) == 0 {
			if s := strField(o, "signal_name"); s != "" {
				d.SignalNames = []string{s}
			}
		}
		d.WaitMode = strField(o, "wait_mode")
		if d.WaitMode == "" {
			d.WaitMode = "all"
		}
		d.ResultKey = strField(o, "result_key")
		d.Timeout = time.Duration(intValue(o, "timeout_ms")) * time.Millisecond
	case "for_each":
		d.Class = strField(o, "class")
		d.ItemsKey = strField(o, "items_key")
		d.ResultKey = strField(o, "result_key")
		d.Mode = strField(o, "mode")
		if d.Mode == "" {
			d.Mode = ForEachAll
		}
		if d.Mode != ForEachAll && d.Mode != ForEachFirstSuccess && d.Mode != ForEachQuorum {
			return nil, fmt.Errorf("for_each step %q has unknown mode %q", d.Name, d.Mode)
		}
		d.Quorum = int(intValue(o, "quorum"))
		d.Reducer = handlerRef(o, "reducer", "reducer_class")
	case "repeat":
		d.RepeatMode = strField(o, "repeat_mode")
		if d.RepeatMode == "" {
			d.RepeatMode = "while"
		}
		d.Target = strField(o, "target_step")
		d.StateKey = strField(o, "state_key")
		d.Condition = handlerRef(o, "condition", "condition_class")
		d.MaxIterations = int(intValue(o, "max_iterations"))
	case "wait_for_workflows":
		d.WaitMode = strField(o, "wait_mode")
		if d.WaitMode == "" {
			d.WaitMode = WaitAll
		}
		d.ResultKey = strField(o, "result_key")
		d.Quorum = int(intValue(o, "quorum"))
	}
	return d, nil
}

// parallelBranches normalises "branches" (objects or strings) or
// "handlers" into branch objects with a "class".
func parallelBranches(o *phpjson.Object) []*phpjson.Object {
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
					h := strField(x, "class")
					if h == "" {
						h = strField(x, "handler")
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

// handlerRef reads a handler reference stored under one of keys: a name,
// or a {class, payload} object (Queuety's handler_definition).
func handlerRef(o *phpjson.Object, keys ...string) string {
	for _, k := range keys {
		switch v, _ := o.Get(k); h := v.(type) {
		case string:
			if s := strings.TrimSpace(h); s != "" {
				return s
			}
		case *phpjson.Object:
			if s := strField(h, "class"); s != "" {
				return s
			}
		}
	}
	return ""
}

func strField(o *phpjson.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// strList returns the non-empty strings of the list at k.
func strList(o *phpjson.Object, k string) []string {
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

// TimedOutKey is the state key a signal wait with a timeout sets: true when
// the timer won, false when the signal arrived first. name is the wait's
// result key, or its signal name when it has none.
func TimedOutKey(name string) string { return name + "_timed_out" }
