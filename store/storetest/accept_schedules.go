package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Schedules/CronFiresAtExpectedTimes", testCronTimes)
	register("Schedules/DailyFiresOnceAfterDowntime", testDailyAfterDowntime)
	register("Schedules/CatchUpPolicies", testCatchUpPolicies)
	register("Schedules/OverlapAllow", testOverlapAllow)
	register("Schedules/OverlapSkip", testOverlapSkip)
	register("Schedules/OverlapBuffer", testOverlapBuffer)
	register("Schedules/FourTickersFireExactlyOnce", testFourTickers)
	register("Schedules/WorkflowSchedule", testWorkflowSchedule)
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
	n, _, err := engine.OfClient(e.C).TickSchedules(e.Ctx, 100)
	if err != nil {
		e.T.Fatalf("tick: %v", err)
	}
	return n
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
	if err != nil {
		e.T.Fatalf("save schedule: %v", err)
	}
	return id
}

// schedules lists every schedule.
func (e *Env) schedules() []*driver.Schedule {
	e.T.Helper()
	all, err := e.C.Schedules(e.Ctx)
	if err != nil {
		e.T.Fatalf("list schedules: %v", err)
	}
	return all
}

func (e *Env) schedule(id int64) *driver.Schedule {
	e.T.Helper()
	s, err := e.C.ScheduleByID(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return s
}

func testCronTimes(t *testing.T, e *Env) {
	id, err := e.C.Schedule("report", queuety.State{"kind": "5m"}).Cron("*/5 * * * *").Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := e.schedule(id)
	Equal(t, "first next_run", s.NextRun, time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC))
	Equal(t, "expression stored", s.Expression, "*/5 * * * *")
	Equal(t, "type", s.ExpressionType, driver.ScheduleCron)
	var fired []time.Time
	for range 30 { // minute by minute until 03:34:05
		e.Clock.Advance(time.Minute)
		if e.tick() > 0 {
			fired = append(fired, e.Clock.Now().Truncate(time.Minute))
		}
	}
	want := []string{"03:05", "03:10", "03:15", "03:20", "03:25", "03:30"}
	if len(fired) != len(want) {
		t.Fatalf("fired at %v", fired)
	}
	for i, f := range fired {
		Equal(t, "firing", f.Format("15:04"), want[i])
	}
	jobs := e.jobsOf("report")
	Equal(t, "jobs", len(jobs), 6)
	Equal(t, "payload", string(jobs[0].Payload), `{"kind":"5m"}`)
	s = e.schedule(id)
	Equal(t, "next_run", s.NextRun, time.Date(2030, 1, 2, 3, 35, 0, 0, time.UTC))
	Equal(t, "last_run", s.LastRun, time.Date(2030, 1, 2, 3, 30, 5, 0, time.UTC))
}

func testDailyAfterDowntime(t *testing.T, e *Env) {
	id, err := e.C.Schedule("digest", nil).Cron("@daily").Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "first next_run", e.schedule(id).NextRun, time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC))
	e.Clock.Advance(3 * 24 * time.Hour) // nobody ticked for three days
	Equal(t, "fired after downtime", e.tick(), 1)
	Equal(t, "ticks again", e.tick(), 0)
	Equal(t, "jobs", len(e.jobsOf("digest")), 1)
	Equal(t, "next_run is the next midnight", e.schedule(id).NextRun, time.Date(2030, 1, 6, 0, 0, 0, 0, time.UTC))
}

