package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Schedules/CronFiresAtExpectedTimes", testCronTimes)
	register("Schedules/DailyFiresOnceAfterDowntime", testDailyAfterDowntime)
	register("Schedules/CatchUpPolicies", testCatchUpPolicies)
	register("Schedules/CatchUpAllFiresEveryMissedSlot", testCatchUpAllBacklog)
	register("Schedules/MissedSlotsReported", testMissedSlotsReported)
	register("Schedules/OverlapAllow", testOverlapAllow)
	register("Schedules/OverlapSkip", testOverlapSkip)
	register("Schedules/OverlapBuffer", testOverlapBuffer)
	register("Schedules/FourTickersFireExactlyOnce", testFourTickers)
	register("Schedules/WorkflowSchedule", testWorkflowSchedule)
	register("Schedules/UnreadableScheduleDoesNotStallOthers", testUnreadableSchedule)
	register("Schedules/SaveIsIdempotent", testScheduleSave)
	register("Schedules/Validation", testScheduleValidation)
	register("Schedules/EnableDisableRemoveRunNow", testScheduleOps)
	register("Schedules/QueuetyIntervalStrings", testIntervalStrings)
	register("Schedules/RunOnceTicksAndDrains", testRunOnceTicks)
	register("Schedules/SaveKeepsEnabledFlag", testSaveKeepsEnabled)
	register("Schedules/StoredInQueuetyPHPForm", testStoredInPHPForm)
}

// tick fires the due schedules once.
func (e *Env) tick() int {
	e.T.Helper()
	r, err := sweep.TickSchedules(e.Ctx, e.eng, 100)
	require.NoError(e.T, err, "tick")
	return r.Fired
}

// tickReport fires the due schedules once and returns what the tick did.
func (e *Env) tickReport() engine.ScheduleTick {
	e.T.Helper()
	r, err := sweep.TickSchedules(e.Ctx, e.eng, 100)
	require.NoError(e.T, err, "tick")
	return r
}

// jobsOf lists the jobs of a handler.
func (e *Env) jobsOf(handler string) []*driver.Job {
	e.T.Helper()
	return e.Jobs(driver.JobFilter{Handler: handler, Limit: 1000})
}

// save saves a schedule and returns its id.
func (e *Env) save(b *queuety.ScheduleBuilder) int64 {
	e.T.Helper()
	id, err := b.Save(e.Ctx)
	require.NoError(e.T, err, "save schedule")
	return id
}

// schedules lists every schedule.
func (e *Env) schedules() []*driver.Schedule {
	e.T.Helper()
	all, err := e.C.Schedules(e.Ctx)
	require.NoError(e.T, err, "list schedules")
	return all
}

func (e *Env) schedule(id int64) *driver.Schedule {
	e.T.Helper()
	s, err := e.C.ScheduleByID(e.Ctx, id)
	require.NoError(e.T, err)
	return s
}

func testCronTimes(t *testing.T, e *Env) {
	id, err := e.C.Schedule("report", queuety.State{"kind": "5m"}).Cron("*/5 * * * *").Save(e.Ctx)
	require.NoError(t, err)
	s := e.schedule(id)
	assert.Equal(t, time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC), s.NextRun, "first next_run")
	assert.Equal(t, "*/5 * * * *", s.Expression, "expression stored")
	assert.Equal(t, driver.ScheduleCron, s.ExpressionType, "type")
	var fired []time.Time
	for range 30 { // minute by minute until 03:34:05
		e.Clock.Advance(time.Minute)
		if e.tick() > 0 {
			fired = append(fired, e.Clock.Now().Truncate(time.Minute))
		}
	}
	want := []string{"03:05", "03:10", "03:15", "03:20", "03:25", "03:30"}
	got := make([]string, len(fired))
	for i, f := range fired {
		got[i] = f.Format("15:04")
	}
	assert.Equal(t, want, got, "firings")
	jobs := e.jobsOf("report")
	require.Len(t, jobs, 6, "jobs")
	assert.Equal(t, `{"kind":"5m"}`, string(jobs[0].Payload), "payload")
	s = e.schedule(id)
	assert.Equal(t, time.Date(2030, 1, 2, 3, 35, 0, 0, time.UTC), s.NextRun, "next_run")
	assert.Equal(t, time.Date(2030, 1, 2, 3, 30, 5, 0, time.UTC), s.LastRun, "last_run")
}

