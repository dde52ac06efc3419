package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// eachStore runs fn on a fresh MariaDB table prefix and on a fresh SQLite
// file.
func eachStore(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, store := range []string{"mysql", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			if store == "mysql" {
				dsn, _ := migrated.DSN(t)
				fn(t, dsn)
				return
			}
			fn(t, "sqlite://"+filepath.Join(t.TempDir(), "q.db"))
		})
	}
}

// workflowJobs returns the jobs of a workflow in id order.
func workflowJobs(t *testing.T, c *queuety.Client, wfID int64) []*driver.Job {
	t.Helper()
	var jobs []*driver.Job
	require.NoError(t, clientseam.StoreOf(c).InTx(context.Background(), func(tx driver.Tx) (err error) {
		jobs, err = tx.JobListByWorkflow(context.Background(), wfID, nil, driver.LockNone)
		return err
	}))
	return jobs
}

// claimObserver counts the jobs the worker reports claimed and started.
type claimObserver struct {
	observe.Nop
	mu      sync.Mutex
	claimed map[int64]int
	started map[int64]int
}

func (o *claimObserver) Claimed(ctx context.Context, c observe.Claim) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, j := range c.Jobs {
		o.claimed[j.ID]++
	}
	return ctx
}

func (o *claimObserver) JobStart(ctx context.Context, j observe.Job) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started[j.ID]++
	return ctx
}

// TestEagerStepsHandOffNextSteps runs a 3-step workflow with one worker:
// steps 2 and 3 are handed off by the completion of the step before,
// without a claim, and their rows while they run are what a claim writes.
func TestEagerStepsHandOffNextSteps(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		obs := &claimObserver{claimed: map[int64]int{}, started: map[int64]int{}}
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()), queuety.WithObserver(obs))
		require.NoError(t, err)
		defer c.Close()
		opts := []builder.StepOption{builder.StartToClose(time.Minute), builder.ScheduleToStart(time.Minute)}
		wfID, err := builder.Workflow("eager").Then("s1", opts...).Then("s2", opts...).Then("s3", opts...).Dispatch(ctx, c, queuety.State{"n": 0})
		require.NoError(t, err)

		type seen struct {
			row     *driver.Job
			attempt string
		}
		var mu sync.Mutex
		rows := map[string]seen{}
		w := worker.New(c, worker.Concurrency(4), worker.NoMaintenance(), worker.WithLogger(quiet()))
		for _, name := range []string{"s1", "s2", "s3"} {
			w.HandleStep(name, func(ctx context.Context, s queuety.State) (queuety.State, error) {
				info, _ := queuety.JobInfoFrom(ctx)
				row, err := c.Job(ctx, info.JobID)
				if err != nil {
					return nil, err
				}
				mu.Lock()
				rows[name] = seen{row: row, attempt: info.AttemptID}
				mu.Unlock()
				n, _ := s.Int("n")
				return queuety.State{"n": n + 1}, nil
			})
		}
		before := time.Now()
		st, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(3), st.Claimed, "jobs claimed (eager included)")
		assert.Equal(t, int64(2), st.Eager, "jobs handed off")
		assert.Equal(t, int64(3), st.Succeeded, "successes")

		wf, err := c.Workflow(ctx, wfID)
		require.NoError(t, err)
		require.Equal(t, driver.WorkflowCompleted, wf.Status)
		jobs := workflowJobs(t, c, wfID)
		require.Len(t, jobs, 3)
		for i, name := range []string{"s1", "s2", "s3"} {
			s, ok := rows[name]
			require.True(t, ok, "step %s did not run", name)
			r := s.row
			assert.Equal(t, driver.JobProcessing, r.Status, "%s: status while running", name)
			assert.Equal(t, 1, r.Attempts, "%s: attempts while running", name)
			assert.NotZero(t, r.ClaimToken, "%s: claim token", name)
			assert.Equal(t, int64(1), r.ClaimToken%256, "%s: claim token %d is not a claim's base + attempts", name, r.ClaimToken)
			assert.Equal(t, strconv.FormatInt(r.ID, 10)+"-1-"+strconv.FormatInt(r.ClaimToken, 36), s.attempt, "%s: attempt id", name)
			assert.False(t, r.ReservedAt.IsZero(), "%s: reserved_at", name)
			assert.WithinDuration(t, before, r.ReservedAt, time.Minute, "%s: reserved_at", name)
			assert.True(t, r.ScheduleToStartAt.IsZero(), "%s: schedule-to-start deadline left armed", name)
			assert.False(t, r.StartToCloseAt.IsZero(), "%s: start-to-close deadline not armed", name)
			assert.Equal(t, driver.JobCompleted, jobs[i].Status, "%s: final status", name)
			assert.Equal(t, 1, jobs[i].Attempts, "%s: final attempts", name)
			logs, err := c.Logs(ctx, driver.LogFilter{JobID: jobs[i].ID})
			require.NoError(t, err)
			var events []string
			for _, l := range logs {
				events = append(events, string(l.Event))
			}
			assert.Equal(t, "started,completed", strings.Join(events, ","), "%s: logs", name)
			obs.mu.Lock()
			assert.Equal(t, 1, obs.claimed[jobs[i].ID], "%s: reported claimed", name)
			assert.Equal(t, 1, obs.started[jobs[i].ID], "%s: reported started", name)
			obs.mu.Unlock()
		}
	})
}

