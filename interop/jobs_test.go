package interop_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// jobRecorder registers plain-job handlers that record the job id and
// payload of each call.
type jobRecorder struct {
	mu       sync.Mutex
	ids      []string
	payloads map[string]queuety.Payload
}

func (r *jobRecorder) handle(w *worker.Worker, name string, fail func(attempt int) error) {
	w.HandleJob(name, func(ctx context.Context, p queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		id := strconv.FormatInt(info.JobID, 10)
		r.mu.Lock()
		r.ids = append(r.ids, id)
		if r.payloads == nil {
			r.payloads = map[string]queuety.Payload{}
		}
		r.payloads[id] = p
		r.mu.Unlock()
		if fail != nil {
			return fail(info.Attempt)
		}
		return nil
	})
}

// TestPHPPlainJobs drains PHP-dispatched plain jobs (aliases and class
// names, queues default and emails, priorities, delays, an empty payload
// and a payload full of json_encode corner cases) with a Go worker on
// queues default then emails. The Go worker takes them in PHP's order:
// default by priority (urgent 4, high 3), then 1, 6, 7, 9, then emails (2).
// Delayed jobs 5 and 8 stay untouched, payload bytes are never rewritten,
// each completed job has status completed, attempts 1 and a started and a
// completed log row (attempt 1), and handlers get the payload PHP stored.
func TestPHPPlainJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "a_plain_jobs.json")
	dispatched := e.load("dispatched")
	rec := &jobRecorder{}
	w := e.worker(worker.Queues("default", "emails"))
	for _, h := range []string{"send_email", `App\Jobs\SendWelcomeEmail`, `App\Jobs\ImportFeed`} {
		rec.handle(w, h, nil)
	}
	st := e.drain(w)
	assert.Equal(t, int64(7), st.Succeeded, "jobs succeeded; PHP's flush_queue() returned 7")
	want := e.snap("after Queuety::flush_queue")
	e.compareWith(want)

	var order []string
	for _, l := range e.rows("queuety_logs") {
		if val(l["event"]) == "completed" {
			order = append(order, val(l["job_id"]))
		}
	}
	wantOrder := []string{"4", "3", "1", "6", "7", "9", "2"}
	assert.Equal(t, wantOrder, order, "completed order in the logs, PHP's expected")
	assert.Equal(t, wantOrder, rec.ids, "completed order of the handler calls, PHP's expected")

	// The delayed jobs are exactly as PHP dispatched them, every column.
	got := e.rows("queuety_jobs")
	for _, id := range []string{"5", "8"} {
		w, g := one(t, rowsOf(dispatched, "queuety_jobs"), "id", id), one(t, got, "id", id)
		for col := range w {
			assert.Equal(t, val(w[col]), val(g[col]), "delayed job %s: %s changed", id, col)
		}
	}
	// Handlers get the stored payload: PHP's [] as an empty object, {} too,
	// 1.0 stored as 1, 9007199254740993 exactly.
	for _, j := range rowsOf(dispatched, "queuety_jobs") {
		p, ok := rec.payloads[val(j["id"])]
		if !ok {
			continue
		}
		assert.True(t, jsonEqual(jsonOf(p), val(j["payload"])), "job %s: handler got %s, stored payload %s", val(j["id"]), jsonOf(p), val(j["payload"]))
	}
	n, _ := rec.payloads["9"].Int("big_int")
	assert.Equal(t, int64(9007199254740993), n, "big_int; job 9's handler got %v", rec.payloads["9"]["big_int"])
}

// TestPHPRetryAndBury fails PHP-dispatched jobs on a Go worker. Attempt 1
// of both fails: each goes back to pending with attempts 1, reserved_at and
// error_message NULL, due at failure time + 60 s (Queuety's exponential
// backoff), and logs started, failed (error_message, error_class) and
// retried. Attempt 2: DeliverWebhook completes with attempts 2, and
// charge_card (max_attempts 2) is buried with its message, reserved_at
// kept, and one 'buried' log row, no failed/retried rows. The worker
// takes the jobs in PHP's order (1, 2, 1, 2); after attempt 2 the log rows
// are compared per job, because DeliverWebhook's success is recorded by the
// worker's completer while charge_card already runs, so the two jobs' rows
// of attempt 2 may be written in either order.
func TestPHPRetryAndBury(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "b_retry_and_bury.json")
	e.load("dispatched")
	rec := &jobRecorder{}
	w := e.worker()
	rec.handle(w, `App\Jobs\DeliverWebhook`, func(attempt int) error {
		if attempt == 1 {
			return &phpException{"RuntimeException", "Upstream returned HTTP 503"}
		}
		return nil
	})
	rec.handle(w, "charge_card", func(int) error {
		return &phpException{`App\Exceptions\PaymentDeclined`, "Card declined: insufficient funds"}
	})

	st := e.drain(w)
	assert.Equal(t, int64(2), st.Failed, "attempt 1: jobs failed")
	e.compareWith(e.snap("after attempt 1 of both"))
	failedAt := e.clock.Now()
	for _, j := range e.rows("queuety_jobs") {
		due := parseTime(t, j["available_at"])
		assert.WithinDuration(t, failedAt.Add(60*time.Second), due, 0, "job %s due time: failure time %s + 60s", val(j["id"]), failedAt)
	}

	// Not due before the backoff has passed. (PHP's fixture made the jobs
	// due by SQL; here the clock moves.)
	e.clock.Advance(59 * time.Second)
	st = e.drain(w)
	require.Zero(t, st.Claimed, "jobs claimed before their backoff passed")
	e.clock.Advance(time.Second)
	st = e.drain(w)
	assert.Equal(t, int64(1), st.Succeeded, "attempt 2: jobs succeeded; stats %+v", st)
	assert.Equal(t, int64(1), st.Failed, "attempt 2: jobs failed; stats %+v", st)
	after2 := e.snap("after attempt 2")
	e.compareWith(after2, logsJobsInAnyOrder)

	// The order across jobs that compareWith left out: the worker ran the
	// attempts in the order of PHP's 'started' rows.
	var phpOrder []string
	for _, l := range after2.Rows("queuety_logs") {
		if val(l["event"]) == "started" {
			phpOrder = append(phpOrder, val(l["job_id"]))
		}
	}
	assert.Len(t, phpOrder, 4, "PHP's 'started' rows")
	assert.Equal(t, phpOrder, rec.ids, "handler calls by job id, in the order of PHP's 'started' rows")
}