func testDailyAfterDowntime(t *testing.T, e *Env) {
	id, err := e.C.Schedule("digest", nil).Cron("@daily").Save(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC), e.schedule(id).NextRun, "first next_run")
	e.Clock.Advance(3 * 24 * time.Hour) // nobody ticked for three days
	assert.Equal(t, 1, e.tick(), "fired after downtime")
	assert.Equal(t, 0, e.tick(), "ticks again")
	assert.Len(t, e.jobsOf("digest"), 1, "jobs")
	assert.Equal(t, time.Date(2030, 1, 6, 0, 0, 0, 0, time.UTC), e.schedule(id).NextRun, "next_run is the next midnight")
}

func testCatchUpPolicies(t *testing.T, e *Env) {
	all := e.save(e.C.Schedule("hourly_all", nil).Cron("@hourly").CatchUp(driver.CatchUpAll))
	none := e.save(e.C.Schedule("hourly_none", nil).Cron("@hourly").CatchUp(driver.CatchUpNone))
	e.Clock.Advance(5 * time.Hour) // slots 04:00 .. 08:00 missed
	assert.Equal(t, 5, e.tick(), "runs dispatched after the downtime")
	assert.Len(t, e.jobsOf("hourly_all"), 5, "catch-up all: one run per missed slot")
	assert.Empty(t, e.jobsOf("hourly_none"), "catch-up none: no run after downtime")
	assert.Equal(t, time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC), e.schedule(none).NextRun, "none's next_run")
	assert.Equal(t, time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC), e.schedule(all).NextRun, "all's next_run")
	e.Clock.Advance(time.Hour) // one slot, on time
	assert.Equal(t, 2, e.tick(), "runs dispatched on time")
	assert.Len(t, e.jobsOf("hourly_none"), 1, "catch-up none fires on time")
}

// testCatchUpAllBacklog misses 150 slots of a CatchUpAll schedule: one
// tick fires the first 100 and says there is more, the next fires the
// other 50, and the timetable continues after now.
func testCatchUpAllBacklog(t *testing.T, e *Env) {
	id := e.save(e.C.Schedule("minutely_all", nil).Every(time.Minute).CatchUp(driver.CatchUpAll)) // first slot 03:05:05
	e.Clock.Advance(150 * time.Minute)                                                            // 05:34:05: slots 03:05:05 .. 05:34:05 missed
	first := e.tickReport()
	assert.Equal(t, schedule.MaxCatchUp, first.Fired, "firings of the first tick")
	assert.True(t, first.More, "the first tick reports more to fire")
	assert.Zero(t, first.Missed, "slots missed")
	assert.Equal(t, time.Date(2030, 1, 2, 4, 45, 5, 0, time.UTC), e.schedule(id).NextRun, "next_run: the first slot not fired yet")
	second := e.tickReport()
	assert.Equal(t, 50, second.Fired, "firings of the second tick")
	assert.False(t, second.More, "the second tick reports more to fire")
	assert.Zero(t, e.tick(), "a third tick")
	assert.Len(t, e.jobsOf("minutely_all"), 150, "catch-up all: one run per missed slot")
	assert.Equal(t, time.Date(2030, 1, 2, 5, 35, 5, 0, time.UTC), e.schedule(id).NextRun, "next_run after the backlog")
}

