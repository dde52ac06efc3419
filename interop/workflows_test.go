package interop_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// checkInputs checks that the Go step handlers were called in the order of
// PHP's step_started events after event id since (internal placeholders
// excluded) and received the public state those events record.
func checkInputs(t *testing.T, rec *recorder, want *phpfixture.Snapshot, since int) {
	t.Helper()
	var started []phpfixture.Row
	for _, ev := range rowsOf(want, "queuety_workflow_events") {
		id, _ := strconv.Atoi(*ev["id"])
		if id <= since || *ev["event"] != "step_started" || engine.IsInternalHandler(*ev["handler"]) {
			continue
		}
		started = append(started, ev)
	}
	assert.NotEmpty(t, started, "PHP's snapshot has no step_started event after event %d: nothing to check the Go handlers' inputs against", since)
	calls := rec.all()
	if !assert.Equal(t, len(started), len(calls), "step handler calls, PHP's step starts (expected) and Go's (actual); Go called %v", rec.handlers()) {
		return
	}
	for i, ev := range started {
		input := *ev["input"]
		if *ev["step_type"] != "single" {
			input = jsonOf(decodeMap(input)["state"])
		}
		assert.Equal(t, *ev["handler"], calls[i].handler, "call %d: handler, PHP's (expected) and Go's (actual)", i+1)
		assert.True(t, jsonEqual(jsonOf(calls[i].input), input), "call %d (%s): Go handler got %s, PHP handler got %s", i+1, calls[i].handler, jsonOf(calls[i].input), input)
	}
}

// The c_three_step_workflow handlers, as the fixture describes them.
type orderItem struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type order struct {
	ID    int64       `json:"id"`
	Items []orderItem `json:"items"`
	Total float64     `json:"total"`
}

func fetchOrder(s queuety.State) queuety.State {
	id, _ := s.Int("order_id")
	return queuety.State{
		"order":  order{ID: id, Items: []orderItem{{"SKU-1", 2}, {"SKU-7", 1}}, Total: 19.5},
		"status": "fetched",
	}
}

var (
	reserveStock   = constant(queuety.State{"status": "reserved", "reservation_id": "R-1001", "_reservation_debug": "dropped by the engine"})
	notifyCustomer = constant(queuety.State{"notified": true, "channel": "email"})
	// orderSteps are all three steps of c_three_step_workflow.
	orderSteps = stepBodies{`App\Steps\FetchOrder`: fetchOrder, "reserve_stock": reserveStock, `App\Steps\NotifyCustomer`: notifyCustomer}
)

// TestPHPThreeStepWorkflowRunByGo runs a workflow PHP dispatched
// (then(A)->then('reserve_stock')->then(C)) on Go workers: first only step
// 0, as PHP's run_worker once did, then the rest. After each part the
// tables must hold what PHP wrote: the shallow merge (ReserveStock's
// "status" overwrites FetchOrder's in place), the dropped
// "_reservation_debug" key (kept in the step_completed event's output),
// current_step, the next job inserted with each completion, and PHP's
// log and event rows.
func TestPHPThreeStepWorkflowRunByGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "c_three_step_workflow.json")
	e.load("dispatched")

	e.runExpect(stepBodies{`App\Steps\FetchOrder`: fetchOrder}, e.snap("after step 0 processed"), 0)
	e.runExpect(orderSteps, e.snap("completed"), 2)
}

