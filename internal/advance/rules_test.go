package advance

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

var now = time.Date(2031, 4, 5, 6, 7, 0, 0, time.UTC)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// final marks an error final, as the engine's NonRetryable does.
type final struct{ error }

func (final) NonRetryable() bool { return true }
func (f final) Unwrap() error    { return f.error }

// fakeCore is a job core that records what the rules asked of it; the
// transitions that write rows write them to the store, as the engine's do.
type fakeCore struct {
	store    driver.Store
	handlers map[string]bool // the callback handlers this process's workers run
	workers  bool            // whether the process has workers
	buried   map[int64]string
}

func (c *fakeCore) NonRetryable(err error) error { return final{err} }

func (c *fakeCore) LockWorkflow(ctx context.Context, id int64, fn LockedFunc) error {
	return c.store.InTx(ctx, func(tx driver.Tx) error {
		wf, err := tx.WorkflowGet(ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		state, err := workflowstate.DecodeObject("workflow state", wf.State)
		if err != nil {
			return err
		}
		steps, err := workflowdef.Parse(state)
		if err != nil {
			return err
		}
		return fn(tx, wf, state, steps, now)
	})
}

func (c *fakeCore) BuryJob(ctx context.Context, tx driver.Tx, j *driver.Job, msg string, _ time.Time) error {
	if c.buried == nil {
		c.buried = map[int64]string{}
	}
	c.buried[j.ID] = msg
	j.Status, j.ErrorMessage = driver.JobBuried, msg
	return tx.JobUpdate(ctx, j)
}

func (c *fakeCore) Knows(handler string) (bool, bool) { return c.handlers[handler], c.workers }

func (c *fakeCore) Expired(*driver.Workflow, time.Time) driver.TimeoutKind { return "" }

func (c *fakeCore) StartRun(wf *driver.Workflow, _ *phpjson.Object, now time.Time) {
	wf.RunStartedAt = now
}

func (c *fakeCore) ScheduleDeadlines(*driver.Job, queuetytype.ActivityTimeouts, time.Time) {}

func (c *fakeCore) HandlerDefinition(class string) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("class", class)
	o.Set("payload", []any{})
	return o
}

func (c *fakeCore) Child(ChildSpec) (PrepareChild, error) {
	return nil, errors.New("no children in these tests")
}

// service returns a Service on core (and its store, nil for the rules
// that touch no row).
func service(core *fakeCore) *Service {
	return New(core.store, Config{Clock: fixedClock{now}, Logger: slog.New(slog.DiscardHandler), Core: core,
		MaxForEachItems: 10, DeadlineHandoff: time.Minute, CallbackAttempts: 5,
		CallbackRuntime: func() *phpjson.Object { return phpjson.NewObject() }})
}

// fakeAttempt is a step attempt with no trace and no user functions
// unless funcs is set.
type fakeAttempt struct {
	job     *driver.Job
	funcs   Functions
	outcome observe.Outcome
	payload *phpjson.Object
}

func (a *fakeAttempt) Job() *driver.Job          { return a.job }
func (a *fakeAttempt) Owns(row *driver.Job) bool { return row.ID == a.job.ID }
func (a *fakeAttempt) ClaimedAt() time.Time      { return now }
func (a *fakeAttempt) StartedAt() time.Time      { return now }
func (a *fakeAttempt) Duration() time.Duration   { return time.Second }
func (a *fakeAttempt) Funcs() Functions          { return a.funcs }
func (a *fakeAttempt) StartedLog() *driver.LogEntry {
	return &driver.LogEntry{Event: driver.LogStarted}
}
func (a *fakeAttempt) Artifacts() []byte                                         { return nil }
func (a *fakeAttempt) TraceCompleted(*driver.WorkflowEvent)                      {}
func (a *fakeAttempt) TraceItemCompleted(*driver.WorkflowEvent, *phpjson.Object) {}
func (a *fakeAttempt) TraceFailed(*driver.WorkflowEvent)                         {}
func (a *fakeAttempt) SetOutcome(o observe.Outcome)                              { a.outcome = o }
func (a *fakeAttempt) Payload() *phpjson.Object                                  { return a.payload }

func decode(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	o, err := workflowstate.DecodeObject("test", []byte(s))
	require.NoError(t, err)
	return o
}

