package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Admission: rate limits, concurrency groups and cost budgets.
func init() {
	register("Limits/RateSlidingWindowSharedByClients", testRateSlidingWindow)
	register("Limits/RateConcurrentWorkersTakeEachSlotOnce", testRateConcurrentWorkers)
	register("Limits/RateFromJobRuntime", testRateFromRuntime)
	register("Limits/RateCountsForeignStarts", testRateForeignStarts)
	register("Limits/GroupNeverExceededByEightWorkers", testGroupEightWorkers)
	register("Limits/WorkerCostBudget", testWorkerCostBudget)
	register("Limits/GroupAndQueueCostBudgets", testFleetCostBudgets)
	register("Limits/UnclaimLeavesRowAsQueuety", testAdmissionUnclaim)
	register("Limits/StepResourcesOnRows", testStepResources)
	register("Limits/DispatchValidation", testResourceValidation)
}

// pendingUntouched checks that the jobs of handler h not yet run are
// pending with no attempt used and no claim left on them.
func (e *Env) pendingUntouched(h string, want int) {
	e.T.Helper()
	jobs := e.Jobs(driver.JobFilter{Handler: h, Status: queuetytype.JobPending, Limit: 1000})
	assert.Len(e.T, jobs, want, "pending jobs of %s", h)
	for _, j := range jobs {
		assert.Zerof(e.T, j.Attempts, "job %d attempts", j.ID)
		assert.Truef(e.T, j.ReservedAt.IsZero(), "job %d reserved_at", j.ID)
		assert.Zerof(e.T, j.ClaimToken, "job %d claim token", j.ID)
	}
}

// allCompletedOnce checks that every job of handler h completed, each in
// one attempt (admission never uses one), and none was buried.
func (e *Env) allCompletedOnce(h string, n int) {
	e.T.Helper()
	jobs := e.Jobs(driver.JobFilter{Handler: h, Limit: 10000})
	require.Len(e.T, jobs, n, "jobs of %s", h)
	for _, j := range jobs {
		assert.Equalf(e.T, queuetytype.JobCompleted, j.Status, "job %d status (%s)", j.ID, j.ErrorMessage)
		assert.Equalf(e.T, 1, j.Attempts, "job %d attempts", j.ID)
	}
}

// A 3-per-10 s limit is a sliding window: a slot frees exactly when the
// start that took it is 10 s old. Two workers on separate clients (each
// with its own memory) alternate and share the window.
func testRateSlidingWindow(t *testing.T, e *Env) {
	var ran atomic.Int64
	newWorker := func(c *queuety.Client) *worker.Worker {
		w := e.Worker(c, worker.RateLimit("call_api", 3, 10*time.Second), worker.Concurrency(8))
		w.HandleJob("call_api", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
		return w
	}
	ws := []*worker.Worker{newWorker(e.C), newWorker(e.Client())}
	for i := range 2 {
		e.Dispatch("call_api", queuety.State{"i": i})
	}
	at := time.Duration(0)
	step := func(t2 time.Duration, dispatch int, want int64, msg string) {
		e.T.Helper()
		e.Clock.Advance(t2 - at)
		at = t2
		for i := range dispatch {
			e.Dispatch("call_api", queuety.State{"later": i})
		}
		before := ran.Load()
		e.Drain(ws[int(t2/time.Second)%2])
		assert.Equal(t, want, ran.Load()-before, "t=%s: %s", t2, msg)
	}
	step(0, 0, 2, "two due, both run")
	step(4*time.Second, 8, 1, "the third slot")
	step(9*time.Second, 0, 0, "window (-1 s, 9 s] is full")
	step(10*time.Second, 0, 2, "the two starts of 0 s left the window")
	step(13*time.Second, 0, 0, "full again")
	step(14*time.Second, 0, 1, "the start of 4 s left")
	e.pendingUntouched("call_api", 4)
	step(20*time.Second, 0, 2, "the starts of 10 s left")
	step(24*time.Second, 0, 1, "the start of 14 s left")
	step(30*time.Second, 0, 1, "the last one")
	e.allCompletedOnce("call_api", 10)
	// Every 10 s window of the recorded starts holds at most 3.
	var starts []time.Time
	for _, l := range e.Logs(driver.LogFilter{Event: driver.LogStarted}) {
		starts = append(starts, l.CreatedAt)
	}
	require.Len(t, starts, 10, "started log rows")
	for i := range starts {
		n := 0
		for _, s := range starts {
			if !s.Before(starts[i]) && s.Before(starts[i].Add(10*time.Second)) {
				n++
			}
		}
		assert.LessOrEqual(t, n, 3, "starts in the 10 s from %s", starts[i])
	}
}

// Eight workers on eight clients draining at once take each slot once:
// exactly the limit runs per window.
func testRateConcurrentWorkers(t *testing.T, e *Env) {
	for i := range 40 {
		e.Dispatch("send_sms", queuety.State{"i": i})
	}
	var ran atomic.Int64
	clients := e.Clients(8)
	ws := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		ws[i] = e.Worker(c, worker.RateLimit("send_sms", 5, time.Minute), worker.Concurrency(4))
		ws[i].HandleJob("send_sms", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	}
	drainAll := func() {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := w.RunOnce(e.Ctx, time.Minute)
				assert.NoError(t, err, "RunOnce")
			}()
		}
		wg.Wait()
	}
	for minute := range 3 {
		drainAll()
		assert.Equal(t, int64(5*(minute+1)), ran.Load(), "after minute %d", minute)
		e.Clock.Advance(time.Minute)
	}
	e.pendingUntouched("send_sms", 25)
}