// TestPHPDelayStep runs then(A)->delay(30 s)->then('send_followup'),
// dispatched by PHP, on a Go worker. Completing step 0 inserts the
// __queuety_delay job (payload {"step_index":1,...}, cost_units 0) due 30 s
// after step 0 completed; the worker does not take it earlier; once the
// clock has moved on it runs it and the workflow completes.
func TestPHPDelayStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "d_delay_step.json")
	e.load("dispatched")
	rec := &recorder{}
	bodies := stepBodies{
		`App\Steps\SendWelcome`: constant(queuety.State{"welcome_sent": true}),
		"send_followup":         constant(queuety.State{"followup_sent": true}),
	}

	e.runSteps(rec, bodies)
	waiting := e.snap("after step 0 processed")
	e.expect(waiting, rec, 0)

	// The delay job is due at step 0's completion + delay_seconds, in Go's
	// rows as in PHP's.
	for who, jobs := range map[string][]phpfixture.Row{"PHP": rowsOf(waiting, "queuety_jobs"), "Go": e.rows("queuety_jobs")} {
		done := parseTime(t, one(t, jobs, "id", "1")["completed_at"])
		due := parseTime(t, one(t, jobs, "id", "2", "handler", engine.HandlerDelay)["available_at"])
		assert.WithinDuration(t, done.Add(30*time.Second), due, 0, "%s: delay job due time: step 0 completed %s, want +30s", who, done)
	}

	e.clock.Advance(29 * time.Second)
	st := e.runSteps(rec, bodies)
	require.Zero(t, st.Claimed, "jobs claimed: the delay job ran %s early", time.Second)
	e.clock.Advance(time.Second)
	e.runSteps(rec, bodies)

	want := clone(e.snap("completed"))
	// PHP writes two 'completed' log rows for a delay step (advance_step
	// writes one and the worker another); the Go engine writes one, because
	// the step completed once.
	var logs []phpfixture.Row
	seen := false
	for _, r := range rowsOf(want, "queuety_logs") {
		if val(r["handler"]) == engine.HandlerDelay && val(r["event"]) == "completed" {
			if seen {
				continue
			}
			seen = true
		}
		logs = append(logs, r)
	}
	setRows(want, "queuety_logs", logs)
	e.expect(want, rec, 0)
}

func parseTime(t *testing.T, v *string) time.Time {
	t.Helper()
	require.NotNil(t, v, "time is NULL")
	require.GreaterOrEqual(t, len(*v), len(phpfixture.DBNowLayout), "time %q is too short", *v)
	tm, err := time.ParseInLocation(phpfixture.DBNowLayout, (*v)[:len(phpfixture.DBNowLayout)], time.UTC)
	require.NoError(t, err)
	return tm
}