// TestEagerStepsOff runs the same workflow with eager handoff turned off:
// every step is claimed.
func TestEagerStepsOff(t *testing.T) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "q.db"), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	defer c.Close()
	_, err = builder.Workflow("eager").Then("s1").Then("s2").Then("s3").Dispatch(ctx, c, nil)
	require.NoError(t, err)
	w := worker.New(c, worker.EagerSteps(false), worker.NoMaintenance(), worker.WithLogger(quiet()))
	for _, name := range []string{"s1", "s2", "s3"} {
		w.HandleStep(name, func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	}
	st, err := w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.Claimed)
	assert.Zero(t, st.Eager)
	assert.Equal(t, int64(3), st.Succeeded)
}

// TestEagerStepsFallBack records step 1 of a workflow through the engine
// with an offer of one slot, in situations where the next step must be
// inserted pending instead of handed off.
func TestEagerStepsFallBack(t *testing.T) {
	type setup struct {
		step2   []builder.StepOption
		next    func(b *builder.Builder) *builder.Builder // the steps after s1 (default: s2)
		offer   func(o *engine.EagerOffer)
		between func(t *testing.T, c *queuety.Client, wfID int64, queue string) // after the claim of step 1
	}
	cases := map[string]setup{
		"handed off":             {}, // the control: everything allows it
		"no free slot":           {offer: func(o *engine.EagerOffer) { o.Slots = 0 }},
		"handler not registered": {offer: func(o *engine.EagerOffer) { o.Handlers = []string{"s1"} }},
		"other queue":            {offer: func(o *engine.EagerOffer) { o.Queues = []string{"mail"} }},
		"rate limit configured": {offer: func(o *engine.EagerOffer) {
			o.Admission = engine.NewAdmission(admission.Limits{Rates: map[string]engine.Rate{"x": {Max: 1, Window: time.Second}}}, nil)
		}},
		"cost budget configured": {offer: func(o *engine.EagerOffer) { o.Admission = engine.NewAdmission(admission.Limits{WorkerCost: 10}, nil) }},
		"rate-limited step":      {step2: []builder.StepOption{builder.Job(queuety.RateLimit(5, time.Second))}},
		"delayed step":           {step2: []builder.StepOption{builder.Job(queuety.Delay(time.Minute))}},
		"concurrency group":      {step2: []builder.StepOption{builder.Job(queuety.ConcurrencyGroup("g"))}},
		"cost units":             {step2: []builder.StepOption{builder.Job(queuety.CostUnits(3))}},
		"delay step":             {next: func(b *builder.Builder) *builder.Builder { return b.Sleep(time.Second).Then("s2") }},
		"paused queue": {between: func(t *testing.T, c *queuety.Client, _ int64, queue string) {
			require.NoError(t, c.PauseQueue(context.Background(), queue))
		}},
		"paused workflow": {between: func(t *testing.T, c *queuety.Client, wfID int64, _ string) {
			require.NoError(t, c.PauseWorkflow(context.Background(), wfID))
		}},
	}
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		for name, cs := range cases {
			t.Run(name, func(t *testing.T) {
				c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
				require.NoError(t, err)
				defer c.Close()
				queue := strings.ReplaceAll(name, " ", "-")
				b := builder.Workflow("fallback").OnQueue(queue).Then("s1")
				if cs.next != nil {
					b = cs.next(b)
				} else {
					b = b.Then("s2", cs.step2...)
				}
				wfID, err := b.Dispatch(ctx, c, nil)
				require.NoError(t, err)
				e := clientseam.Engine(c)
				handlers := []string{"s1", "s2", "s3"}
				claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{queue}, Handlers: handlers, Limit: 1})
				require.NoError(t, err)
				require.Len(t, claimed, 1)
				if cs.between != nil {
					cs.between(t, c, wfID, queue)
				}
				offer := &engine.EagerOffer{Slots: 1, Queues: []string{queue}, Handlers: handlers,
					Admission: engine.NewAdmission(admission.Limits{}, nil)}
				if cs.offer != nil {
					cs.offer(offer)
				}
				r := &engine.Result{Claimed: claimed[0], Output: queuety.State{"done": 1}, StartedAt: time.Now()}
				errs, handed, err := e.CompleteStepsEager(ctx, []*engine.Result{r}, offer)
				require.NoError(t, err)
				require.NoError(t, errors.Join(errs...))
				jobs := workflowJobs(t, c, wfID)
				require.Equal(t, driver.JobCompleted, jobs[0].Status, "step 1")
				if name == "handed off" {
					require.Len(t, handed, 1)
					require.Len(t, jobs, 2)
					assert.Equal(t, jobs[1].ID, handed[0].Job.ID)
					assert.Equal(t, driver.JobProcessing, jobs[1].Status)
					assert.Equal(t, 1, jobs[1].Attempts)
					assert.Equal(t, handed[0].Job.ClaimToken, jobs[1].ClaimToken)
					return
				}
				assert.Empty(t, handed, "jobs handed off")
				if name == "paused workflow" {
					assert.Len(t, jobs, 1, "a paused workflow queues no next step")
					return
				}
				require.GreaterOrEqual(t, len(jobs), 2)
				for _, j := range jobs[1:] {
					assert.Equal(t, driver.JobPending, j.Status, "next step's job %s", j.Handler)
					assert.Zero(t, j.Attempts)
					assert.Zero(t, j.ClaimToken)
					assert.True(t, j.ReservedAt.IsZero())
				}
			})
		}
	})
}

