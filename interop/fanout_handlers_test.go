package interop_test

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// The handlers of interop/php/handlers.php, as Go handlers registered under
// the class names Queuety stores (jobs.handler, _steps[i].class,
// reducer_class, condition_class). Each returns what its PHP class returns
// for the same input.
const (
	hPlanItems      = `QueuetyGoInterop\PlanItems`
	hDoubleItem     = `QueuetyGoInterop\DoubleItem`
	hSumReducer     = `QueuetyGoInterop\SumReducer`
	hIncrement      = `QueuetyGoInterop\Increment`
	hCounterReached = `QueuetyGoInterop\CounterReached`
	hChildWork      = `QueuetyGoInterop\ChildWork`
	hFailStep       = `QueuetyGoInterop\FailStep`
	hFinish         = `QueuetyGoInterop\Finish`
)

// intKey is handlers.php's int_key(): the integer value of a state key, or
// def when it is missing or not numeric.
func intKey(s queuety.State, key string, def int64) int64 {
	if n, ok := s.Int(key); ok {
		return n
	}
	switch v := s[key].(type) {
	case float64:
		return int64(v)
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return int64(f)
		}
	}
	return def
}

// planItem is one item PlanItems returns, as a struct so its keys keep
// PHP's order ({"n":1,"fail":true}): the engine copies the item's bytes
// into the branch job's payload.
type planItem struct {
	N    int64 `json:"n"`
	Fail bool  `json:"fail,omitempty"`
}

// planItems is PlanItems::handle.
func planItems(s queuety.State) queuety.State {
	count := intKey(s, "count", 3)
	fail := map[int64]bool{}
	if list, ok := s["fail_items"].([]any); ok {
		for _, v := range list {
			if n, ok := (queuety.State{"v": v}).Int("v"); ok {
				fail[n] = true
			}
		}
	}
	items := []planItem{}
	for n := int64(1); n <= count; n++ {
		items = append(items, planItem{N: n, Fail: fail[n]})
	}
	return queuety.State{"items": items}
}

// doubleItem is DoubleItem::handle_item.
func doubleItem(item any, index int) (queuety.State, error) {
	var it struct {
		N    json.Number `json:"n"`
		Fail bool        `json:"fail"`
	}
	b, _ := json.Marshal(item)
	_ = json.Unmarshal(b, &it)
	n, _ := strconv.ParseFloat(it.N.String(), 64)
	if it.Fail {
		return nil, &phpException{"RuntimeException", "item " + strconv.FormatInt(int64(n), 10) + " failed"}
	}
	return queuety.State{"value": int64(n) * 2, "index": index}, nil
}

// sumReducer is SumReducer::reduce.
func sumReducer(r queuetytype.ForEachResult) queuety.State {
	var sum int64
	for _, b := range r.Results {
		sum += intKey(b.Output, "value", 0)
	}
	return queuety.State{"sum": sum, "count": len(r.Results)}
}

func increment(s queuety.State) queuety.State {
	return queuety.State{"counter": intKey(s, "counter", 0) + 1}
}

func counterReached(s queuety.State) bool {
	return intKey(s, "counter", 0) >= intKey(s, "limit", 3)
}

func childWork(s queuety.State) queuety.State {
	return queuety.State{"child_value": intKey(s, "n", 0) * 10, "child_done": true}
}

var errChildFailed = &phpException{"RuntimeException", "child failed"}

// fanGate is called at the start of every step and branch handler; an
// error stops the handler before it records or does anything.
type fanGate func(ctx context.Context) error

// registerFan registers every handler of the interop scenarios on w. The
// step and branch handlers record their input in rec (when not nil) after
// gate let them through. only, when not empty, limits the step and branch
// handlers registered to those names (a worker does not claim jobs it has
// no handler for); the reducer and the condition are always registered.
func registerFan(w *worker.Worker, rec *recorder, gate fanGate, only ...string) {
	want := func(name string) bool {
		if len(only) == 0 {
			return true
		}
		for _, o := range only {
			if o == name {
				return true
			}
		}
		return false
	}
	add := func(name string, s queuety.State) {
		if rec != nil {
			rec.add(name, s)
		}
	}
	steps := map[string]func(queuety.State) (queuety.State, error){
		hPlanItems:  func(s queuety.State) (queuety.State, error) { return planItems(s), nil },
		hIncrement:  func(s queuety.State) (queuety.State, error) { return increment(s), nil },
		hChildWork:  func(s queuety.State) (queuety.State, error) { return childWork(s), nil },
		hFailStep:   func(queuety.State) (queuety.State, error) { return nil, errChildFailed },
		hFinish:     func(queuety.State) (queuety.State, error) { return queuety.State{"finished": true}, nil },
		hDoubleItem: nil,
	}
	for name, body := range steps {
		if !want(name) {
			continue
		}
		if name == hDoubleItem {
			w.HandleForEach(name, func(ctx context.Context, s queuety.State, item any, index int) (queuety.State, error) {
				if gate != nil {
					if err := gate(ctx); err != nil {
						return nil, err
					}
				}
				add(name, s)
				return doubleItem(item, index)
			})
			continue
		}
		w.HandleStep(name, func(ctx context.Context, s queuety.State) (queuety.State, error) {
			if gate != nil {
				if err := gate(ctx); err != nil {
					return nil, err
				}
			}
			add(name, s)
			return body(s)
		})
	}
	w.HandleReducer(hSumReducer, func(_ context.Context, _ queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		return sumReducer(r), nil
	})
	w.HandleRepeatCondition(hCounterReached, func(_ context.Context, s queuety.State) (bool, error) {
		return counterReached(s), nil
	})
}