// TestPHPDeadlineSweptByGo sweeps a PHP-dispatched workflow
// (must_complete_within(hours: 1)->on_deadline(...)) past its deadline
// with the Go sweeper: the workflow fails with 'Deadline exceeded', its
// pending step job is buried with the same message (attempts 0, reserved_at
// NULL), and the logs get workflow_failed (job_id 0, an empty handler, queue
// 'default') then workflow_deadline_exceeded (handler = workflow name,
// queue = workflow queue), as PHP writes them. No workflow_events row.
func TestPHPDeadlineSweptByGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "e_deadline.json")
	e.load("after step 0 processed")
	wf, err := e.c.Workflow(e.ctx, 1)
	require.NoError(t, err)
	// PHP's fixture moved deadline_at into the past by SQL; the Go engine
	// compares deadlines with its clock, so the clock moves instead.
	e.clock.Set(wf.DeadlineAt.Add(time.Second))
	n, err := deadline.New(e.c).Deadlines(e.ctx)
	require.NoError(t, err, "Deadlines()")
	require.Equal(t, 1, n, "Deadlines(); PHP's check_deadlines() returned 1")

	want := clone(e.snap("after deadline sweep"))
	// PHP calls the on_deadline handler in the sweeping process before it
	// locks the row, so it can run for a workflow it then does not fail, or
	// twice with two sweepers. The Go engine enqueues it, in the sweep's
	// transaction, as a job on the workflow's queue whose payload is the
	// public state plus a marker: it runs once (its further attempts are
	// for a worker that dies running it), and only for a workflow that
	// really failed.
	setRows(want, "queuety_jobs", append(rowsOf(want, "queuety_jobs"), phpfixture.Row{
		"id": str("3"), "queue": str("default"), "handler": str(`App\Handlers\EscalateOverdueInvoice`),
		"payload":      str(`{"customer_id":501,"invoice_number":"INV-2026-0042","amount":120,"__queuety_callback":{"kind":"deadline","workflow_id":1}}`),
		"payload_hash": nil, "priority": str("0"), "status": str("pending"), "attempts": str("0"), "max_attempts": str("3"),
		"available_at": str("set"), "reserved_at": nil, "completed_at": nil, "failed_at": nil, "error_message": nil,
		"workflow_id": nil, "step_index": nil, "depends_on": nil, "batch_id": nil, "concurrency_group": nil,
		"concurrency_limit": nil, "cost_units": str("1"), "heartbeat_data": nil, "created_at": str("set"),
	}))
	e.compareWith(want)

	// deadline_at is the execution deadline fixed at dispatch: the sweep
	// does not change it (PHP's final value is the one its SQL wrote).
	assert.Equal(t, "2026-11-22 05:18:29", val(one(t, e.rows("queuety_workflows"), "id", "1")["deadline_at"]), "deadline_at (unchanged)")
	fails, err := e.c.Failures(e.ctx, 1, 0)
	require.NoError(t, err, "Failures")
	if assert.Len(t, fails, 1, "failures %s: want one timeout/execution_timeout failure", jsonOf(fails)) {
		assert.Equal(t, driver.FailureTimeout, fails[0].Category, "failure category")
		assert.Equal(t, queuetytype.TimeoutExecution, fails[0].TimeoutKind, "failure timeout kind")
	}

	// The deadline handler runs once, with the public state PHP's handler
	// received.
	var observed []queuety.State
	require.NoError(t, jsonUnmarshal(e.snap("after deadline sweep").Observed["EscalateOverdueInvoice::handle() received"], &observed), "fixture observation")
	require.Len(t, observed, 1, "fixture observation")
	rec := &recorder{}
	w := e.worker()
	w.HandleDeadline(`App\Handlers\EscalateOverdueInvoice`, func(_ context.Context, s queuety.State) error {
		rec.add("deadline", s)
		return nil
	})
	step(w, rec, "send_invoice", constant(queuety.State{"invoice_sent": true}))
	e.drain(w)
	e.clock.Advance(deadline.DeadlineInterval)
	n, err = deadline.New(e.c).Deadlines(e.ctx)
	require.NoError(t, err, "second sweep")
	require.Zero(t, n, "second sweep: workflows failed")
	e.drain(w)
	require.Equal(t, []string{"deadline"}, rec.handlers(), "handler calls: want the deadline handler once")
	calls := rec.all()
	got := jsonOf(calls[0].input)
	assert.True(t, jsonEqual(got, jsonOf(observed[0])), "deadline handler got %s, PHP's got %s", got, jsonOf(observed[0]))
	assert.True(t, jsonEqual(got, `{"customer_id":501,"invoice_number":"INV-2026-0042","amount":120}`), "deadline handler got %s", got)
	j := one(t, e.rows("queuety_jobs"), "id", "2")
	assert.Equal(t, "buried", val(j["status"]), "step job after the sweep: %s", show(j))
}

// approval is the signal payload of f_signal, as a struct so its keys keep
// PHP's order.
type approval struct {
	ApprovedBy string `json:"approved_by"`
	Comment    string `json:"comment"`
}

func recordApproval(s queuety.State) queuety.State {
	return queuety.State{"recorded": true, "approved_by_seen": s["approved_by"]}
}