// TestEagerStepsSlotsBoundHandoff records two workflows' steps with one
// slot offered: one next step is handed off, the other inserted pending.
func TestEagerStepsSlotsBoundHandoff(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		for range 2 {
			_, err := builder.Workflow("two").Then("s1").Then("s2").Dispatch(ctx, c, nil)
			require.NoError(t, err)
		}
		e := clientseam.Engine(c)
		claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"s1", "s2"}, Limit: 2})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		results := []*engine.Result{{Claimed: claimed[0], StartedAt: time.Now()}, {Claimed: claimed[1], StartedAt: time.Now()}}
		errs, handed, err := e.CompleteStepsEager(ctx, results, &engine.EagerOffer{Slots: 1, Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"s1", "s2"}})
		require.NoError(t, err)
		require.NoError(t, errors.Join(errs...))
		require.Len(t, handed, 1)
		counts, err := c.Counts(ctx)
		require.NoError(t, err)
		got := map[queuetytype.JobStatus]int64{}
		for _, n := range counts {
			got[n.Status] = n.Count
		}
		assert.Equal(t, map[queuetytype.JobStatus]int64{queuetytype.JobCompleted: 2, queuetytype.JobProcessing: 1, queuetytype.JobPending: 1}, got)
	})
}

// abandonment runs a handed-off job on a worker that then abandons it:
// the job's handler (hold) reports its start, stops the worker and ignores
// the shutdown until release is closed.
type abandonment struct {
	t        *testing.T
	c        *queuety.Client
	clock    *queuety.FakeClock
	started  chan int64
	release  chan struct{}
	finished chan error
	runCtx   context.Context
	stop     context.CancelFunc
}

// newAbandonment opens a client on dsn with a fake clock.
func newAbandonment(t *testing.T, dsn string) *abandonment {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Now())
	c, err := queuety.Open(ctx, dsn, queuety.WithClock(clock), queuety.WithLogger(quiet()))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	return &abandonment{t: t, c: c, clock: clock, started: make(chan int64, 1), release: make(chan struct{}),
		finished: make(chan error, 1), runCtx: runCtx, stop: stop}
}

// worker returns the worker that abandons the job: it stops at once on
// shutdown, and reports on finished the result of the jobs abandoned
// selects.
func (a *abandonment) worker(abandoned func(*driver.Job) bool) *worker.Worker {
	return worker.New(a.c, worker.NoMaintenance(), worker.ShutdownTimeout(10*time.Millisecond), worker.HardStopTimeout(10*time.Millisecond),
		worker.WithLogger(quiet()), worker.WithHooks(worker.Hooks{Finished: func(j *driver.Job, err error) {
			if abandoned(j) {
				a.finished <- err
			}
		}}))
}

// hold is the abandoned job's handler's body.
func (a *abandonment) hold(ctx context.Context) {
	info, _ := queuety.JobInfoFrom(ctx)
	a.started <- info.JobID
	a.stop() // stop the worker while this handler runs
	<-a.release
}

