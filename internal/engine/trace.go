package engine

import (
	"context"
	"sort"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// TraceWorkflow returns a workflow's trace bundle (Queuety's
// workflow_trace): the workflow, its events grouped by step (each group
// with step_index, step_name, step_type, handler, its events and the latest
// of its step_completed, step_failed, workflow_waiting and
// workflow_resumed events), and the events, jobs, logs, artifacts, chunks,
// signals and wait dependencies, in ExportWorkflow's row shapes.
func (e *Engine) TraceWorkflow(ctx context.Context, id int64) (*phpjson.Object, error) {
	exp, err := e.ExportWorkflow(ctx, id)
	if err != nil {
		return nil, err
	}
	evV, _ := exp.Get("events")
	events, _ := listOf(evV)
	groups := map[int64]*phpjson.Object{}
	for _, ev := range events {
		o, ok := ev.(*phpjson.Object)
		if !ok {
			continue
		}
		idx := intValue(o, "step_index")
		g := groups[idx]
		if g == nil {
			g = phpjson.NewObject()
			g.Set("step_index", idx)
			for _, k := range []string{"step_name", "step_type", "handler"} {
				v, _ := o.Get(k)
				g.Set(k, v)
			}
			g.Set("events", []any{})
			groups[idx] = g
		}
		list, _ := g.Get("events")
		g.Set("events", append(list.([]any), o))
		switch strField(o, "event") {
		case "step_completed", "step_failed", "workflow_waiting", "workflow_resumed":
			g.Set("latest", o)
		}
	}
	idxs := make([]int64, 0, len(groups))
	for i := range groups {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	steps := make([]any, len(idxs))
	for i, idx := range idxs {
		steps[i] = groups[idx]
	}
	out := phpjson.NewObject()
	for _, k := range []string{"workflow", "steps", "events", "jobs", "logs", "artifacts", "chunks", "signals", "wait_dependencies"} {
		if k == "steps" {
			out.Set(k, steps)
			continue
		}
		v, _ := exp.Get(k)
		out.Set(k, v)
	}
	return out, nil
}