// TestPHPSignalSettledByGo covers wait_for_signal('approval') between two
// steps. A Go worker runs step 0 and the __queuety_wait_for_signal
// placeholder of a PHP-dispatched workflow into the same waiting rows PHP
// wrote (status, _wait, workflow_waiting event). Then, on PHP's waiting
// rows, Client.Signal does what Queuety::signal() did: the signals row,
// the wait settled inline (state bytes, next job, workflow_resumed event,
// no log row), and the workflow runs to completion.
func TestPHPSignalSettledByGo(t *testing.T) {
	t.Parallel()
	bodies := stepBodies{
		`App\Steps\SubmitExpense`: constant(queuety.State{"submitted": true}),
		"record_approval":         recordApproval,
	}
	t.Run("wait placeholder", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "f_signal.json")
		e.load("dispatched")
		e.runExpect(bodies, e.snap("waiting for signal"), 0)
	})
	t.Run("signal", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "f_signal.json")
		e.load("waiting for signal")
		e.clock.Advance(time.Second)
		require.NoError(t, e.c.Signal(e.ctx, 1, "approval", approval{"manager@example.com", "OK ✓ – Q4/2026"}))
		want := e.snap("after Queuety::signal()")
		e.compareWith(want)
		// The settled state is byte-identical: the signal's keys are
		// appended in the payload's order.
		php := val(one(t, rowsOf(want, "queuety_workflows"), "id", "1")["state"])
		assert.Equal(t, php, val(one(t, e.rows("queuety_workflows"), "id", "1")["state"]), "state after the signal")

		e.runExpect(bodies, e.snap("completed"), 5)
	})
}

// withState returns a {"state","definition"} event input with its state
// replaced.
func withState(t *testing.T, input, stateJSON string) *string {
	t.Helper()
	o, err := phpjsonDecodeObject(input)
	require.NoError(t, err, "event input %s", input)
	s, err := phpjsonDecodeObject(stateJSON)
	require.NoError(t, err, "state %s", stateJSON)
	o.Set("state", s)
	return str(phpjsonMarshal(t, o))
}

// TestPHPParallel runs parallel([FetchAvatar, 'lookup_company'])->then(C),
// dispatched by PHP: first a Go worker that has only the first branch's
// handler (as PHP's run_worker once ran one branch), then one with all.
// The first branch merges its output at once and leaves current_step at 0
// (step_branch_completed); the last branch writes step_branch_completed and
// step_completed and enqueues step 1.
func TestPHPParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "g_parallel.json")
	e.load("dispatched")
	avatar := constant(queuety.State{"avatar_url": "https://cdn.example.com/u/7.png"})

	e.runExpect(stepBodies{`App\Steps\FetchAvatar`: avatar}, e.snap("after the first branch processed"), 0)

	want := clone(e.snap("completed"))
	// PHP's second branch ran within 2 s of the first in the same process
	// and read the workflow state from its 2 s cache, so its step_started
	// event (and the input of its step_branch_completed event) show
	// {"user_id":7} without the first branch's avatar_url, and its handler
	// got that stale state. The Go engine reads the row it locks, so the
	// second branch sees the state the first branch left: that is what
	// PHP itself records in the same event's state_before.
	fresh := `{"user_id":7,"avatar_url":"https:\/\/cdn.example.com\/u\/7.png"}`
	for _, ev := range rowsOf(want, "queuety_workflow_events") {
		if val(ev["handler"]) == "lookup_company" && val(ev["event"]) != "step_completed" {
			ev["input"] = withState(t, *ev["input"], fresh)
			ev["state_before"] = str(fresh)
		}
	}
	e.runExpect(stepBodies{
		`App\Steps\FetchAvatar`:  avatar,
		"lookup_company":         constant(queuety.State{"company": "Acme GmbH"}),
		`App\Steps\MergeProfile`: constant(queuety.State{"profile_complete": true}),
	}, want, 2)
}

