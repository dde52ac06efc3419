package workflowdef

import (
	"cmp"
	"math"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
)

// Repeat modes, stored as _steps[i].repeat_mode.
const (
	RepeatWhile = "while"
	RepeatUntil = "until"
)

// Defaults of a start_workflows step, as in Queuety.
const (
	DefaultStartedWorkflowsKey = "started_workflow_ids"
	DefaultPayloadKey          = "item"
)

// Spec is one validated step as the API describes it (a
// queuety.WorkflowStep), for Encode. Its child definitions and job options
// come already encoded, by the engine, which owns those shapes.
type Spec struct {
	Type         queuetytype.StepType
	Name         string
	Handler      string        // single; for_each: the branch handler
	Handlers     []string      // parallel
	Delay        time.Duration // delay, rounded up to whole seconds
	Signals      []string      // wait_for_signal, at least one
	HumanWait    string        // wait_for_signal: "", approval, decision or input
	Compensation string
	ResultKey    string
	Timeout      time.Duration // wait_for_signal; 0: none
	// MatchPayload and CorrelationKey are a wait_for_signal step's
	// matching rules; nil and "" for none.
	MatchPayload   *phpjson.Object
	CorrelationKey string
	Mode           string // for_each, wait_for_signal, wait_for_workflows
	ItemsKey       string // for_each, start_workflows
	Quorum         int
	Reducer        string
	RepeatMode     string
	Target         string
	StateKey       string
	// Expected is a repeat's expected value, normalised to the JSON tree
	// phpjson writes.
	Expected         any
	Condition        string
	MaxIterations    int
	PayloadKey       string
	InheritState     bool
	GroupKey         string
	WorkflowIDs      []int64
	WorkflowIDKey    string
	WorkflowGroupKey string
	// Child is the run_workflow step's child: its name, encoded steps,
	// queue, priority and max attempts.
	Child *Child
	// ChildRuntime is the start_workflows step's runtime definition
	// (Queuety's build_runtime_definition shape).
	ChildRuntime *phpjson.Object
	// Options are the step's job-option keys, written after its own keys.
	Options *phpjson.Object
}

// Child is what a run_workflow step keeps of its child definition.
type Child struct {
	Name        string
	Steps       []any // encoded _steps entries
	Queue       string
	Priority    queuetytype.Priority
	MaxAttempts int
}

// JobOptionsSet reports whether any job option is set. Only single,
// parallel and for_each steps take them.
func JobOptionsSet(o queuetytype.JobSpec) bool {
	return o.Queue != "" || o.PrioritySet || o.Priority != 0 || o.Delay != 0 || o.MaxAttempts != 0 ||
		o.Backoff != nil || o.DependsOn != 0 || o.Unique || o.Timeouts != (queuetytype.ActivityTimeouts{}) ||
		!o.Resources.IsZero()
}

// Encode writes s in Queuety's _steps shape, the keys in the order of
// Queuety's WorkflowBuilder::build_steps, followed by s.Options.
func Encode(s *Spec) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("type", string(s.Type))
	o.Set("name", s.Name)
	switch s.Type {
	case queuetytype.StepSingle:
		o.Set("class", s.Handler)
		if s.Compensation != "" { // Queuety writes the key on these two only when set
			o.Set("compensation", s.Compensation)
		}
	case queuetytype.StepParallel:
		hs := make([]any, len(s.Handlers))
		for i, h := range s.Handlers {
			hs[i] = h
		}
		o.Set("handlers", hs)
		if s.Compensation != "" {
			o.Set("compensation", s.Compensation)
		}
	case queuetytype.StepDelay:
		o.Set("delay_seconds", int64(math.Ceil(s.Delay.Seconds())))
		o.Set("compensation", NilIfEmpty(s.Compensation))
	case queuetytype.StepWaitForSignal:
		encodeSignalWait(s, o)
	default:
		encodeComposite(s, o)
	}
	if s.Options != nil {
		for _, k := range s.Options.Keys() {
			v, _ := s.Options.Get(k)
			o.Set(k, v)
		}
	}
	return o
}