func testCatchUpPolicies(t *testing.T, e *Env) {
	all := e.save(e.C.Schedule("hourly_all", nil).Cron("@hourly").CatchUp(driver.CatchUpAll))
	none := e.save(e.C.Schedule("hourly_none", nil).Cron("@hourly").CatchUp(driver.CatchUpNone))
	e.Clock.Advance(5 * time.Hour) // slots 04:00 .. 08:00 missed
	Equal(t, "runs dispatched after the downtime", e.tick(), 5)
	Equal(t, "catch-up all: one run per missed slot", len(e.jobsOf("hourly_all")), 5)
	Equal(t, "catch-up none: no run after downtime", len(e.jobsOf("hourly_none")), 0)
	Equal(t, "none's next_run", e.schedule(none).NextRun, time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC))
	Equal(t, "all's next_run", e.schedule(all).NextRun, time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC))
	e.Clock.Advance(time.Hour) // one slot, on time
	Equal(t, "runs dispatched on time", e.tick(), 2)
	Equal(t, "catch-up none fires on time", len(e.jobsOf("hourly_none")), 1)
}

func testOverlapAllow(t *testing.T, e *Env) {
	e.save(e.C.Schedule("sync", nil).Every(time.Minute))
	for range 3 {
		e.Clock.Advance(time.Minute)
		Equal(t, "fired", e.tick(), 1)
	}
	Equal(t, "runs while the first is still pending", len(e.jobsOf("sync")), 3)
}

func testOverlapSkip(t *testing.T, e *Env) {
	e.save(e.C.Schedule("sync", nil).Every(time.Minute).Overlap(driver.OverlapSkip))
	e.Clock.Advance(time.Minute)
	Equal(t, "first firing", e.tick(), 1)
	e.Clock.Advance(time.Minute)
	Equal(t, "firing while the run is pending", e.tick(), 0)
	jobs := e.ClaimOne("sync")
	e.Clock.Advance(time.Minute)
	Equal(t, "firing while the run is processing", e.tick(), 0)
	e.completeAll(jobs, jobs[0].Job.ID)
	e.Clock.Advance(time.Minute)
	Equal(t, "firing after the run finished", e.tick(), 1)
	Equal(t, "jobs", len(e.jobsOf("sync")), 2)
}

func testOverlapBuffer(t *testing.T, e *Env) {
	id := e.save(e.C.Schedule("sync", nil).Every(time.Minute).Overlap(driver.OverlapBuffer))
	e.Clock.Advance(time.Minute)
	Equal(t, "first firing", e.tick(), 1)
	running := e.ClaimOne("sync")
	for range 3 { // three slots pass while the run is active
		e.Clock.Advance(time.Minute)
		Equal(t, "firing while active", e.tick(), 0)
	}
	s := e.schedule(id)
	if s.PendingRun.IsZero() {
		t.Fatal("no buffered firing recorded")
	}
	Equal(t, "buffered slot is the first one missed", s.PendingRun, time.Date(2030, 1, 2, 3, 6, 5, 0, time.UTC))
	Equal(t, "last_run is the run that dispatched, not the buffered slots", s.LastRun, time.Date(2030, 1, 2, 3, 5, 5, 0, time.UTC))
	Equal(t, "jobs while active", len(e.jobsOf("sync")), 1)
	e.completeAll(running, running[0].Job.ID)
	Equal(t, "the buffered run is dispatched as soon as the tick sees the run ended", e.tick(), 1)
	Equal(t, "jobs: at most one buffered run", len(e.jobsOf("sync")), 2)
	Equal(t, "buffer cleared", e.schedule(id).PendingRun, time.Time{})
	buffered := e.ClaimOne("sync")
	e.completeAll(buffered, buffered[0].Job.ID)
	e.Clock.Advance(time.Minute)
	Equal(t, "the timetable continues", e.tick(), 1)
}

func testFourTickers(t *testing.T, e *Env) {
	if _, err := e.C.Schedule("every5", nil).Cron("*/5 * * * *").Save(e.Ctx); err != nil {
		t.Fatal(err)
	}
	clients := e.Clients(4)
	var fired atomic.Int64
	for range 100 { // 100 simulated minutes
		e.Clock.Advance(time.Minute)
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, _, err := engine.OfClient(c).TickSchedules(context.Background(), 10)
				if err != nil {
					t.Errorf("tick: %v", err)
				}
				fired.Add(int64(n))
			}()
		}
		wg.Wait()
	}
	Equal(t, "firings reported", fired.Load(), int64(20))
	Equal(t, "jobs dispatched", len(e.jobsOf("every5")), 20)
}