// testMissedSlotsReported misses five hourly slots under each catch-up
// policy: the tick reports the slots once merged (four) and none skipped
// (five), and nothing missed once the ticks are on time again.
func testMissedSlotsReported(t *testing.T, e *Env) {
	e.save(e.C.Schedule("hourly_once", nil).Cron("@hourly").CatchUp(driver.CatchUpOnce))
	e.save(e.C.Schedule("hourly_all", nil).Cron("@hourly").CatchUp(driver.CatchUpAll))
	e.save(e.C.Schedule("hourly_none", nil).Cron("@hourly").CatchUp(driver.CatchUpNone))
	e.Clock.Advance(5 * time.Hour) // slots 04:00 .. 08:00 missed
	r := e.tickReport()
	assert.Equal(t, 1+5+0, r.Fired, "runs dispatched after the downtime")
	assert.Equal(t, 4+0+5, r.Missed, "slots missed: merged by once, skipped by none")
	assert.Len(t, e.jobsOf("hourly_once"), 1, "catch-up once: one run for the missed slots")
	e.Clock.Advance(time.Hour) // one slot, on time
	r = e.tickReport()
	assert.Equal(t, 3, r.Fired, "runs dispatched on time")
	assert.Zero(t, r.Missed, "slots missed on time")
}

func testOverlapAllow(t *testing.T, e *Env) {
	e.save(e.C.Schedule("sync", nil).Every(time.Minute))
	for range 3 {
		e.Clock.Advance(time.Minute)
		assert.Equal(t, 1, e.tick(), "fired")
	}
	assert.Len(t, e.jobsOf("sync"), 3, "runs while the first is still pending")
}

func testOverlapSkip(t *testing.T, e *Env) {
	e.save(e.C.Schedule("sync", nil).Every(time.Minute).Overlap(driver.OverlapSkip))
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "first firing")
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 0, e.tick(), "firing while the run is pending")
	jobs := e.ClaimOne("sync")
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 0, e.tick(), "firing while the run is processing")
	e.completeAll(jobs, jobs[0].Job.ID)
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "firing after the run finished")
	assert.Len(t, e.jobsOf("sync"), 2, "jobs")
}

func testOverlapBuffer(t *testing.T, e *Env) {
	id := e.save(e.C.Schedule("sync", nil).Every(time.Minute).Overlap(driver.OverlapBuffer))
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "first firing")
	running := e.ClaimOne("sync")
	for range 3 { // three slots pass while the run is active
		e.Clock.Advance(time.Minute)
		assert.Equal(t, 0, e.tick(), "firing while active")
	}
	s := e.schedule(id)
	require.False(t, s.PendingRun.IsZero(), "no buffered firing recorded")
	assert.Equal(t, time.Date(2030, 1, 2, 3, 6, 5, 0, time.UTC), s.PendingRun, "buffered slot is the first one missed")
	assert.Equal(t, time.Date(2030, 1, 2, 3, 5, 5, 0, time.UTC), s.LastRun, "last_run is the run that dispatched, not the buffered slots")
	assert.Len(t, e.jobsOf("sync"), 1, "jobs while active")
	e.completeAll(running, running[0].Job.ID)
	assert.Equal(t, 1, e.tick(), "the buffered run is dispatched as soon as the tick sees the run ended")
	assert.Len(t, e.jobsOf("sync"), 2, "jobs: at most one buffered run")
	assert.Equal(t, time.Time{}, e.schedule(id).PendingRun, "buffer cleared")
	buffered := e.ClaimOne("sync")
	e.completeAll(buffered, buffered[0].Job.ID)
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "the timetable continues")
}

func testFourTickers(t *testing.T, e *Env) {
	_, err := e.C.Schedule("every5", nil).Cron("*/5 * * * *").Save(e.Ctx)
	require.NoError(t, err)
	clients := e.Clients(4)
	var fired atomic.Int64
	for range 100 { // 100 simulated minutes
		e.Clock.Advance(time.Minute)
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := sweep.TickSchedules(context.Background(), clientseam.Engine(c), 10)
				assert.NoError(t, err, "tick")
				fired.Add(int64(r.Fired))
			}()
		}
		wg.Wait()
	}
	assert.Equal(t, int64(20), fired.Load(), "firings reported")
	assert.Len(t, e.jobsOf("every5"), 20, "jobs dispatched")
}

