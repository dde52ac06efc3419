package storetest

// The acceptance cases of state machine action jobs that run more than
// once: a job delivered twice applies its result once, and a job whose
// worker died on its last attempt fails the machine as Queuety PHP's
// stale recovery does.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/engine"
	imachine "github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Machines/ActionDeliveredTwice", testMachineActionDeliveredTwice)
	register("Machines/ActionWorkerDied", testMachineActionWorkerDied)
	register("Machines/ActionDefaults", testMachineActionDefaults)
}

// claimAction claims one due entry action job as a worker would.
func (e *Env) claimAction() *engine.Claimed {
	e.T.Helper()
	cj := e.ClaimFrom(e.C, []string{queuetytype.DefaultQueue}, 1, imachine.ActionJobHandler)
	require.Len(e.T, cj, 1, "a due action job")
	return cj[0]
}

// runAction runs cj's entry action job with reg's actions, as the worker
// holding cj runs it, and returns the handler's error.
func (e *Env) runAction(reg *queuety.Registry, cj *engine.Claimed) error {
	e.T.Helper()
	fn, ok := reg.Job(imachine.ActionJobHandler)
	require.True(e.T, ok, "the action job handler")
	ctx, flush := e.eng.Attach(e.Ctx, cj, func(error) {})
	defer flush()
	return fn(ctx, nil)
}

// count returns how many rows of the machine's timeline are event.
func (e *Env) countMachineEvents(id int64, event queuetytype.MachineEventType) int {
	e.T.Helper()
	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(e.T, err)
	n := 0
	for _, ev := range evs {
		if ev.Event == event {
			n++
		}
	}
	return n
}

// testMachineActionDeliveredTwice: an action whose emitted event leads
// back into its own state. Its job runs twice in two ways, and each time
// the result is applied once: the late result of an attempt whose claim
// stale recovery took back (after the retry applied it) is refused as
// stale; and a job run again after its result was applied (the worker
// died before recording the job done) finds the machine in a later entry
// of the state and changes nothing.
func testMachineActionDeliveredTwice(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleMachineAction("tick", func(_ context.Context, in queuetytype.MachineInput) (queuety.State, error) {
		n, _ := in.State["ticks"].(int64)
		return queuety.State{"ticks": n + 1, "_event": "again"}, nil
	})
	id, err := machine.New("loop").State("working").Action("tick", nil).On("again", "working").
		On("stop", "done").Terminal("done", queuetytype.MachineCompleted).Dispatch(e.Ctx, e.C, queuety.State{"ticks": 0})
	require.NoError(t, err)
	ticks := func() any {
		st, err := e.C.MachineStatus(e.Ctx, id)
		require.NoError(t, err)
		return st.State["ticks"]
	}

	dead := e.claimAction()
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.recoverStale(), "the dead claim is taken back")
	retry := e.claimAction()
	require.Equal(t, dead.Job.ID, retry.Job.ID)
	require.NoError(t, e.runAction(reg, retry))
	require.NoError(t, e.Complete(retry)[0])
	assert.Equal(t, int64(1), ticks(), "the retry applied the result")
	assert.ErrorIs(t, e.runAction(reg, dead), queuetytype.ErrStaleAttempt, "the superseded attempt's late run")
	assert.Equal(t, int64(1), ticks(), "the superseded attempt's result is not applied")
	assert.Equal(t, 1, e.countMachineEvents(id, queuetytype.MachineEventActionCompleted))

	second := e.claimAction() // the job the applied result queued for the next entry
	require.NotEqual(t, dead.Job.ID, second.Job.ID)
	require.NoError(t, e.runAction(reg, second))
	assert.Equal(t, int64(2), ticks())
	e.Clock.Advance(time.Hour) // its worker died before recording the job done
	require.Equal(t, 1, e.recoverStale())
	again := e.claimAction()
	require.Equal(t, second.Job.ID, again.Job.ID, "the recovered job is claimed ahead of the next entry's")
	require.NoError(t, e.runAction(reg, again))
	require.NoError(t, e.Complete(again)[0])
	assert.Equal(t, int64(2), ticks(), "a job of an earlier entry of the state applies nothing")
	assert.Equal(t, 2, e.countMachineEvents(id, queuetytype.MachineEventActionCompleted))
	assert.Equal(t, 3, e.countMachineEvents(id, queuetytype.MachineEventActionEnqueued), "one job per entry")
}