// TestPHPNextStep runs a PHP-dispatched workflow whose first step returns
// {"category":"faq","_next_step":"auto_reply"}: the Go engine jumps to the
// step named auto_reply (index 2) and never enqueues 'escalate'.
// "_next_step" is not stored in state but stays in the step_completed
// output, and the workflow completes with current_step 4.
func TestPHPNextStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "h_next_step.json")
	e.load("dispatched")
	classify := constant(queuety.State{"category": "faq", "_next_step": "auto_reply"})

	e.runExpect(stepBodies{`App\Steps\ClassifyTicket`: classify}, e.snap("after step 0 (classify) processed"), 0)
	e.runExpect(stepBodies{
		`App\Steps\ClassifyTicket`: classify,
		"escalate_ticket":          constant(queuety.State{"escalated": true}),
		`App\Steps\AutoReply`:      constant(queuety.State{"replied": true}),
		"close_ticket":             constant(queuety.State{"closed": true}),
	}, e.snap("completed"), 2)
}

// pushToCRM is the push_to_crm step of i_failed_step_retry_workflow: it
// records its input in rec and fails while the CRM is down.
func pushToCRM(rec *recorder, down bool) queuety.StepFunc {
	return func(_ context.Context, s queuety.State) (queuety.State, error) {
		rec.add("push_to_crm", s)
		if down {
			return nil, &phpException{`App\Exceptions\CrmUnavailable`, "CRM API timed out after 30s"}
		}
		return queuety.State{"pushed": true}, nil
	}
}

// lastEventID returns the highest workflow_events id of a snapshot (0 when
// it has none).
func lastEventID(t *testing.T, s *phpfixture.Snapshot) int {
	t.Helper()
	last := 0
	for _, ev := range s.Rows("queuety_workflow_events") {
		id, err := strconv.Atoi(val(ev["id"]))
		require.NoError(t, err, "workflow_events id %s", val(ev["id"]))
		last = max(last, id)
	}
	return last
}

// TestPHPFailedStepRetriedByGo covers a step with max_attempts(2) that
// fails. From PHP's dispatch, a Go worker fails step 1 once (pending,
// attempts 1, due 60 s later; logs started/failed/retried; step_failed
// event with error {"message","class","trace"}), then again (job buried,
// workflow failed, workflow_failed log with job_id 2 and an empty handler).
// From PHP's failed workflow, RetryWorkflow does what retry_workflow()
// did (running, failed_at and error_message NULL, a new job for step 1,
// the buried job untouched, no log row), and the workflow completes.
func TestPHPFailedStepRetriedByGo(t *testing.T) {
	t.Parallel()
	// crmWorker runs both steps, recording their inputs in rec;
	// push_to_crm fails while the CRM is down.
	crmWorker := func(e *env, rec *recorder, down bool) *worker.Worker {
		w := e.worker()
		step(w, rec, `App\Steps\ExportContacts`, constant(queuety.State{"exported": 2}))
		w.HandleStep("push_to_crm", pushToCRM(rec, down))
		return w
	}
	t.Run("step fails", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "i_failed_step_retry_workflow.json")
		e.load("dispatched")
		rec := &recorder{}
		w := crmWorker(e, rec, true)
		e.drain(w)
		e.expect(e.snap("step 1 failed once"), rec, 0)
		// Queuety's default backoff after attempt 1: 2^1 × 30 s.
		due := parseTime(t, one(t, e.rows("queuety_jobs"), "id", "2")["available_at"])
		assert.WithinDuration(t, e.clock.Now().Add(60*time.Second), due, 0, "retry due time: failure time %s + 60s", e.clock.Now())
		// PHP's fixture made the retry due by SQL; here the clock moves.
		e.clock.Advance(60 * time.Second)
		e.drain(w)
		e.expect(e.snap("workflow failed"), rec, 0)
	})
	t.Run("retry workflow", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "i_failed_step_retry_workflow.json")
		failed := e.load("workflow failed")
		e.clock.Advance(time.Second)
		require.NoError(t, e.c.RetryWorkflow(e.ctx, 1))
		e.compareWith(e.snap("after Queuety::retry_workflow()"))

		rec := &recorder{}
		e.drain(crmWorker(e, rec, false))
		e.expect(e.snap("completed after the CRM came back"), rec, lastEventID(t, failed))
	})
}