func testWorkflowSchedule(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "nightly_report", Steps: steps("build", "send"), ExecutionTimeout: time.Hour,
		OnDeadline: "alert", Queue: "reports"}
	id, err := e.C.ScheduleWorkflow(def, queuety.State{"format": "pdf"}).Every(time.Hour).Save(e.Ctx)
	require.NoError(t, err)
	s := e.schedule(id)
	assert.Equal(t, "__queuety_workflow:nightly_report", s.Handler, "handler key")
	assert.Equal(t, "reports", s.Queue, "queue")
	w := e.Worker(nil, worker.Queues("reports"))
	w.HandleStep("build", func(_ context.Context, st queuety.State) (queuety.State, error) {
		return queuety.State{"built": st.String("format")}, nil
	})
	w.HandleStep("send", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	for range 2 {
		e.Clock.Advance(time.Hour)
		assert.Equal(t, 1, e.tick(), "fired")
		e.Drain(w)
	}
	wfs := e.Workflows(driver.WorkflowFilter{Name: "nightly_report"})
	require.Len(t, wfs, 2, "workflows")
	for _, wf := range wfs {
		assert.Equal(t, queuetytype.WorkflowCompleted, e.Workflow(wf.ID).Status, "status")
		assert.Equal(t, "pdf", e.State(wf.ID).String("built"), "state flowed")
		assert.Equal(t, time.Hour, e.Workflow(wf.ID).DeadlineAt.Sub(e.Workflow(wf.ID).StartedAt), "deadline kept from the definition")
	}
	// Each firing carries its own idempotency key, so firing a slot twice
	// cannot start a second workflow.
	key, _ := e.rawState(wfs[0].ID).Get("_idempotency_key")
	k, _ := key.(string)
	assert.GreaterOrEqualf(t, len(k), 10, "length of the idempotency key %v", key)
}

func testScheduleSave(t *testing.T, e *Env) {
	a, err := e.C.Schedule("cleanup", nil).Every(10 * time.Minute).Save(e.Ctx)
	require.NoError(t, err)
	next := e.schedule(a).NextRun
	e.Clock.Advance(3 * time.Minute)
	b, err := e.C.Schedule("cleanup", queuety.State{"v": 2}).Every(10 * time.Minute).Save(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, a, b, "same schedule")
	assert.Equal(t, next, e.schedule(a).NextRun, "next_run kept when the timetable is unchanged")
	assert.Equal(t, `{"v":2}`, string(e.schedule(a).Payload), "payload updated")
	assert.Equal(t, a, e.save(e.C.Schedule("cleanup", nil).Every(time.Hour)), "same schedule after a timetable change")
	assert.Equal(t, e.Clock.Now().Truncate(time.Second).Add(time.Hour), e.schedule(a).NextRun, "next_run recomputed when the timetable changes")
	assert.Len(t, e.schedules(), 1, "schedules")
}

func testScheduleValidation(t *testing.T, e *Env) {
	cases := map[string]*queuety.ScheduleBuilder{
		"bad cron":          e.C.Schedule("h", nil).Cron("* * *"),
		"bad interval":      e.C.Schedule("h", nil).Interval("5 lightyears"),
		"no expression":     e.C.Schedule("h", nil),
		"sub-second":        e.C.Schedule("h", nil).Every(500 * time.Millisecond),
		"empty handler":     e.C.Schedule("", nil).Every(time.Minute),
		"reserved handler":  e.C.Schedule("__queuety_delay", nil).Every(time.Minute),
		"bad overlap":       e.C.Schedule("h", nil).Every(time.Minute).Overlap("sometimes"),
		"bad catch-up":      e.C.Schedule("h", nil).Every(time.Minute).CatchUp("twice"),
		"list payload":      e.C.Schedule("h", []int{1}).Every(time.Minute),
		"workflow no steps": e.C.ScheduleWorkflow(queuety.WorkflowDefinition{Name: "w"}, nil).Every(time.Minute),
		"key on a job":      e.C.Schedule("h", nil).Every(time.Minute).Key("k"),
	}
	for name, b := range cases {
		_, err := b.Save(e.Ctx)
		assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, name)
	}
	assert.Empty(t, e.schedules(), "schedules written")
}