// A rate limit stored in the jobs (queuety.RateLimit, or a Queuety step
// definition's rate_limit) binds a worker that has none of its own.
func testRateFromRuntime(t *testing.T, e *Env) {
	var ids []int64
	for i := range 5 {
		ids = append(ids, e.Dispatch("geocode", queuety.State{"i": i}, queuety.RateLimit(2, time.Minute)))
	}
	assert.JSONEq(t, `{"i":0,"__queuety_runtime":{"max_attempts":3,"rate_limit":[2,60]}}`, string(e.Job(ids[0]).Payload), "stored payload")
	var ran atomic.Int64
	w := e.Worker(nil, worker.Concurrency(8))
	w.HandleJob("geocode", func(_ context.Context, p queuety.Payload) error {
		_, hasRuntime := p["__queuety_runtime"]
		assert.False(t, hasRuntime, "handler payload without the runtime key")
		ran.Add(1)
		return nil
	})
	e.Drain(w)
	assert.Equal(t, int64(2), ran.Load(), "runs in the first minute")
	e.pendingUntouched("geocode", 3)
	e.Clock.Advance(time.Minute)
	e.Drain(w)
	assert.Equal(t, int64(4), ran.Load(), "runs after a minute")
}

// Starts another engine logged (Queuety PHP writes a 'started' row when
// it begins a job) count in the window, at the second they were stamped;
// Go's own started rows do not count twice.
func testRateForeignStarts(t *testing.T, e *Env) {
	one, attempt := int64(999999), 1
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		return tx.LogInsert(e.Ctx, []*driver.LogEntry{{JobID: &one, Handler: "charge", Queue: "default",
			Event: driver.LogStarted, Attempt: &attempt, CreatedAt: Epoch}})
	}))
	for i := range 4 {
		e.Dispatch("charge", queuety.State{"i": i})
	}
	var ran atomic.Int64
	w := e.Worker(nil, worker.RateLimit("charge", 2, 10*time.Second))
	w.HandleJob("charge", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	e.Clock.Advance(500 * time.Millisecond)
	e.Drain(w)
	assert.Equal(t, int64(1), ran.Load(), "t=0.5 s: the foreign start takes one slot")
	e.Clock.Advance(500 * time.Millisecond)
	fresh := e.Worker(e.Client(), worker.RateLimit("charge", 2, 10*time.Second))
	fresh.HandleJob("charge", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	e.Drain(fresh)
	assert.Equal(t, int64(1), ran.Load(), "t=1 s: Go's logged start is not counted again")
	e.Clock.Advance(9500 * time.Millisecond)
	e.Drain(fresh)
	assert.Equal(t, int64(2), ran.Load(), "t=10.5 s: Go's start of 0.5 s left; the foreign one, stamped 0 s, counts until 11 s")
	e.Clock.Advance(500 * time.Millisecond)
	e.Drain(w)
	assert.Equal(t, int64(3), ran.Load(), "t=11 s: the foreign start left")
}

// A concurrency group of 2, under load from 8 workers on 8 clients, never
// has more than 2 handlers running; jobs of a group whose limit is only
// on the rows hold theirs too.
func testGroupEightWorkers(t *testing.T, e *Env) {
	const perGroup = 40
	for i := range perGroup {
		e.Dispatch("call_llm", queuety.State{"i": i}, queuety.ConcurrencyGroup("provider"))
		e.Dispatch("sync_tenant", queuety.State{"i": i}, queuety.ConcurrencyGroup("tenant:acme"), queuety.ConcurrencyLimit(1))
		e.Dispatch("plain", queuety.State{"i": i})
	}
	var active, peak, tenantActive, tenantPeak atomic.Int64
	// pair is closed when two provider handlers first run at once; until
	// then a provider handler running alone waits a while for a second
	// one, so that the group's second slot is used however the claims of
	// a loaded machine interleave.
	pair := make(chan struct{})
	var pairOnce sync.Once
	track := func(cur, top *atomic.Int64, waitPair bool) func(context.Context, queuety.Payload) error {
		return func(ctx context.Context, _ queuety.Payload) error {
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				p := top.Load()
				if n <= p || top.CompareAndSwap(p, n) {
					break
				}
			}
			if waitPair && n >= 2 {
				pairOnce.Do(func() { close(pair) })
			}
			if waitPair && n == 1 {
				select {
				case <-pair:
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
			time.Sleep(2 * time.Millisecond) // the handler's work, so runs overlap
			return nil
		}
	}
	clients := e.Clients(8)
	ws := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		ws[i] = e.Worker(c, worker.GroupLimit("provider", 2), worker.Concurrency(4))
		ws[i].HandleJob("call_llm", track(&active, &peak, true))
		ws[i].HandleJob("sync_tenant", track(&tenantActive, &tenantPeak, false))
		ws[i].HandleJob("plain", func(context.Context, queuety.Payload) error { return nil })
	}
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := w.RunOnce(e.Ctx, time.Minute)
				assert.NoError(t, err, "RunOnce")
			}()
		}
		wg.Wait()
		if len(e.Jobs(driver.JobFilter{Status: queuetytype.JobPending, Limit: 1})) == 0 {
			break
		}
	}
	assert.LessOrEqual(t, peak.Load(), int64(2), "provider handlers running at once")
	assert.Equal(t, int64(2), peak.Load(), "the group's two slots were used")
	assert.Equal(t, int64(1), tenantPeak.Load(), "tenant handlers running at once (row limit 1)")
	e.allCompletedOnce("call_llm", perGroup)
	e.allCompletedOnce("sync_tenant", perGroup)
	e.allCompletedOnce("plain", perGroup)
}

