package interop_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// The compensation classes of interop/php/handlers.php.
const (
	hUndoStep  = `QueuetyGoInterop\UndoStep`
	hUndoOther = `QueuetyGoInterop\UndoOther`
)

// undoRecorder records the compensations a Go worker runs, in order, as
// "<class>@<state JSON>".
type undoRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (u *undoRecorder) register(w *worker.Worker) {
	for _, h := range []string{hUndoStep, hUndoOther} {
		w.HandleCompensation(h, func(_ context.Context, s queuety.State) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.calls = append(u.calls, h+"@"+jsonOf(s))
			return nil
		})
	}
}

func (u *undoRecorder) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.calls...)
}

// sagaRun runs every due job once with a Go worker that has the scenario
// step handlers and the two compensation handlers.
func (e *env) sagaRun(rec *recorder, undo *undoRecorder) worker.Stats {
	e.t.Helper()
	w := e.worker()
	registerFan(w, rec, nil)
	if undo != nil {
		undo.register(w)
	}
	return e.drain(w)
}

// failStepAttempts gives the pending FailStep job the max_attempts that
// PHP reads from FailStep::config() (1), in the column and in
// __queuety_runtime: a Go worker has no PHP class to ask and gives the job
// the workflow's attempts (3).
func (e *env) failStepAttempts() {
	e.t.Helper()
	j := one(e.t, find(e.rows("queuety_jobs"), "status", "pending"), "handler", hFailStep)
	require.Equal(e.t, `{"__queuety_runtime":{"max_attempts":3}}`, val(j["payload"]), "Go FailStep job payload")
	_, err := e.db.Exec("UPDATE `"+e.prefix+"queuety_jobs` SET max_attempts = 1, payload = ? WHERE id = ?",
		`{"__queuety_runtime":{"max_attempts":1}}`, val(j["id"]))
	require.NoError(e.t, err)
}

// undoJob is one compensation as a Go worker runs it: a durable job.
type undoJob struct {
	handler string
	index   int    // the _compensation_stack entry
	state   string // its state snapshot, as PHP encoded it
}

// goCompensationJobs adds to PHP's rows what the Go engine writes for the
// compensations of workflow wf, run for reason ("failure" or "cancel"):
// Queuety PHP runs each compensation inline (Compensation::handle()) and
// writes no row for it; the Go engine enqueues one job per compensation,
// newest first, with handler = the compensation class and payload = the
// step's state snapshot plus a "__queuety_callback" marker, no workflow_id
// or step_index, and runs it like any job ('started' and 'completed' log
// rows, both with attempt 1). The workflow's state (_compensation_stack,
// _compensated, _compensation_cause) is the same as PHP's.
func goCompensationJobs(t *testing.T, s *phpfixture.Snapshot, wf int, reason string, undo ...undoJob) {
	t.Helper()
	jobs := rowsOf(s, "queuety_jobs")
	next := 0
	for _, j := range jobs {
		next = max(next, atoi(t, val(j["id"])))
	}
	logs := rowsOf(s, "queuety_logs")
	for _, u := range undo {
		next++
		id := strconv.Itoa(next)
		require.True(t, strings.HasSuffix(u.state, "}"), "state %s", u.state)
		marker := fmt.Sprintf(`"__queuety_callback":{"kind":"compensation","workflow_id":%d,"index":%d,"reason":%q}}`, wf, u.index, reason)
		payload := strings.TrimSuffix(u.state, "}")
		if payload != "{" {
			payload += ","
		}
		jobs = append(jobs, phpfixture.Row{
			"id": str(id), "queue": str("default"), "handler": str(u.handler), "payload": str(payload + marker),
			"priority": str("0"), "status": str("completed"), "attempts": str("1"), "max_attempts": str("3"),
			"available_at": str("set"), "reserved_at": str("set"), "completed_at": str("set"), "failed_at": nil,
			"error_message": nil, "workflow_id": nil, "step_index": nil, "created_at": str("set"),
			"payload_hash": nil, "depends_on": nil, "batch_id": nil, "concurrency_group": nil,
			"concurrency_limit": nil, "cost_units": str("1"), "heartbeat_data": nil,
		})
		for _, ev := range []string{"started", "completed"} {
			dur := str("0")
			if ev == "started" {
				dur = nil
			}
			logs = append(logs, phpfixture.Row{
				"id": str("0"), "job_id": str(id), "workflow_id": nil, "step_index": nil, "handler": str(u.handler),
				"queue": str("default"), "event": str(ev), "attempt": str("1"), "duration_ms": dur,
				"memory_peak_kb": nil, "error_message": nil, "error_class": nil, "error_trace": nil,
				"context": nil, "created_at": str("set"),
			})
		}
	}
	setRows(s, "queuety_jobs", jobs)
	setRows(s, "queuety_logs", logs)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "number %q", s)
	return n
}

