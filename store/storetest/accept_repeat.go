package storetest

// The repeat scenarios: repeat_until and repeat_while loops, the
// max_iterations limit, a failing or missing repeat condition, and a worker
// without the condition deferring the repeat.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Repeat/UntilStateKey", testRepeatUntil)
	register("Repeat/WhileCondition", testRepeatWhileCondition)
	register("Repeat/MaxIterationsFailsWorkflow", testRepeatMaxIterations)
	register("Repeat/ConditionErrorFailsWorkflow", testRepeatConditionError)
	register("Repeat/ConditionNotRegistered", testRepeatConditionMissing)
	register("Repeat/WorkerWithoutConditionDefers", testRepeatConditionDefer)
}

// repeatWorker runs inc -> repeat -> done, with inc adding 1 to "counter".
func (e *Env) repeatWorker(incs *atomic.Int64, dones *atomic.Int64) *worker.Worker {
	w := e.Worker(nil, worker.Concurrency(1))
	w.HandleStep("increment", func(_ context.Context, s queuety.State) (queuety.State, error) {
		incs.Add(1)
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	})
	w.HandleStep("done", func(_ context.Context, s queuety.State) (queuety.State, error) {
		dones.Add(1)
		return queuety.State{"done": true}, nil
	})
	return w
}

// repeatStepsJSON returns the stored _repeat_steps as JSON.
func (e *Env) repeatStepsJSON(id int64) string {
	e.T.Helper()
	v, ok := e.rawState(id).Get("_repeat_steps")
	require.True(e.T, ok, "_repeat_steps in the state")
	return string(workflowstate.EncodeJSON(v))
}

func testRepeatUntil(t *testing.T, e *Env) {
	b := builder.Workflow("count_to_three").
		Then("increment", builder.Name("inc")).
		RepeatUntil("inc", builder.StateIs("counter", 3)).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	var incs, dones atomic.Int64
	e.Drain(e.repeatWorker(&incs, &dones))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(3), e.State(id)["counter"], "counter")
	assert.Equal(t, int64(3), incs.Load(), "increment calls")
	assert.Equal(t, int64(1), dones.Load(), "done calls")
	assert.Equal(t, `{"1":{"iterations":2}}`, e.repeatStepsJSON(id), "_repeat_steps")
	assert.Len(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerRepeat}), 3, "repeat placeholder jobs")
	d := e.describe(id)
	require.NotNil(t, d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, int64(2), *d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, "repeat", d.Steps[1].Type, "describe: step type")
}

func testRepeatWhileCondition(t *testing.T, e *Env) {
	b := builder.Workflow("paginate").
		Then("increment", builder.Name("fetch")).
		RepeatWhile("fetch", builder.ConditionNamed("more_pages")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0, "pages": 4})
	var incs, dones, checks atomic.Int64
	w := e.repeatWorker(&incs, &dones)
	w.HandleRepeatCondition("more_pages", func(_ context.Context, s queuety.State) (bool, error) {
		checks.Add(1)
		n, _ := s.Int("counter")
		pages, _ := s.Int("pages")
		return n < pages, nil
	})
	e.Drain(w)
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "status (error %q)", wf.ErrorMessage)
	assert.Equal(t, int64(4), e.State(id)["counter"], "counter")
	assert.Equal(t, int64(4), checks.Load(), "condition calls")
	assert.Equal(t, int64(1), dones.Load(), "done calls")
	assert.Equal(t, `{"1":{"iterations":3}}`, e.repeatStepsJSON(id), "_repeat_steps")
	d := e.describe(id)
	require.NotNil(t, d.Steps[1].Iterations, "describe: iterations")
	assert.Equal(t, int64(3), *d.Steps[1].Iterations, "describe: iterations")
}