// costTracker records the peak of the cost units running at once.
type costTracker struct{ cur, peak atomic.Int64 }

func (c *costTracker) handler(ctx context.Context, p queuety.Payload) error {
	cost, _ := p.Int("cost")
	n := c.cur.Add(cost)
	defer c.cur.Add(-cost)
	for {
		top := c.peak.Load()
		if n <= top || c.peak.CompareAndSwap(top, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	return nil
}

// A worker with a cost budget of 5 never runs more than 5 units at once,
// and never claims a job costing more than the whole budget.
func testWorkerCostBudget(t *testing.T, e *Env) {
	for i, cost := range []int{2, 3, 2, 1, 3, 2, 1, 1, 3, 2, 2, 3} {
		e.Dispatch("render", queuety.State{"i": i, "cost": cost}, queuety.CostUnits(cost))
	}
	big := e.Dispatch("render_big", queuety.State{"cost": 6}, queuety.CostUnits(6))
	var ct costTracker
	w := e.Worker(nil, worker.CostBudget(5), worker.Concurrency(8))
	w.HandleJob("render", ct.handler)
	w.HandleJob("render_big", ct.handler)
	e.Drain(w)
	assert.LessOrEqual(t, ct.peak.Load(), int64(5), "cost units running at once")
	assert.GreaterOrEqual(t, ct.peak.Load(), int64(4), "the budget was used")
	e.allCompletedOnce("render", 12)
	j := e.Job(big)
	assert.Equal(t, queuetytype.JobPending, j.Status, "a job above the whole budget waits for another worker")
	assert.Zero(t, j.Attempts, "its attempts")
}

// Group and queue cost budgets hold across four workers on four clients.
func testFleetCostBudgets(t *testing.T, e *Env) {
	for i := range 24 {
		e.Dispatch("embed", queuety.State{"i": i, "cost": 2}, queuety.ConcurrencyGroup("gpu"), queuety.CostUnits(2))
		e.Dispatch("export", queuety.State{"i": i, "cost": 3}, queuety.OnQueue("heavy"), queuety.CostUnits(3))
	}
	var gpu, heavy costTracker
	clients := e.Clients(4)
	ws := make([]*worker.Worker, len(clients))
	for i, c := range clients {
		ws[i] = e.Worker(c, worker.Queues("default", "heavy"), worker.Concurrency(6),
			worker.GroupCostBudget("gpu", 5), worker.QueueCostBudget("heavy", 6))
		ws[i].HandleJob("embed", gpu.handler)
		ws[i].HandleJob("export", heavy.handler)
	}
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := w.RunOnce(e.Ctx, time.Minute)
				assert.NoError(t, err, "RunOnce")
			}()
		}
		wg.Wait()
		if len(e.Jobs(driver.JobFilter{Status: queuetytype.JobPending, Limit: 1})) == 0 {
			break
		}
	}
	assert.LessOrEqual(t, gpu.peak.Load(), int64(4), "gpu group cost running at once (budget 5, jobs of 2)")
	assert.LessOrEqual(t, heavy.peak.Load(), int64(6), "heavy queue cost running at once")
	e.allCompletedOnce("embed", 24)
	e.allCompletedOnce("export", 24)
}