// TestPHPCompensation runs r_compensation's saga (compensate_with on steps
// 0 and 1, FailStep at step 2, compensate_on_failure) from PHP's dispatch
// on Go workers: the workflow fails with FailStep's error, and the two
// compensations run newest first with the state after their step, leaving
// the same _compensation_stack, _compensated and _compensation_cause
// "failure" as PHP. Then Client.CancelWorkflow on PHP's workflow waiting
// for signal 'go' compensates its one completed step with cause "cancel".
func TestPHPCompensation(t *testing.T) {
	t.Parallel()
	t.Run("failure", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "r_compensation.json")
		e.load("dispatched")
		rec, undo := &recorder{}, &undoRecorder{}
		w := e.worker()
		registerFan(w, rec, nil, hIncrement)
		e.drain(w)
		e.failStepAttempts()
		e.sagaRun(rec, undo)

		want := clone(e.snap("failed and compensated"))
		goCompensationJobs(t, want, 1, "failure",
			undoJob{hUndoOther, 1, `{"order":7,"counter":2}`},
			undoJob{hUndoStep, 0, `{"order":7,"counter":1}`})
		e.expect(want, rec, 0)
		assert.Equal(t, []string{hUndoOther + `@{"counter":2,"order":7}`, hUndoStep + `@{"counter":1,"order":7}`}, undo.all(),
			"compensations, newest first, each with the state after its step")
		// The end state is byte-identical.
		php := val(one(t, rowsOf(want, "queuety_workflows"), "id", "1")["state"])
		assert.Equal(t, php, val(one(t, e.rows("queuety_workflows"), "id", "1")["state"]), "state after compensation")
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "r_compensation.json")
		e.load("second workflow waiting")
		e.clock.Advance(time.Second)
		require.NoError(t, e.c.CancelWorkflow(e.ctx, 2))
		undo := &undoRecorder{}
		e.sagaRun(&recorder{}, undo)

		want := clone(e.snap("cancelled and compensated"))
		goCompensationJobs(t, want, 2, "cancel", undoJob{hUndoStep, 0, `{"order":8,"counter":1}`})
		e.compareWith(want)
		assert.Equal(t, []string{hUndoStep + `@{"counter":1,"order":8}`}, undo.all(), "the cancel compensation")
		php := val(one(t, rowsOf(want, "queuety_workflows"), "id", "2")["state"])
		assert.Equal(t, php, val(one(t, e.rows("queuety_workflows"), "id", "2")["state"]), "state after cancel")
	})
}