func testScheduleOps(t *testing.T, e *Env) {
	id := e.save(e.C.Schedule("ping", nil).Every(time.Minute))
	require.NoError(t, e.C.SetScheduleEnabled(e.Ctx, id, false))
	e.Clock.Advance(10 * time.Minute)
	assert.Equal(t, 0, e.tick(), "disabled schedule fired")
	require.NoError(t, e.C.SetScheduleEnabled(e.Ctx, id, true))
	assert.Equal(t, 0, e.tick(), "re-enabled: no firing for the time it was off")
	ref, err := e.C.RunScheduleNow(e.Ctx, id)
	require.NoError(t, err, "run now")
	require.NotZero(t, ref, "job dispatched by run-now")
	assert.Equal(t, "ping", e.Job(ref).Handler, "job from run-now")
	require.NoError(t, e.C.RemoveSchedule(e.Ctx, id))
	_, err = e.C.ScheduleByID(e.Ctx, id)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "removed schedule still there")
	require.ErrorIs(t, e.C.RemoveSchedule(e.Ctx, id), queuetytype.ErrNotFound, "remove twice")
}

func testIntervalStrings(t *testing.T, e *Env) {
	id, err := e.C.Schedule("cleanup_sessions", queuety.State{"older_than_days": 30}).Interval("15 minutes").Save(e.Ctx)
	require.NoError(t, err)
	s := e.schedule(id)
	assert.Equal(t, "15 minutes", s.Expression, "expression stored as written")
	assert.Equal(t, Epoch.Add(15*time.Minute), s.NextRun, "next_run")
	every := e.save(e.C.Schedule("other", nil).Every(5 * time.Minute))
	assert.Equal(t, "300 seconds", e.schedule(every).Expression, "Every is stored as Queuety writes intervals")
}

func testRunOnceTicks(t *testing.T, e *Env) {
	e.save(e.C.Schedule("tick_job", nil).Every(time.Minute))
	var ran atomic.Int64
	w := e.Worker(nil)
	w.HandleJob("tick_job", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	e.Clock.Advance(time.Minute)
	st := e.Drain(w)
	assert.Equal(t, 1, st.SchedulesFired, "fired by RunOnce")
	assert.Equal(t, int64(1), ran.Load(), "ran in the same RunOnce")
}

func testSaveKeepsEnabled(t *testing.T, e *Env) {
	id, err := e.C.Schedule("report", nil).Every(time.Hour).Save(e.Ctx)
	require.NoError(t, err)
	require.NoError(t, e.C.SetScheduleEnabled(e.Ctx, id, false))
	// The application saves its schedules again at every start.
	_, err = e.C.Schedule("report", nil).Every(time.Hour).Save(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, false, e.schedule(id).Enabled, "switched off from outside: stays off after Save")
	e.Clock.Advance(5 * time.Hour)
	assert.Equal(t, 0, e.tick(), "disabled schedule fired")
	_, err = e.C.Schedule("report", nil).Every(time.Hour).Enabled().Save(e.Ctx)
	require.NoError(t, err)
	s := e.schedule(id)
	assert.Equal(t, true, s.Enabled, "Enabled switches it back on")
	assert.Equal(t, e.Clock.Now().Truncate(time.Second).Add(time.Hour), s.NextRun, "re-enabled: next slot after now, no firing for the time it was off")
	assert.Equal(t, 0, e.tick(), "nothing due")
	_, err = e.C.Schedule("report", nil).Every(time.Hour).Disabled().Save(e.Ctx)
	require.NoError(t, err)
	assert.Equal(t, false, e.schedule(id).Enabled, "Disabled switches it off")
	fresh := e.save(e.C.Schedule("fresh", nil).Every(time.Hour))
	assert.Equal(t, true, e.schedule(fresh).Enabled, "a new schedule is enabled")
}

// testStoredInPHPForm checks that what Go writes is what Queuety PHP's
// parser reads: five plain cron fields and "<n> <unit>" intervals.
func testStoredInPHPForm(t *testing.T, e *Env) {
	cases := []struct {
		build func(*queuety.ScheduleBuilder) *queuety.ScheduleBuilder
		typ   driver.ScheduleType
		expr  string
		next  time.Time
	}{
		// Epoch is Wednesday 2030-01-02 03:04:05 UTC.
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("@hourly") }, driver.ScheduleCron, "0 * * * *", time.Date(2030, 1, 2, 4, 0, 0, 0, time.UTC)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("@DAILY") }, driver.ScheduleCron, "0 0 * * *", time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("@weekly") }, driver.ScheduleCron, "0 0 * * 0", time.Date(2030, 1, 6, 0, 0, 0, 0, time.UTC)},
		// Names, "?" and a day-of-week range through 7 are stored as the
		// values Queuety PHP reads the same way.
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("0 9 ? * mon-fri") }, driver.ScheduleCron, "0 9 * * 1-5", time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("0 9 * * 5-7") }, driver.ScheduleCron, "0 9 * * 0,5,6", time.Date(2030, 1, 4, 9, 0, 0, 0, time.UTC)},
		// Both day fields restricted: a day must match both, as in PHP.
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("0 0 13 * 5") }, driver.ScheduleCron, "0 0 13 * 5", time.Date(2030, 9, 13, 0, 0, 0, 0, time.UTC)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("@every 90s") }, driver.ScheduleInterval, "90 seconds", Epoch.Add(90 * time.Second)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Interval("1h30m") }, driver.ScheduleInterval, "5400 seconds", Epoch.Add(90 * time.Minute)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Interval(" 2 hours ") }, driver.ScheduleInterval, "2 hours", Epoch.Add(2 * time.Hour)},
	}
	for i, c := range cases {
		id, err := c.build(e.C.Schedule(fmt.Sprintf("h%d", i), nil)).Save(e.Ctx)
		require.NoErrorf(t, err, "%s", c.expr)
		s := e.schedule(id)
		assert.Equal(t, c.typ, s.ExpressionType, "expression_type of "+c.expr)
		assert.Equal(t, c.expr, s.Expression, "expression")
		assert.Equal(t, c.next, s.NextRun, "next_run of "+c.expr)
	}
	for _, bad := range []string{"@every", "@every soon", "@every 0s", "@fortnightly"} {
		_, err := e.C.Schedule("bad", nil).Cron(bad).Save(e.Ctx)
		assert.ErrorIsf(t, err, queuetytype.ErrInvalidArgument, "Cron(%q)", bad)
	}
}