// A step job takes the step's queue, priority and attempts before the
// workflow's, its resources from the step or its resources object, and
// a parallel step makes one job per branch with the branch's handler.
func TestStepJobsResolveOptionsFromStepThenWorkflow(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, `{"_queue":"wfq","_priority":2,"_max_attempts":4,"_steps":[
		{"type":"single","class":"A","queue":"stepq","max_attempts":7,"resources":{"concurrency_group":" g ","concurrency_limit":3,"cost_units":5}},
		{"type":"parallel","branches":[{"class":"B1"},{"class":"B2","queue":"bq"}],"handlers":["B1","B2"]},
		{"type":"delay","delay_seconds":30}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	wf := &driver.Workflow{ID: 9}

	jobs := s.stepJobs(wf, state, steps, 0, now)
	require.Len(t, jobs, 1)
	j := jobs[0]
	assert.Equal(t, "stepq", j.Queue)
	assert.Equal(t, "A", j.Handler)
	assert.Equal(t, 7, j.MaxAttempts)
	assert.Equal(t, "g", j.ConcurrencyGroup, "the group is trimmed")
	assert.Equal(t, 3, j.ConcurrencyLimit)
	assert.Equal(t, 5, j.CostUnits)
	assert.Equal(t, int64(9), j.WorkflowID)
	assert.Equal(t, 0, *j.StepIndex)

	jobs = s.stepJobs(wf, state, steps, 1, now)
	require.Len(t, jobs, 2, "one job per branch")
	assert.Equal(t, []string{"B1", "B2"}, []string{jobs[0].Handler, jobs[1].Handler})
	assert.Equal(t, []string{"wfq", "bq"}, []string{jobs[0].Queue, jobs[1].Queue})
	assert.Equal(t, 4, jobs[0].MaxAttempts, "the workflow's attempts when the step sets none")
	assert.EqualValues(t, 2, jobs[0].Priority)

	jobs = s.stepJobs(wf, state, steps, 2, now)
	require.Len(t, jobs, 1)
	assert.Equal(t, workflowdef.HandlerDelay, jobs[0].Handler)
	assert.Equal(t, now.Add(30*time.Second), jobs[0].AvailableAt, "a delay step's placeholder is due after the delay")
	assert.Equal(t, 0, jobs[0].CostUnits, "a placeholder costs nothing")
}

// A concurrency limit without a group is dropped, and a blank group is
// none.
func TestStepResourcesDropALimitWithoutGroup(t *testing.T) {
	r := stepResources(decode(t, `{"concurrency_group":"  ","concurrency_limit":3}`), 1)
	assert.Equal(t, resources{cost: 1}, r)
	r = stepResources(decode(t, `{"concurrency_group":"g","concurrency_limit":99999,"resources":{"cost_units":0}}`), 1)
	assert.Equal(t, resources{group: "g", limit: 65535, cost: 0}, r)
}

// A repeat step jumps back while its condition holds, counts its
// iterations, and fails the workflow for good past max_iterations.
func TestRepeatCountsIterationsAndStopsAtTheLimit(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, `{"again":true,"_steps":[{"type":"single","class":"A","name":"a"},
		{"type":"repeat","name":"loop","target_step":"a","repeat_mode":"while","state_key":"again","max_iterations":2}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	wf := &driver.Workflow{ID: 1, CurrentStep: 1}
	sc := &stepCtx{s: s, wf: wf, state: state, steps: steps, step: steps[1], at: &fakeAttempt{job: &driver.Job{}}, now: now}

	for i := 1; i <= 2; i++ {
		out, err := sc.repeatOutput()
		require.NoError(t, err)
		target, _ := out.Get("_next_step")
		assert.Equal(t, "a", target, "iteration %d jumps back", i)
		workflowstate.MergeOutput(state, out, 1)
		assert.EqualValues(t, i, workflowstate.RepeatIterations(state, 1))
	}
	_, err = sc.repeatOutput()
	require.Error(t, err)
	assert.True(t, isFinal(err), "passing max_iterations fails without retries")
	var ce *workflowstate.ConstraintError
	assert.ErrorAs(t, err, &ce)

	state.Set("again", false)
	out, err := sc.repeatOutput()
	require.NoError(t, err)
	_, jumps := out.Get("_next_step")
	assert.False(t, jumps, "the repeat falls through once the condition fails")
}

// A repeat condition no worker function answers fails the attempt (for
// another worker), not the workflow.
func TestRepeatWithoutItsConditionFailsTheAttempt(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, `{"_steps":[{"type":"single","class":"A","name":"a"},
		{"type":"repeat","name":"loop","target_step":"a","repeat_mode":"until","condition":"Done"}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	sc := &stepCtx{s: s, wf: &driver.Workflow{ID: 1, CurrentStep: 1}, state: state, steps: steps, step: steps[1],
		at: &fakeAttempt{job: &driver.Job{}}, now: now}
	_, err = sc.repeatOutput()
	var af *AttemptFailure
	require.ErrorAs(t, err, &af)
	assert.False(t, isFinal(err))
	assert.Contains(t, err.Error(), "Repeat condition class 'Done' not found")
}

// A for-each step over more items than the engine's default cap fails
// for good, unless the workflow sets its own budget.
func TestForEachItemsCapUnlessBudget(t *testing.T) {
	s := service(&fakeCore{}) // MaxForEachItems: 10
	state := decode(t, `{"_steps":[{"type":"for_each","name":"each","class":"A","items_key":"items"}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	sc := &stepCtx{s: s, wf: &driver.Workflow{ID: 1}, state: state, steps: steps, step: steps[0], now: now}
	assert.NoError(t, sc.checkForEachItems(10))
	err = sc.checkForEachItems(11)
	require.Error(t, err)
	assert.True(t, isFinal(err))
	assert.Contains(t, err.Error(), "exceeding the default cap of 10")

	state.Set("_workflow_budget", decode(t, `{"max_for_each_items":20}`))
	assert.NoError(t, sc.checkForEachItems(11), "the workflow's budget replaces the cap")
	assert.Error(t, sc.checkForEachItems(21))
}

// Compensations run on cancel always, on failure and deadline only when
// the workflow asks, and never twice; each step with a handler pushes its
// state as it was after the step.
func TestCompensationStackAndWhenItRuns(t *testing.T) {
	s := service(&fakeCore{})
	state := decode(t, `{"x":1,"_steps":[{"type":"single","class":"A","compensation":"UndoA"},{"type":"single","class":"B"}]}`)
	steps, err := workflowdef.Parse(state)
	require.NoError(t, err)
	s.pushCompensation(state, steps[0], 0)
	s.pushCompensation(state, steps[1], 1) // no handler: nothing pushed
	assert.Equal(t, 1, CompensationCount(state))
	raw, _ := state.Get("_compensation_stack")
	stack, _ := workflowstate.ListOf(raw)
	entry := stack[0].(*phpjson.Object)
	assert.Equal(t, "UndoA", strField(entry, "handler"))
	snap, _ := entry.Get("state")
	assert.JSONEq(t, `{"x":1}`, string(workflowstate.EncodeJSON(snap)), "the public state after the step")

	assert.True(t, ShouldCompensate(state, CompensateCancel))
	assert.False(t, ShouldCompensate(state, CompensateFailure))
	state.Set("_compensate_on_failure", true)
	assert.True(t, ShouldCompensate(state, CompensateDeadline))
	state.Set("_compensation_next", int64(0))
	assert.False(t, ShouldCompensate(state, CompensateCancel), "not while they run")
	state.Delete("_compensation_next")
	state.Set("_compensated", true)
	assert.False(t, ShouldCompensate(state, CompensateCancel), "never twice")
}

// A process leaves an expired workflow's expiry to others only for its
// execution deadline, while running, within the handoff, and when it
// has workers but none with the deadline handler.
func TestLeaveExpiryOnlyForAHandlerThisProcessLacks(t *testing.T) {
	core := &fakeCore{workers: true, handlers: map[string]bool{}}
	s := service(core)
	state := decode(t, `{"_on_deadline":{"class":"OnLate","payload":[]}}`)
	wf := &driver.Workflow{Status: driver.WorkflowRunning, DeadlineAt: now.Add(-time.Second)}
	assert.True(t, s.LeaveExpiry(wf, state, driver.TimeoutExecution, now))
	assert.False(t, s.LeaveExpiry(wf, state, driver.TimeoutRun, now), "run deadlines are always expired here")
	assert.False(t, s.LeaveExpiry(wf, state, driver.TimeoutExecution, now.Add(time.Minute)), "past the handoff")
	core.handlers["OnLate"] = true
	assert.False(t, s.LeaveExpiry(wf, state, driver.TimeoutExecution, now), "a worker here has the handler")
	core.handlers["OnLate"], core.workers = false, false
	assert.False(t, s.LeaveExpiry(wf, state, driver.TimeoutExecution, now), "a process without workers expires at once")
	wf.Status = driver.WorkflowPaused
	core.workers = true
	assert.False(t, s.LeaveExpiry(wf, state, driver.TimeoutExecution, now), "paused workflows are expired here")
}

// A compensation chain the foreign end sweep started carries the rest of
// its plan in its marker, and reads it back.
func TestSweepPlanRoundTrip(t *testing.T) {
	marker := phpjson.NewObject()
	(&sweepPlan{rest: []int64{2, 0}, cancel: true}).encode(marker)
	payload := phpjson.NewObject()
	payload.Set(callbackKey, marker)
	p, ok := sweepPlanOf(payload)
	require.True(t, ok)
	assert.Equal(t, sweepPlan{rest: []int64{2, 0}, cancel: true}, p)
	_, ok = sweepPlanOf(phpjson.NewObject())
	assert.False(t, ok, "a chain the sweep did not start has no plan")
}

// A for-each branch's events carry its item and index, in Queuety's
// order, and no state.
func TestBranchInputsCarryItemAndIndex(t *testing.T) {
	in, ctx := (&stepCtx{}).branchInputs(map[string]any{"id": int64(3)}, 4)
	assert.Equal(t, `{"item":{"id":3},"item_index":4}`, string(ctx))
	assert.Equal(t, ctx, in.input)
	assert.Nil(t, in.state)
}

type funcs struct{ reducers, conditions map[string]bool }

func (f funcs) Reducer(name string) (ReducerFunc, bool) {
	if !f.reducers[name] {
		return nil, false
	}
	return func(context.Context, map[string]any, queuetytype.ForEachResult) (map[string]any, error) {
		return nil, nil
	}, true
}

func (f funcs) RepeatCondition(name string) (ConditionFunc, bool) {
	if !f.conditions[name] {
		return nil, false
	}
	return func(context.Context, map[string]any) (bool, error) { return true, nil }, true
}

// A claimed step decodes its workflow once; a job whose step has a
// reducer or repeat condition a worker lacks names it, so the worker
// defers the job instead of running it.
func TestAttachAndMissingFunction(t *testing.T) {
	wf := &driver.Workflow{ID: 3, State: []byte(`{"_steps":[{"type":"for_each","name":"each","class":"A","items_key":"items","reducer":"Sum"},
		{"type":"repeat","name":"loop","target_step":"each","condition":"Again"}]}`)}
	var each, loop Step
	require.NoError(t, each.Attach(wf, 0))
	require.NoError(t, loop.Share(each, 1))
	assert.Equal(t, "loop", loop.Def.Name)
	assert.EqualError(t, (&Step{}).Share(each, 2), "workflow 3 has no step 2")

	assert.Equal(t, "reducer Sum", each.MissingFunction("A", nil))
	assert.Equal(t, "reducer Sum", each.MissingFunction("A", funcs{}))
	assert.Empty(t, each.MissingFunction("A", funcs{reducers: map[string]bool{"Sum": true}}))
	assert.Empty(t, each.MissingFunction(handlerForEach, nil), "the placeholder calls no reducer")
	assert.Equal(t, "repeat condition Again", loop.MissingFunction(workflowdef.HandlerRepeat, funcs{}))
	assert.Empty(t, loop.MissingFunction(workflowdef.HandlerRepeat, funcs{conditions: map[string]bool{"Again": true}}))

	payload := decode(t, `{"__for_each":{"item":"x","item_index":4}}`)
	item, idx, ok := each.ForEachItem("A", payload)
	assert.True(t, ok)
	assert.Equal(t, "x", item)
	assert.Equal(t, 4, idx)
	_, _, ok = each.ForEachItem(handlerForEach, payload)
	assert.False(t, ok, "the placeholder is no branch")

	bad := &driver.Workflow{ID: 4, State: []byte(`{"_steps":[{"type":"single"}]}`)}
	assert.ErrorContains(t, (&Step{}).Attach(bad, 0), "workflow 4: malformed step definitions")
}