// A claimed job over its group's limit is handed back in the claim's
// transaction as Queuety's Queue::unclaim does: the row reads as before,
// with reserved_at NULL.
func testAdmissionUnclaim(t *testing.T, e *Env) {
	first := e.Dispatch("solo", queuety.State{"n": 1}, queuety.ConcurrencyGroup("solo"), queuety.ConcurrencyLimit(1))
	second := e.Dispatch("solo", queuety.State{"n": 2}, queuety.ConcurrencyGroup("solo"), queuety.ConcurrencyLimit(1))
	running := e.ClaimOne("solo") // a claim without admission (another engine's worker)
	require.Equal(t, first, running[0].Job.ID, "the first job runs")
	before := e.Job(second)
	adm := engine.NewAdmission(admission.Limits{}, nil)
	e.Clock.Advance(3 * time.Second)
	got, err := e.eng.Claim(e.Ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue},
		Handlers: []string{"solo"}, Limit: 10, Admission: adm})
	require.NoError(t, err, "claim")
	assert.Empty(t, got, "the group is full")
	assert.Equal(t, before, e.Job(second), "row after the claim handed it back")
	assert.False(t, adm.NextFree(e.Clock.Now()).After(e.Clock.Now()), "groups set no wake-up time")
	e.completeAll(running, first)
	got, err = e.eng.Claim(e.Ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue},
		Handlers: []string{"solo"}, Limit: 10, Admission: adm})
	require.NoError(t, err, "claim")
	assert.Equal(t, []int64{second}, IDs(got), "claimed once the first completed")
	assert.Equal(t, 1, got[0].Job.Attempts, "its first attempt")
}

// A step's group, limit, cost and rate limit land in the step definition
// (keys Queuety's StepDispatchOptions reads) and on the step's job row.
func testStepResources(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("summarize").
		Then("call_llm", builder.Job(queuety.ConcurrencyGroup("openai"), queuety.ConcurrencyLimit(3),
			queuety.CostUnits(5), queuety.RateLimit(60, time.Minute))).
		Then("store"), queuety.State{"doc": 1})
	j := e.OneJob(driver.JobFilter{WorkflowID: id})
	assert.Equal(t, "openai", j.ConcurrencyGroup, "concurrency_group")
	assert.Equal(t, 3, j.ConcurrencyLimit, "concurrency_limit")
	assert.Equal(t, 5, j.CostUnits, "cost_units")
	assert.Contains(t, string(j.Payload), `"rate_limit":[60,60]`, "runtime rate_limit")
	steps := e.rawState(id).Get
	raw, _ := steps("_steps")
	assert.Contains(t, string(workflowstate.EncodeJSON(raw)), `"rate_limit":[60,60],"concurrency_group":"openai","concurrency_limit":3,"cost_units":5`, "step definition")
	// The next step takes the defaults.
	w := e.Worker(nil)
	w.HandleStep("call_llm", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	e.Drain(w)
	next := e.OneJob(driver.JobFilter{WorkflowID: id, Handler: "store"})
	assert.Equal(t, "", next.ConcurrencyGroup, "next step's group")
	assert.Equal(t, 1, next.CostUnits, "next step's cost")
}

func testResourceValidation(t *testing.T, e *Env) {
	for name, opts := range map[string][]queuety.JobOption{
		"limit without group": {queuety.ConcurrencyLimit(2)},
		"blank group":         {queuety.ConcurrencyGroup("  ")},
		"zero cost":           {queuety.CostUnits(0)},
		"limit too large":     {queuety.ConcurrencyGroup("g"), queuety.ConcurrencyLimit(70000)},
		"rate of zero":        {queuety.RateLimit(0, time.Second)},
		"window under 1 s":    {queuety.RateLimit(5, time.Millisecond)},
	} {
		_, err := e.C.Dispatch(e.Ctx, "h", nil, opts...)
		assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, name)
	}
	id := e.Dispatch("h", nil, queuety.ConcurrencyGroup(" reports "), queuety.CostUnits(7))
	j := e.Job(id)
	assert.Equal(t, "reports", j.ConcurrencyGroup, "group trimmed")
	assert.Zero(t, j.ConcurrencyLimit, "no limit stored")
	assert.Equal(t, 7, j.CostUnits, "cost")
}