// run runs w1 until it stops with the job abandoned, which it returns
// with w1's stats, after checking the job stays claimed.
func (a *abandonment) run(w1 *worker.Worker, what string) (int64, worker.Stats) {
	t := a.t
	st, err := w1.RunOnce(a.runCtx, time.Minute)
	var se *worker.ShutdownError
	require.ErrorAs(t, err, &se)
	id := receive(t, a.started, "the start of "+what)
	assert.Equal(t, []int64{id}, se.JobIDs, "abandoned jobs")
	row, err := a.c.Job(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, driver.JobProcessing, row.Status)
	require.Equal(t, 1, row.Attempts)
	return id, st
}

// recover moves the clock past the lease, runs w2, which recovers the
// job and completes workflow wfID, and checks the job's second attempt
// completed and the abandoned attempt's late result is rejected as
// stale. It returns w2's stats.
func (a *abandonment) recover(w2 *worker.Worker, wfID, id int64) worker.Stats {
	t, ctx := a.t, context.Background()
	a.clock.Advance(queuetytype.DefaultLeaseTimeout + time.Second)
	st, err := w2.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Swept.JobsRecovered, "jobs recovered")
	wf, err := a.c.Workflow(ctx, wfID)
	require.NoError(t, err)
	require.Equal(t, driver.WorkflowCompleted, wf.Status)
	row, err := a.c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, driver.JobCompleted, row.Status)
	assert.Equal(t, 2, row.Attempts)
	close(a.release)
	assert.ErrorIs(t, receive(t, a.finished, "the abandoned attempt's result"), queuetytype.ErrStaleAttempt)
	return st
}

// TestEagerStepAbandonedIsRecovered hands step 2 off to a worker that
// then abandons it (its handler ignores the shutdown): the job stays
// claimed like a claimed one, stale recovery returns it after the lease
// timeout, another worker completes the workflow, and the abandoned
// attempt's late result is rejected as stale.
func TestEagerStepAbandonedIsRecovered(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		a := newAbandonment(t, dsn)
		wfID, err := builder.Workflow("abandon").Then("s1").Then("s2").Then("s3").Dispatch(context.Background(), a.c, nil)
		require.NoError(t, err)
		w1 := a.worker(func(j *driver.Job) bool { return j.StepIndex != nil && *j.StepIndex == 1 })
		w1.HandleStep("s1", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
		w1.HandleStep("s2", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
			a.hold(ctx)
			return queuety.State{"late": true}, nil
		})
		s2, st := a.run(w1, "step 2")
		assert.Equal(t, int64(1), st.Eager, "step 2 was handed off")

		w2 := worker.New(a.c, worker.NoMaintenance(), worker.WithLogger(quiet()))
		for _, name := range []string{"s1", "s2", "s3"} {
			w2.HandleStep(name, func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
		}
		st = a.recover(w2, wfID, s2)
		assert.Equal(t, int64(2), st.Succeeded, "steps 2 and 3")
		assert.Equal(t, int64(1), st.Eager, "step 3 was handed off")
	})
}

// TestEagerStepOfPausedWorkflow pauses the workflow while its handed-off
// step 2 runs: the step is recorded, but the workflow does not advance to
// step 3 until it is resumed, as with a claimed step.
func TestEagerStepOfPausedWorkflow(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c, err := queuety.Open(ctx, dsn, queuety.WithLogger(quiet()))
		require.NoError(t, err)
		defer c.Close()
		wfID, err := builder.Workflow("pause").Then("s1").Then("s2").Then("s3").Dispatch(ctx, c, nil)
		require.NoError(t, err)
		w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(quiet()))
		w.HandleStep("s1", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
		w.HandleStep("s2", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
			return queuety.State{"two": 2}, c.PauseWorkflow(ctx, wfID)
		})
		w.HandleStep("s3", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
		st, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(1), st.Eager, "step 2 handed off")
		assert.Equal(t, int64(2), st.Succeeded)
		wf, err := c.Workflow(ctx, wfID)
		require.NoError(t, err)
		assert.Equal(t, driver.WorkflowPaused, wf.Status)
		assert.Equal(t, 2, wf.CurrentStep)
		jobs := workflowJobs(t, c, wfID)
		require.Len(t, jobs, 2, "no job for step 3 while paused")
		assert.Equal(t, driver.JobCompleted, jobs[1].Status)

		require.NoError(t, c.ResumeWorkflow(ctx, wfID))
		st, err = w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(1), st.Claimed)
		assert.Zero(t, st.Eager)
		wf, err = c.Workflow(ctx, wfID)
		require.NoError(t, err)
		assert.Equal(t, driver.WorkflowCompleted, wf.Status)
	})
}