func testRepeatMaxIterations(t *testing.T, e *Env) {
	b := builder.Workflow("runaway").
		Then("increment", builder.Name("inc")).
		RepeatUntil("inc", builder.StateIs("counter", 100), builder.MaxIterations(2), builder.Name("loop")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	var incs, dones atomic.Int64
	e.Drain(e.repeatWorker(&incs, &dones))
	wf := e.Workflow(id)
	require.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, "exceeded max_iterations of 2", "error")
	assert.Contains(t, wf.ErrorMessage, "'loop'", "error names the step")
	assert.Equal(t, int64(3), incs.Load(), "increment calls (the first run and two iterations)")
	assert.Equal(t, int64(0), dones.Load(), "done calls")
	assert.Equal(t, 1, wf.CurrentStep, "failed on the repeat step")
	last := e.Jobs(driver.JobFilter{WorkflowID: id, Handler: engine.HandlerRepeat})
	require.Len(t, last, 3, "repeat jobs")
	buried := 0
	for _, j := range last {
		if j.Status == queuetytype.JobBuried {
			buried++
			assert.Equal(t, 1, j.Attempts, "the breach is final")
			assert.True(t, strings.Contains(j.ErrorMessage, "max_iterations"), "buried repeat job error %q", j.ErrorMessage)
		}
	}
	assert.Equal(t, 1, buried, "buried repeat jobs")
}

// repeatConditionFailure runs inc -> repeat_while(cond) with the repeat
// step recorded by hand with reg, and checks that the workflow failed with
// an error containing want.
func (e *Env) repeatConditionFailure(reg *queuety.Registry, want string) {
	t := e.T
	t.Helper()
	b := builder.Workflow("conditional").MaxAttempts(1).
		Then("increment", builder.Name("inc")).
		RepeatWhile("inc", builder.ConditionNamed("cond"), builder.Name("again")).
		Then("done")
	id := e.startB(b, queuety.State{"counter": 0})
	inc := e.ClaimOne("increment")
	require.NoError(t, e.finish(inc[0], queuety.State{"counter": 1}, nil, nil))
	rep := e.ClaimOne(engine.HandlerRepeat)
	done := make(chan error, 1)
	go func() { done <- e.finish(rep[0], nil, nil, clientseam.Functions(reg)) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "recording the repeat step did not return")
	}
	assert.NoError(t, err, "recording a repeat whose condition fails must not be a database error")
	wf := e.Workflow(id)
	assert.Equal(t, queuetytype.WorkflowFailed, wf.Status, "status")
	assert.Contains(t, wf.ErrorMessage, want, "workflow error")
	j := e.Job(rep[0].Job.ID)
	assert.NotEqual(t, queuetytype.JobProcessing, j.Status, "repeat job left processing")
	assert.Empty(t, e.Jobs(driver.JobFilter{WorkflowID: id, Handler: "done"}), "next step enqueued")
}

func testRepeatConditionError(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleRepeatCondition("cond", func(context.Context, queuety.State) (bool, error) {
		return false, errors.New("condition backend down")
	})
	e.repeatConditionFailure(reg, "condition backend down")
}

func testRepeatConditionMissing(t *testing.T, e *Env) {
	e.repeatConditionFailure(queuety.NewRegistry(), "Repeat condition class 'cond' not found")
}

// testRepeatConditionDefer: a worker without a repeat step's condition
// defers the repeat placeholder; one that has it decides the repeat.
func testRepeatConditionDefer(t *testing.T, e *Env) {
	b := builder.Workflow("deferred_repeat").Then("inc", builder.Name("inc")).RepeatUntil("inc", builder.ConditionNamed("enough"))
	id := e.startB(b, nil)
	inc := func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("counter")
		return queuety.State{"counter": n + 1}, nil
	}
	lacking := e.Worker(nil)
	lacking.HandleStep("inc", inc)
	e.Drain(lacking)
	placeholder := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "__queuety_repeat"})
	assert.Equal(t, queuetytype.JobPending, placeholder.Status, "repeat placeholder status")
	assert.Zero(t, placeholder.Attempts, "repeat placeholder attempts")
	full := e.Worker(nil)
	full.HandleStep("inc", inc)
	full.HandleRepeatCondition("enough", func(_ context.Context, s queuety.State) (bool, error) {
		n, _ := s.Int("counter")
		return n >= 2, nil
	})
	e.Clock.Advance(worker.DeferDelay)
	e.Drain(full)
	assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(id).Status, "status")
	assert.Equal(t, int64(2), e.State(id)["counter"], "counter")
}
