package advance

import (
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// runtimePrivateKeys are engine keys that belong to one run and are dropped
// when a workflow continues as new.
var runtimePrivateKeys = map[string]bool{
	"_wait": true, "_waiting_for_signal": true, "_for_each_steps": true, "_repeat_steps": true,
	"_workflow_groups": true, "_compensation_stack": true, "_workflow_counters": true,
}

// continueAsNew restarts the workflow at step 0 with a fresh state, inside
// the step's transaction.
func (sc *stepCtx) continueAsNew(next map[string]any) error {
	ctx, tx := sc.ctx, sc.tx
	fresh, err := workflowstate.UserObject("continue-as-new state", next)
	if err != nil {
		return sc.s.final(err)
	}
	in := sc.inputs()
	for _, k := range fresh.Keys() {
		if workflowstate.IsPrivateKey(k) {
			fresh.Delete(k)
		}
	}
	for _, k := range sc.state.Keys() {
		if workflowstate.IsPrivateKey(k) && !runtimePrivateKeys[k] {
			v, _ := sc.state.Get(k)
			if k == "_step_outputs" {
				v = []any{}
			}
			fresh.Set(k, v)
		}
	}
	if err := sc.s.completeJobs(ctx, tx, []int64{sc.row.ID}, sc.now); err != nil {
		return err
	}
	marker := phpjson.NewObject()
	marker.Set("_continue_as_new", true)
	for _, k := range workflowstate.SortedKeys(next) {
		marker.Set(k, next[k])
	}
	w := &Writes{events: []*driver.WorkflowEvent{sc.startedEvent(in), sc.completedEvent(driver.EventStepCompleted, in, marker, fresh)}}
	sc.wf.RunNumber = max(sc.wf.RunNumber, 1) + 1
	sc.s.core.StartRun(sc.wf, fresh, sc.now)
	sc.wf.Status = driver.WorkflowRunning
	w.logs = append(sc.logs(), debugLog(sc.wf, fresh, sc.now, map[string]any{"type": "continued_as_new", "run": int64(sc.wf.RunNumber)}))
	sc.state = fresh
	sc.s.advance(w, sc.wf, fresh, sc.steps, 0, sc.now)
	return w.Flush(ctx, tx)
}