// TestPHPPausedQueueAndWorkflow covers Queuety::pause('reports') and
// pause_workflow(). DispatchWorkflow and PauseWorkflow write the rows PHP
// wrote for them. On PHP's rows, a Go worker does not claim the paused
// queue's job; it does run the paused workflow's already-queued step 0,
// which merges its output and moves current_step to 1 without enqueueing
// step 1. ResumeWorkflow then inserts step 1's job and logs
// workflow_resumed (empty handler), and ResumeQueue deletes the queue_states
// row, as resume_workflow() and resume('reports') did.
func TestPHPPausedQueueAndWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "j_paused_queue_and_workflow.json")
	rec := &recorder{}
	newWorker := func() *worker.Worker {
		w := e.worker(worker.Queues("default", "reports"))
		w.HandleJob(`App\Jobs\BuildExport`, func(_ context.Context, p queuety.Payload) error {
			rec.add(`App\Jobs\BuildExport`, p)
			return nil
		})
		step(w, rec, `App\Steps\DownloadFeed`, constant(queuety.State{"feed_rows": 1200}))
		step(w, rec, "import_products", constant(queuety.State{"imported": 1200}))
		return w
	}

	paused := e.load("queue \"reports\" paused")
	st := e.drain(newWorker())
	assert.Zero(t, st.Claimed, "jobs a Go worker claimed from the paused queue")
	// PHP's worker pass wrote a '_worker' debug row; the Go worker skips a
	// paused queue in its claim query and writes nothing.
	e.compareWith(paused)

	// What PHP did next, done with the Go API on the same rows: dispatch
	// the workflow and pause it (workflow_paused log, empty handler, queue
	// 'default').
	e.clock.Set(e.snap("workflow dispatched and paused").Now())
	id, err := e.c.DispatchWorkflow(e.ctx, queuety.WorkflowDefinition{
		Name:  "catalog_import",
		Steps: []queuety.WorkflowStep{single(`App\Steps\DownloadFeed`), single("import_products")},
	}, queuety.State{"feed": "https://example.com/feed.csv"})
	require.NoError(t, err)
	require.NoError(t, e.c.PauseWorkflow(e.ctx, id))
	e.compareWith(e.snap("workflow dispatched and paused"))

	// From here on, PHP's rows.
	e.load("workflow dispatched and paused")
	e.drain(newWorker())
	e.compareWith(e.snap("paused workflow after its already-queued step 0 ran"))
	assert.Equal(t, []string{`App\Steps\DownloadFeed`}, rec.handlers(), "handlers run: want only DownloadFeed")

	e.clock.Advance(time.Second)
	require.NoError(t, e.c.ResumeWorkflow(e.ctx, 1))
	require.NoError(t, e.c.ResumeQueue(e.ctx, "reports"))
	e.compareWith(e.snap("after Queuety::resume_workflow() and Queuety::resume(reports)"))

	// PauseQueue writes the row PHP's pause() wrote.
	require.NoError(t, e.c.PauseQueue(e.ctx, "reports"))
	c := &cmp{e: e}
	c.byKey("queuety_queue_states", rowsOf(paused, "queuety_queue_states"), e.rows("queuety_queue_states"))
	require.NoError(t, e.c.ResumeQueue(e.ctx, "reports"))

	// Resumed, both run.
	e.drain(newWorker())
	jobs := e.rows("queuety_jobs")
	for _, id := range []string{"1", "2", "3"} {
		j := one(t, jobs, "id", id)
		assert.Equal(t, "completed", val(j["status"]), "job %s after resuming: %s", id, show(j))
	}
	wf := one(t, e.rows("queuety_workflows"), "id", "1")
	assert.Equal(t, "completed", val(wf["status"]), "workflow status after resuming: %s", show(wf))
	assert.Equal(t, "2", val(wf["current_step"]), "workflow current_step after resuming: %s", show(wf))
}