func encodeSignalWait(s *Spec, o *phpjson.Object) {
	names := s.Signals
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = n
	}
	o.Set("signal_name", names[0])
	o.Set("signal_names", list)
	o.Set("wait_mode", cmp.Or(s.Mode, queuetytype.WaitAll))
	o.Set("result_key", NilIfEmpty(s.ResultKey))
	if s.MatchPayload != nil && s.MatchPayload.Len() > 0 {
		o.Set("match_payload", s.MatchPayload)
	} else {
		o.Set("match_payload", []any{}) // PHP's empty array
	}
	o.Set("correlation_key", NilIfEmpty(s.CorrelationKey))
	o.Set("human_wait", NilIfEmpty(s.HumanWait))
	var decisions any
	if s.HumanWait == "decision" {
		m := phpjson.NewObject()
		m.Set(names[0], "approved")
		m.Set(names[1], "rejected")
		decisions = m
	}
	o.Set("decision_map", decisions)
	o.Set("compensation", NilIfEmpty(s.Compensation))
	if s.Timeout > 0 {
		o.Set("timeout_ms", s.Timeout.Milliseconds())
	}
}

// encodeComposite writes the keys after type and name of a for_each,
// repeat, run_workflow, start_workflows or wait_for_workflows step.
func encodeComposite(s *Spec, o *phpjson.Object) {
	switch s.Type {
	case queuetytype.StepForEach:
		o.Set("items_key", s.ItemsKey)
		o.Set("class", s.Handler)
		o.Set("result_key", NilIfEmpty(s.ResultKey))
		o.Set("mode", s.Mode)
		o.Set("quorum", PositiveOrNil(s.Quorum))
		o.Set("reducer_class", NilIfEmpty(s.Reducer))
	case queuetytype.StepRepeat:
		o.Set("repeat_mode", s.RepeatMode)
		o.Set("target_step", s.Target)
		o.Set("state_key", NilIfEmpty(s.StateKey))
		o.Set("expected", s.Expected)
		o.Set("condition_class", NilIfEmpty(s.Condition))
		o.Set("max_iterations", PositiveOrNil(s.MaxIterations))
	case queuetytype.StepRunWorkflow:
		c := s.Child
		o.Set("workflow_name", c.Name)
		o.Set("workflow_steps", c.Steps)
		o.Set("workflow_queue", cmp.Or(c.Queue, queuetytype.DefaultQueue))
		o.Set("workflow_priority", int64(c.Priority))
		o.Set("workflow_max_attempts", int64(cmp.Or(c.MaxAttempts, queuetytype.DefaultMaxAttempts)))
	case queuetytype.StepStartWorkflows:
		o.Set("items_key", s.ItemsKey)
		o.Set("result_key", s.ResultKey)
		o.Set("payload_key", s.PayloadKey)
		o.Set("inherit_state", s.InheritState)
		o.Set("group_key", NilIfEmpty(s.GroupKey))
		o.Set("workflow_definition", s.ChildRuntime)
	case queuetytype.StepWaitForWorkflows:
		var ids any
		if s.WorkflowIDs != nil {
			list := make([]any, len(s.WorkflowIDs))
			for i, id := range s.WorkflowIDs {
				list[i] = id
			}
			ids = list
		}
		o.Set("workflow_ids", ids)
		o.Set("workflow_id_key", NilIfEmpty(s.WorkflowIDKey))
		o.Set("workflow_group_key", NilIfEmpty(s.WorkflowGroupKey))
		o.Set("wait_mode", s.Mode)
		o.Set("quorum", PositiveOrNil(s.Quorum))
		o.Set("result_key", NilIfEmpty(s.ResultKey))
	}
	o.Set("compensation", NilIfEmpty(s.Compensation))
}

// NilIfEmpty is s, or nil (JSON null) when s is empty: how Queuety writes
// an unset optional string.
func NilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// PositiveOrNil is n as a JSON integer, or nil (null) when n is not
// positive: how Queuety writes an unset optional count.
func PositiveOrNil(n int) any {
	if n > 0 {
		return int64(n)
	}
	return nil
}