// The scenarios of interop/php/lib.php (and the fixtures), built with the
// Go builder: the same names, handlers, step names and options.

func feBuilder(name string, opts ...builder.StepOption) *builder.Builder {
	return builder.Workflow(name).Then(hPlanItems).
		ForEach("items", hDoubleItem, append([]builder.StepOption{builder.Name("double")}, opts...)...).
		Then(hFinish)
}

func goScenario(name string) *builder.Builder {
	switch name {
	case "fe_all":
		return feBuilder("fe_all", builder.ResultKey("doubled"))
	case "fe_reduce":
		return feBuilder("fe_reduce", builder.ResultKey("summary"), builder.Reducer(hSumReducer))
	case "fe_first":
		return feBuilder("fe_first", builder.ResultKey("doubled"), builder.FirstSuccess())
	case "fe_quorum":
		return feBuilder("fe_quorum", builder.ResultKey("doubled"), builder.Quorum(2))
	case "repeat_until":
		return builder.Workflow(name).Then(hIncrement, builder.Name("inc")).
			RepeatUntil("inc", builder.StateIs("counter", 3)).Then(hFinish)
	case "repeat_while_cond":
		return builder.Workflow(name).Then(hIncrement, builder.Name("inc")).
			RepeatUntil("inc", builder.ConditionNamed(hCounterReached), builder.MaxIterations(5)).Then(hFinish)
	case "repeat_max":
		return builder.Workflow(name).Then(hIncrement, builder.Name("inc")).
			RepeatWhile("inc", builder.StateIs("keep_going", true), builder.MaxIterations(2)).Then(hFinish)
	case "child":
		return builder.Workflow(name).Then(hPlanItems).
			RunWorkflow("child_wf", builder.Workflow("child_wf").Then(hChildWork)).Then(hFinish)
	case "child_fail":
		return builder.Workflow(name).Then(hPlanItems).
			RunWorkflow("child_fail_wf", builder.Workflow("child_fail_wf").Then(hFailStep)).Then(hFinish)
	case "start_group":
		return builder.Workflow(name).Then(hPlanItems).
			StartWorkflows("items", builder.Workflow("kid").Then(hChildWork), builder.ResultKey("child_ids"), builder.Group("kids")).
			WaitForWorkflowGroup("kids", builder.ResultKey("kid_results")).
			Then(hFinish)
	case "wait_ids":
		return builder.Workflow(name).WaitForWorkflowsIn("dep_ids", builder.Any(), builder.ResultKey("winner")).Then(hFinish)
	case "wait_dep":
		return builder.Workflow(name).Then(hChildWork)
	}
	panic("unknown scenario " + name)
}

// defaultPayload is the driver's default initial state of a scenario.
func defaultPayload(name string) queuety.State {
	switch name {
	case "fe_all", "fe_reduce", "fe_first", "fe_quorum", "start_group":
		return queuety.State{"count": 3}
	case "repeat_until", "wait_ids":
		return queuety.State{}
	case "repeat_while_cond":
		return queuety.State{"limit": 3}
	case "repeat_max":
		return queuety.State{"keep_going": true}
	case "child", "child_fail":
		return queuety.State{"n": 4}
	}
	panic("unknown scenario " + name)
}

// feBuilderNamed is the for_each workflow of the m_* fixtures: name,
// result key, and mode "quorum" (quorum 2, SumReducer) or "first".
func feBuilderNamed(name, resultKey, mode string) *builder.Builder {
	opts := []builder.StepOption{builder.ResultKey(resultKey)}
	switch mode {
	case "quorum":
		opts = append(opts, builder.Quorum(2), builder.Reducer(hSumReducer))
	case "first":
		opts = append(opts, builder.FirstSuccess())
	}
	return feBuilder(name, opts...)
}

// startGroupKidsQueue is start_group as p_start_workflows_group.json
// dispatched it: the children on queue kids.
func startGroupKidsQueue() *builder.Builder {
	return builder.Workflow("start_group").Then(hPlanItems).
		StartWorkflows("items", builder.Workflow("kid").OnQueue("kids").Then(hChildWork), builder.ResultKey("child_ids"), builder.Group("kids")).
		WaitForWorkflowGroup("kids", builder.ResultKey("kid_results")).
		Then(hFinish)
}