// testMachineActionWorkerDied: an entry action job whose worker died is
// retried while it has attempts left; when stale recovery buries it, the
// machine fails with the stale message and the action_failed and
// machine_failed rows Queuety PHP's recover_stale writes through
// fail_action (job id, queue and attempt; no handler, input or context).
func testMachineActionWorkerDied(t *testing.T, e *Env) {
	id, err := machine.New("f").State("go").Action("slow", nil).On("ok", "end").Terminal("end", queuetytype.MachineCompleted).
		MaxAttempts(2).Dispatch(e.Ctx, e.C, queuety.State{"n": 1})
	require.NoError(t, err)
	first := e.claimAction()
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.recoverStale())
	st, err := e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineRunning, st.Status, "attempts remain: the job is retried")
	assert.Equal(t, queuetytype.JobPending, e.Job(first.Job.ID).Status)

	e.claimAction()
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.recoverStale())
	assert.Equal(t, queuetytype.JobBuried, e.Job(first.Job.ID).Status)
	st, err = e.C.MachineStatus(e.Ctx, id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineFailed, st.Status)
	assert.Equal(t, queuetytype.StaleMessage, st.ErrorMessage)
	assert.Equal(t, "go", st.CurrentState)
	assert.Equal(t, []string{"machine_started:go", "action_enqueued:go", "action_failed:go", "machine_failed:go"}, e.timeline(id))
	evs, err := e.C.MachineTimeline(e.Ctx, id, 0, 0)
	require.NoError(t, err)
	for _, ev := range evs[2:] {
		assert.Equal(t, first.Job.ID, ev.JobID, "%s job_id", ev.Event)
		assert.Equal(t, queuetytype.DefaultQueue, ev.Queue, "%s queue", ev.Event)
		require.NotNil(t, ev.Attempt, "%s attempt", ev.Event)
		assert.Equal(t, 2, *ev.Attempt, "%s attempt", ev.Event)
		assert.Empty(t, ev.Handler, "%s handler", ev.Event)
		assert.Empty(t, ev.EventName, "%s event_name", ev.Event)
		assert.Nil(t, ev.Input, "%s input", ev.Event)
		assert.Nil(t, ev.Output, "%s output", ev.Event)
		assert.Nil(t, ev.Context, "%s context", ev.Event)
		assert.Nil(t, ev.DurationMS, "%s duration_ms", ev.Event)
		assert.Equal(t, `{"n":1}`, string(ev.StateBefore), "%s state_before", ev.Event)
		assert.Equal(t, `{"n":1}`, string(ev.StateAfter), "%s state_after", ev.Event)
		assert.Equal(t, `{"message":"Stale: worker died without completing."}`, string(ev.Error), "%s error", ev.Event)
	}
}

// testMachineActionDefaults: the concurrency group and limit and the cost
// units Registry.Defaults sets for an action's name are written on its
// action jobs, queued by a client with the registry or by a worker running
// an action; the definition's queue stays the jobs' queue, as in Queuety
// PHP. Defaults that do not validate fail the dispatch.
func testMachineActionDefaults(t *testing.T, e *Env) {
	reg := queuety.NewRegistry()
	reg.HandleMachineAction("plan", func(context.Context, queuetytype.MachineInput) (queuety.State, error) {
		return queuety.State{"_event": "again"}, nil
	})
	reg.Defaults("plan", queuety.ConcurrencyGroup("llm"), queuety.ConcurrencyLimit(2), queuety.CostUnits(3), queuety.OnQueue("elsewhere"))
	c := e.Client(queuety.WithRegistry(reg))
	id, err := machine.New("d").State("a").Action("plan", nil).On("again", "a").Dispatch(e.Ctx, c, nil)
	require.NoError(t, err)
	check := func(j *driver.Job) {
		t.Helper()
		assert.Equal(t, "llm", j.ConcurrencyGroup)
		assert.Equal(t, 2, j.ConcurrencyLimit)
		assert.Equal(t, 3, j.CostUnits)
		assert.Equal(t, queuetytype.DefaultQueue, j.Queue)
	}
	first := e.claimAction()
	check(e.Job(first.Job.ID))
	require.NoError(t, e.runAction(reg, first))
	require.NoError(t, e.Complete(first)[0])
	jobs := e.Jobs(driver.JobFilter{Handler: imachine.ActionJobHandler})
	require.Len(t, jobs, 2, "the action queued the next entry's job")
	for _, j := range jobs {
		check(j)
	}
	assert.Equal(t, 2, e.countMachineEvents(id, queuetytype.MachineEventActionEnqueued))

	plain := e.Client()
	other, err := machine.New("p").State("a").Action("plan", nil).Dispatch(e.Ctx, plain, nil)
	require.NoError(t, err)
	assert.NotZero(t, other)
	jobs = e.Jobs(driver.JobFilter{Handler: imachine.ActionJobHandler})
	require.Len(t, jobs, 3)
	newest := jobs[0]
	for _, j := range jobs {
		if j.ID > newest.ID {
			newest = j
		}
	}
	assert.Empty(t, newest.ConcurrencyGroup, "a client without the registry writes no defaults")
	assert.Equal(t, 1, newest.CostUnits)

	bad := queuety.NewRegistry()
	bad.Defaults("plan", queuety.CostUnits(0))
	_, err = machine.New("b").State("a").Action("plan", nil).Dispatch(e.Ctx, e.Client(queuety.WithRegistry(bad)), nil)
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument)
}