// TestPHPSignalFamily covers wait_for_signals(['legal','finance'], any,
// 'first'), wait_for_approval(), wait_for_decision() and wait_for_input(),
// each the first step before Finish. A Go worker runs PHP's four
// __queuety_wait_for_signal placeholders into PHP's waiting rows; then, on
// PHP's waiting rows, Client.Signal, Approve, Reject and SubmitInput do what
// Queuety::signal, approve_workflow, reject_workflow and
// submit_workflow_input did (signals rows, the waits settled inline with
// PHP's result shapes, workflow_resumed), and the Finish steps complete.
func TestPHPSignalFamily(t *testing.T) {
	t.Parallel()
	t.Run("wait placeholders", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "s_signal_family.json")
		e.load("dispatched")
		rec := &recorder{}
		e.sagaRun(rec, nil)
		want := clone(e.snap("waiting"))
		e.compareWith(want)
		assert.Empty(t, rec.handlers(), "step handlers called while waiting")
	})
	t.Run("answers", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "s_signal_family.json")
		e.load("waiting")
		e.clock.Advance(time.Second)
		require.NoError(t, e.c.Signal(e.ctx, 1, "finance", map[string]any{"ok": true}))
		for _, a := range []struct {
			name string
			fn   func(context.Context, int64, any) (string, error)
			id   int64
			data map[string]any
			want string
		}{
			{"Approve", e.c.Approve, 2, map[string]any{"by": "ann"}, "approval"},
			{"Reject", e.c.Reject, 3, map[string]any{"reason": "no"}, "rejected"},
			{"SubmitInput", e.c.SubmitInput, 4, map[string]any{"text": "hello"}, "input"},
		} {
			sig, err := a.fn(e.ctx, a.id, a.data)
			require.NoError(t, err, a.name)
			assert.Equal(t, a.want, sig, "%s: signal sent", a.name)
		}
		rec := &recorder{}
		e.sagaRun(rec, nil)
		want := e.snap("answered")
		e.expect(want, rec, 8)
		for _, r := range rowsOf(want, "queuety_workflows") {
			id := val(r["id"])
			assert.Equal(t, val(r["state"]), val(one(t, e.rows("queuety_workflows"), "id", id)["state"]), "workflow %s state", id)
		}
	})
}

// TestPHPRewindFork runs Client.RewindWorkflow(1, 0) on PHP's completed
// three-step workflow (the state recorded after step 0 back, status
// running, current_step 1, the step 1 job, a workflow_rewound log row),
// Client.ForkWorkflow on the rewound workflow (a copy named
// <name>_fork_<unix time> at the same step with its own step 1 job and
// workflow_forked log rows on both), then a Go worker completes both.
func TestPHPRewindFork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "t_rewind_fork.json")
	e.load("completed")
	rewound := e.snap("rewound")
	e.clock.Set(rewound.Now())
	require.NoError(t, e.c.RewindWorkflow(e.ctx, 1, 0))
	want := clone(rewound)
	e.compareWith(want)

	forked := e.snap("forked")
	e.clock.Set(forked.Now())
	id, err := e.c.ForkWorkflow(e.ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(2), id, "fork id")
	want = clone(forked)
	goForkName(t, e, want)
	e.compareWith(want)

	rec := &recorder{}
	e.sagaRun(rec, nil)
	want = clone(e.snap("both completed"))
	goForkName(t, e, want)
	e.expect(want, rec, 6)
}

// goForkName replaces the unix time in PHP's fork name
// (rewind_me_fork_<time()>) with the one in Go's, after checking the
// prefix: PHP took time() when it forked, Go its clock.
func goForkName(t *testing.T, e *env, s *phpfixture.Snapshot) {
	t.Helper()
	const prefix = "rewind_me_fork_"
	got := val(one(t, e.rows("queuety_workflows"), "id", "2")["name"])
	require.True(t, strings.HasPrefix(got, prefix), "Go fork name %q", got)
	for _, table := range []string{"queuety_workflows", "queuety_logs"} {
		for _, r := range rowsOf(s, table) {
			for _, col := range []string{"name", "handler"} {
				if v, ok := r[col]; ok && v != nil && strings.HasPrefix(*v, prefix) {
					if *v != got {
						t.Logf("fork name: PHP %s, Go %s", *v, got)
					}
					r[col] = str(got)
				}
			}
		}
	}
}