func testWorkflowSchedule(t *testing.T, e *Env) {
	def := queuety.WorkflowDefinition{Name: "nightly_report", Steps: steps("build", "send"), ExecutionTimeout: time.Hour,
		OnDeadline: "alert", Queue: "reports"}
	id, err := e.C.ScheduleWorkflow(def, queuety.State{"format": "pdf"}).Every(time.Hour).Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := e.schedule(id)
	Equal(t, "handler key", s.Handler, "__queuety_workflow:nightly_report")
	Equal(t, "queue", s.Queue, "reports")
	w := e.Worker(nil, worker.Queues("reports"))
	w.HandleStep("build", func(_ context.Context, st queuety.State) (queuety.State, error) {
		return queuety.State{"built": st.String("format")}, nil
	})
	w.HandleStep("send", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	for range 2 {
		e.Clock.Advance(time.Hour)
		Equal(t, "fired", e.tick(), 1)
		e.Drain(w)
	}
	wfs := e.Workflows(driver.WorkflowFilter{Name: "nightly_report"})
	Equal(t, "workflows", len(wfs), 2)
	for _, wf := range wfs {
		Equal(t, "status", e.Workflow(wf.ID).Status, queuety.WorkflowCompleted)
		Equal(t, "state flowed", e.State(wf.ID).String("built"), "pdf")
		Equal(t, "deadline kept from the definition", e.Workflow(wf.ID).DeadlineAt.Sub(e.Workflow(wf.ID).StartedAt), time.Hour)
	}
	// Each firing carries its own idempotency key, so firing a slot twice
	// cannot start a second workflow.
	key, _ := e.rawState(wfs[0].ID).Get("_idempotency_key")
	if k, _ := key.(string); len(k) < 10 {
		t.Fatalf("idempotency key = %v", key)
	}
}

func testScheduleSave(t *testing.T, e *Env) {
	a, err := e.C.Schedule("cleanup", nil).Every(10 * time.Minute).Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := e.schedule(a).NextRun
	e.Clock.Advance(3 * time.Minute)
	b, err := e.C.Schedule("cleanup", queuety.State{"v": 2}).Every(10 * time.Minute).Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "same schedule", b, a)
	Equal(t, "next_run kept when the timetable is unchanged", e.schedule(a).NextRun, next)
	Equal(t, "payload updated", string(e.schedule(a).Payload), `{"v":2}`)
	Equal(t, "same schedule after a timetable change", e.save(e.C.Schedule("cleanup", nil).Every(time.Hour)), a)
	Equal(t, "next_run recomputed when the timetable changes", e.schedule(a).NextRun, e.Clock.Now().Truncate(time.Second).Add(time.Hour))
	Equal(t, "schedules", len(e.schedules()), 1)
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
		if _, err := b.Save(e.Ctx); !errors.Is(err, queuety.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	Equal(t, "schedules written", len(e.schedules()), 0)
}

func testScheduleOps(t *testing.T, e *Env) {
	id := e.save(e.C.Schedule("ping", nil).Every(time.Minute))
	if err := e.C.SetScheduleEnabled(e.Ctx, id, false); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(10 * time.Minute)
	Equal(t, "disabled schedule fired", e.tick(), 0)
	if err := e.C.SetScheduleEnabled(e.Ctx, id, true); err != nil {
		t.Fatal(err)
	}
	Equal(t, "re-enabled: no firing for the time it was off", e.tick(), 0)
	ref, err := e.C.RunScheduleNow(e.Ctx, id)
	if err != nil || ref == 0 {
		t.Fatalf("run now: %d, %v", ref, err)
	}
	Equal(t, "job from run-now", e.Job(ref).Handler, "ping")
	if err := e.C.RemoveSchedule(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.C.ScheduleByID(e.Ctx, id); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("removed schedule still there: %v", err)
	}
	if err := e.C.RemoveSchedule(e.Ctx, id); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
}

func testIntervalStrings(t *testing.T, e *Env) {
	id, err := e.C.Schedule("cleanup_sessions", queuety.State{"older_than_days": 30}).Interval("15 minutes").Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := e.schedule(id)
	Equal(t, "expression stored as written", s.Expression, "15 minutes")
	Equal(t, "next_run", s.NextRun, Epoch.Add(15*time.Minute))
	every := e.save(e.C.Schedule("other", nil).Every(5 * time.Minute))
	Equal(t, "Every is stored as Queuety writes intervals", e.schedule(every).Expression, "300 seconds")
}

func testRunOnceTicks(t *testing.T, e *Env) {
	e.save(e.C.Schedule("tick_job", nil).Every(time.Minute))
	var ran atomic.Int64
	w := e.Worker(nil)
	w.HandleJob("tick_job", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	e.Clock.Advance(time.Minute)
	st := e.Drain(w)
	Equal(t, "fired by RunOnce", st.SchedulesFired, 1)
	Equal(t, "ran in the same RunOnce", ran.Load(), int64(1))
}

func testSaveKeepsEnabled(t *testing.T, e *Env) {
	id, err := e.C.Schedule("report", nil).Every(time.Hour).Save(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.C.SetScheduleEnabled(e.Ctx, id, false); err != nil {
		t.Fatal(err)
	}
	// The application saves its schedules again at every start.
	if _, err := e.C.Schedule("report", nil).Every(time.Hour).Save(e.Ctx); err != nil {
		t.Fatal(err)
	}
	Equal(t, "switched off from outside: stays off after Save", e.schedule(id).Enabled, false)
	e.Clock.Advance(5 * time.Hour)
	Equal(t, "disabled schedule fired", e.tick(), 0)
	if _, err := e.C.Schedule("report", nil).Every(time.Hour).Enabled().Save(e.Ctx); err != nil {
		t.Fatal(err)
	}
	s := e.schedule(id)
	Equal(t, "Enabled switches it back on", s.Enabled, true)
	Equal(t, "re-enabled: next slot after now, no firing for the time it was off", s.NextRun, e.Clock.Now().Truncate(time.Second).Add(time.Hour))
	Equal(t, "nothing due", e.tick(), 0)
	if _, err := e.C.Schedule("report", nil).Every(time.Hour).Disabled().Save(e.Ctx); err != nil {
		t.Fatal(err)
	}
	Equal(t, "Disabled switches it off", e.schedule(id).Enabled, false)
	fresh := e.save(e.C.Schedule("fresh", nil).Every(time.Hour))
	Equal(t, "a new schedule is enabled", e.schedule(fresh).Enabled, true)
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
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Cron("@every 90s") }, driver.ScheduleInterval, "90 seconds", Epoch.Add(90 * time.Second)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Interval("1h30m") }, driver.ScheduleInterval, "5400 seconds", Epoch.Add(90 * time.Minute)},
		{func(b *queuety.ScheduleBuilder) *queuety.ScheduleBuilder { return b.Interval(" 2 hours ") }, driver.ScheduleInterval, "2 hours", Epoch.Add(2 * time.Hour)},
	}
	for i, c := range cases {
		id, err := c.build(e.C.Schedule(fmt.Sprintf("h%d", i), nil)).Save(e.Ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		s := e.schedule(id)
		Equal(t, "expression_type of "+c.expr, s.ExpressionType, c.typ)
		Equal(t, "expression", s.Expression, c.expr)
		Equal(t, "next_run of "+c.expr, s.NextRun, c.next)
	}
	for _, bad := range []string{"@every", "@every soon", "@every 0s", "@fortnightly"} {
		if _, err := e.C.Schedule("bad", nil).Cron(bad).Save(e.Ctx); !errors.Is(err, queuety.ErrInvalidArgument) {
			t.Errorf("Cron(%q): %v", bad, err)
		}
	}
}