// testUnreadableSchedule: a workflow schedule whose stored definition or
// payload cannot be read (written by hand or by another runtime) must not
// stop the tick for every other schedule. It is put off by an hour with
// an error in the log, and the good schedules due beside it fire.
func testUnreadableSchedule(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: steps("build")}
	badDef, err := e.C.ScheduleWorkflow(def, nil).Every(time.Minute).Save(e.Ctx)
	require.NoError(t, err)
	def.Name = "hourly"
	badPayload, err := e.C.ScheduleWorkflow(def, nil).Every(time.Minute).Save(e.Ctx)
	require.NoError(t, err)
	good := e.save(e.C.Schedule("ping", nil).Every(time.Minute))
	for id, mutate := range map[int64]func(*driver.Schedule){
		badDef:     func(s *driver.Schedule) { s.Workflow = []byte(`{"steps": [oops`) },
		badPayload: func(s *driver.Schedule) { s.Payload = []byte(`[1, 2`) },
	} {
		s := e.schedule(id)
		mutate(s)
		require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error { return tx.ScheduleSave(e.Ctx, s) }))
	}

	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "fired beside the unreadable schedules")
	assert.Len(t, e.jobsOf("ping"), 1, "jobs of the good schedule")
	for _, id := range []int64{badDef, badPayload} {
		s := e.schedule(id)
		assert.Equal(t, e.Clock.Now().Truncate(time.Second).Add(time.Hour), s.NextRun, "an unreadable schedule is put off by an hour")
	}
	assert.Empty(t, e.Workflows(driver.WorkflowFilter{}), "workflows started from unreadable schedules")
	e.Clock.Advance(time.Minute)
	assert.Equal(t, 1, e.tick(), "the next minute")
	assert.Equal(t, good, e.schedule(good).ID)
	assert.Len(t, e.jobsOf("ping"), 2, "jobs of the good schedule after two minutes")
}
