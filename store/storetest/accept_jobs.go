package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Jobs/DispatchWritesQueuetyRow", testDispatchRow)
	register("Jobs/DispatchRejectsBadInput", testDispatchRejects)
	register("Jobs/DispatchMany", testDispatchMany)
	register("Jobs/Unique", testUnique)
	register("Jobs/ClaimOrder", testClaimOrder)
	register("Jobs/ClaimQueueOrder", testClaimQueueOrder)
	register("Jobs/ClaimRespectsDelay", testClaimDelay)
	register("Jobs/ClaimSkipsPausedQueue", testPausedQueue)
	register("Jobs/ClaimOnlyKnownHandlers", testClaimKnownHandlers)
	register("Jobs/DependsOn", testDependsOn)
	register("Jobs/CompleteWritesLogs", testCompleteLogs)
	register("Jobs/RetryBackoff", testRetryBackoff)
	register("Jobs/BuryAfterMaxAttempts", testBury)
	register("Jobs/NonRetryableBuriesAtOnce", testNonRetryable)
	register("Jobs/RetryBuriedJob", testRetryBuried)
	register("Jobs/ReleaseHandsBack", testRelease)
	register("Jobs/StaleRecovery", testStaleRecovery)
	register("Jobs/StaleRecoveryConcurrentSweepers", testStaleConcurrent)
	register("Jobs/LeaseRenewalKeepsClaim", testLeaseRenewal)
	register("Jobs/ConcurrentClaimsExactlyOnce", testConcurrentClaims)
	register("Jobs/HeartbeatFencing", testHeartbeatFencing)
	register("Jobs/PurgeCompleted", testPurge)
	register("Jobs/MalformedPayloadIsBuried", testMalformedPayload)
	register("Jobs/HandlerPanicFailsAttempt", testPanic)
}

func testDispatchRow(t *testing.T, e *Env) {
	id := e.Dispatch("send_email", queuety.State{"url": "https://example.com/a/b", "name": "Zoë", "n": 1.0, "f": 1.5})
	j := e.Job(id)
	Equal(t, "queue", j.Queue, "default")
	Equal(t, "handler", j.Handler, "send_email")
	Equal(t, "payload", string(j.Payload), `{"f":1.5,"n":1,"name":"Zo\u00eb","url":"https:\/\/example.com\/a\/b"}`)
	Equal(t, "priority", j.Priority, queuety.PriorityLow)
	Equal(t, "status", j.Status, queuety.JobPending)
	Equal(t, "attempts", j.Attempts, 0)
	Equal(t, "max_attempts", j.MaxAttempts, 3)
	Equal(t, "available_at", j.AvailableAt, Epoch)
	Equal(t, "created_at", j.CreatedAt, Epoch)
	Equal(t, "cost_units", j.CostUnits, 1)
	Equal(t, "workflow_id", j.WorkflowID, int64(0))
	if j.StepIndex != nil || j.PayloadHash != "" || j.ReservedAt != (time.Time{}) {
		t.Fatalf("unexpected non-NULL columns: %+v", j)
	}

	empty := e.Dispatch("noop", nil, queuety.OnQueue("emails"), queuety.WithPriority(queuety.PriorityUrgent),
		queuety.Delay(90*time.Second), queuety.MaxAttempts(5))
	j = e.Job(empty)
	Equal(t, "empty payload", string(j.Payload), `[]`)
	Equal(t, "queue", j.Queue, "emails")
	Equal(t, "priority", j.Priority, queuety.PriorityUrgent)
	Equal(t, "available_at", j.AvailableAt, Epoch.Add(90*time.Second))
	Equal(t, "max_attempts", j.MaxAttempts, 5)

	type order struct {
		ID    int    `json:"order_id"`
		Email string `json:"email"`
	}
	j = e.Job(e.Dispatch("struct", order{ID: 7, Email: "a@b.c"}))
	Equal(t, "struct payload keeps field order", string(j.Payload), `{"order_id":7,"email":"a@b.c"}`)
}

func testDispatchRejects(t *testing.T, e *Env) {
	cases := []struct {
		name    string
		handler string
		payload any
		opts    []queuety.JobOption
		want    error
	}{
		{"empty handler", "", nil, nil, queuety.ErrInvalidArgument},
		{"long handler", strings.Repeat("h", 256), nil, nil, queuety.ErrInvalidArgument},
		{"list payload", "h", []int{1, 2}, nil, queuety.ErrInvalidArgument},
		{"string payload", "h", "text", nil, queuety.ErrInvalidArgument},
		{"NaN", "h", queuety.State{"x": math.NaN()}, nil, queuety.ErrInvalidArgument},
		{"invalid UTF-8", "h", queuety.State{"x": "\xff\xfe"}, nil, queuety.ErrInvalidArgument},
		{"reserved key", "h", queuety.State{"__queuety_runtime": 1}, nil, queuety.ErrInvalidArgument},
		{"priority out of range", "h", nil, []queuety.JobOption{queuety.WithPriority(7)}, queuety.ErrInvalidArgument},
		{"negative delay", "h", nil, []queuety.JobOption{queuety.Delay(-time.Second)}, queuety.ErrInvalidArgument},
		{"too many attempts", "h", nil, []queuety.JobOption{queuety.MaxAttempts(256)}, queuety.ErrInvalidArgument},
		{"negative attempts", "h", nil, []queuety.JobOption{queuety.MaxAttempts(-1)}, queuety.ErrInvalidArgument},
		{"negative backoff", "h", nil, []queuety.JobOption{queuety.WithBackoff(queuety.BackoffSeconds(5, -1))}, queuety.ErrInvalidArgument},
		{"bad coefficient", "h", nil, []queuety.JobOption{queuety.WithBackoff(queuety.BackoffPolicy(time.Second, 0.5, time.Minute))}, queuety.ErrInvalidArgument},
		{"long queue", "h", nil, []queuety.JobOption{queuety.OnQueue(strings.Repeat("q", 65))}, queuety.ErrInvalidArgument},
		{"sub-second timeout", "h", nil, []queuety.JobOption{queuety.StartToClose(500 * time.Millisecond)}, queuety.ErrInvalidTimeout},
		{"negative timeout", "h", nil, []queuety.JobOption{queuety.HeartbeatTimeout(-time.Second)}, queuety.ErrInvalidTimeout},
	}
	for _, c := range cases {
		_, err := e.C.Dispatch(e.Ctx, c.handler, c.payload, c.opts...)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	Equal(t, "jobs written by rejected dispatches", len(e.Jobs(driver.JobFilter{})), 0)
}

func testDispatchMany(t *testing.T, e *Env) {
	var reqs []queuety.JobRequest
	for i := range 1200 {
		reqs = append(reqs, queuety.JobRequest{Handler: "bulk", Payload: queuety.State{"i": i}})
	}
	ids, err := e.C.DispatchMany(e.Ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "ids", len(ids), 1200)
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("ids not increasing at %d: %d after %d", i, id, ids[i-1])
		}
	}
	j := e.Job(ids[777])
	Equal(t, "payload of item 777", string(j.Payload), `{"i":777}`)
	// One bad item rejects the whole batch.
	_, err = e.C.DispatchMany(e.Ctx, []queuety.JobRequest{{Handler: "ok"}, {Handler: ""}})
	if !errors.Is(err, queuety.ErrInvalidArgument) {
		t.Fatalf("bad batch: err = %v", err)
	}
	Equal(t, "jobs from the rejected batch", len(e.Jobs(driver.JobFilter{Handler: "ok"})), 0)
	Equal(t, "jobs in total", len(e.Jobs(driver.JobFilter{Limit: 2000})), 1200)
}

func testUnique(t *testing.T, e *Env) {
	a := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	b := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	c := e.Dispatch("report", queuety.State{"day": "tue"}, queuety.Unique())
	Equal(t, "duplicate returns the first id", b, a)
	if c == a {
		t.Fatal("a different payload must get its own job")
	}
	// sha256 of the stored payload bytes, as Queuety PHP computes it.
	Equal(t, "payload_hash", e.Job(a).PayloadHash, sha256Hex(`{"day":"mon"}`))
	e.completeAll(e.Claim(10, "report"), a, c)
	d := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	if d == a {
		t.Fatal("a completed job must not block a new unique dispatch")
	}
}

func testClaimOrder(t *testing.T, e *Env) {
	low := e.Dispatch("h", nil)
	urgent := e.Dispatch("h", nil, queuety.WithPriority(queuety.PriorityUrgent))
	normal := e.Dispatch("h", nil, queuety.WithPriority(queuety.PriorityNormal))
	high := e.Dispatch("h", nil, queuety.WithPriority(queuety.PriorityHigh))
	low2 := e.Dispatch("h", nil)
	// A low job that became due earlier than low and low2 goes first among lows.
	e.Clock.Advance(-10 * time.Second)
	early := e.Dispatch("h", nil)
	e.Clock.Advance(10 * time.Second)
	got := IDs(e.Claim(3, "h"))
	EqualIDs(t, "first batch", got, []int64{urgent, high, normal})
	got = IDs(e.Claim(10, "h"))
	EqualIDs(t, "second batch", got, []int64{early, low, low2})
}

func testClaimQueueOrder(t *testing.T, e *Env) {
	b1 := e.Dispatch("h", nil, queuety.OnQueue("b"), queuety.WithPriority(queuety.PriorityUrgent))
	a1 := e.Dispatch("h", nil, queuety.OnQueue("a"))
	a2 := e.Dispatch("h", nil, queuety.OnQueue("a"))
	got := IDs(e.ClaimFrom(e.C, []string{"a", "b"}, 10, "h"))
	EqualIDs(t, "claim across queues", got, []int64{a1, a2, b1})
}

func testClaimDelay(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.Delay(30*time.Second))
	Equal(t, "claimed before due", len(e.Claim(10, "h")), 0)
	e.Clock.Advance(29 * time.Second)
	Equal(t, "claimed 1 s before due", len(e.Claim(10, "h")), 0)
	e.Clock.Advance(time.Second)
	EqualIDs(t, "claimed when due", IDs(e.Claim(10, "h")), []int64{id})
}

func testPausedQueue(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.OnQueue("reports"))
	if err := e.C.PauseQueue(e.Ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	if err := e.C.PauseQueue(e.Ctx, "reports"); err != nil {
		t.Fatalf("pausing twice: %v", err)
	}
	Equal(t, "claimed from paused queue", len(e.ClaimFrom(e.C, []string{"reports"}, 10, "h")), 0)
	states, err := e.C.QueueStates(e.Ctx)
	if err != nil || len(states) != 1 || !states[0].Paused || states[0].Queue != "reports" {
		t.Fatalf("queue states = %+v, %v", states, err)
	}
	Equal(t, "attempts of job in paused queue", e.Job(id).Attempts, 0)
	if err := e.C.ResumeQueue(e.Ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	states, err = e.C.QueueStates(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	Equal(t, "queue_states rows after resume (Queuety deletes the row)", len(states), 0)
	EqualIDs(t, "claimed after resume", IDs(e.ClaimFrom(e.C, []string{"reports"}, 10, "h")), []int64{id})
}

func testClaimKnownHandlers(t *testing.T, e *Env) {
	other := e.Dispatch("php_only", nil)
	mine := e.Dispatch("go_handler", nil)
	EqualIDs(t, "claimed", IDs(e.Claim(10, "go_handler")), []int64{mine})
	j := e.Job(other)
	Equal(t, "unknown handler's job status", j.Status, queuety.JobPending)
	Equal(t, "unknown handler's job attempts", j.Attempts, 0)
}

func testDependsOn(t *testing.T, e *Env) {
	a := e.Dispatch("h", nil)
	b := e.Dispatch("h", nil, queuety.DependsOn(a))
	first := e.Claim(10, "h")
	EqualIDs(t, "claimable before the dependency completed", IDs(first), []int64{a})
	Equal(t, "claim while a runs", len(e.Claim(10, "h")), 0)
	e.Complete(first...)
	EqualIDs(t, "claimable after", IDs(e.Claim(10, "h")), []int64{b})
}

func testCompleteLogs(t *testing.T, e *Env) {
	id := e.Dispatch("h", queuety.State{"a": 1})
	jobs := e.Claim(10, "h")
	j := e.Job(id)
	Equal(t, "status while claimed", j.Status, queuety.JobProcessing)
	Equal(t, "attempts after claim", j.Attempts, 1)
	Equal(t, "reserved_at", j.ReservedAt, Epoch)
	e.Clock.Advance(3 * time.Second)
	if errs := e.Complete(jobs...); errs[0] != nil {
		t.Fatal(errs[0])
	}
	j = e.Job(id)
	Equal(t, "status", j.Status, queuety.JobCompleted)
	Equal(t, "completed_at", j.CompletedAt, Epoch.Add(3*time.Second))
	logs := e.Logs(driver.LogFilter{JobID: id})
	Equal(t, "log rows", len(logs), 2)
	Equal(t, "first log", logs[0].Event, driver.LogStarted)
	Equal(t, "second log", logs[1].Event, driver.LogCompleted)
	Equal(t, "completed attempt", *logs[1].Attempt, 1)
	Equal(t, "completed handler", logs[1].Handler, "h")
	if logs[1].DurationMS == nil {
		t.Fatal("completed log has no duration_ms")
	}
	// Completing again is rejected as stale and changes nothing.
	if errs := e.Complete(jobs...); !errors.Is(errs[0], queuety.ErrStaleAttempt) {
		t.Fatalf("second completion: %v", errs[0])
	}
	Equal(t, "log rows after stale completion", len(e.Logs(driver.LogFilter{JobID: id})), 2)
}

func testRetryBackoff(t *testing.T, e *Env) {
	cases := []struct {
		name   string
		opts   []queuety.JobOption
		delays []time.Duration
	}{
		{"exponential default", nil, []time.Duration{60 * time.Second, 120 * time.Second, 240 * time.Second}},
		{"fixed", []queuety.JobOption{queuety.WithBackoff(queuety.BackoffFixed)}, []time.Duration{60 * time.Second, 60 * time.Second, 60 * time.Second}},
		{"linear", []queuety.JobOption{queuety.WithBackoff(queuety.BackoffLinear)}, []time.Duration{60 * time.Second, 120 * time.Second, 180 * time.Second}},
		{"list", []queuety.JobOption{queuety.WithBackoff(queuety.BackoffSeconds(5, 30))}, []time.Duration{5 * time.Second, 30 * time.Second, 30 * time.Second}},
		{"policy", []queuety.JobOption{queuety.WithBackoff(queuety.BackoffPolicy(2*time.Second, 3, 10*time.Second))}, []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second}},
	}
	var first int64
	for i, c := range cases {
		handler := fmt.Sprintf("retry_%d", i)
		id := e.Dispatch(handler, nil, append(c.opts, queuety.MaxAttempts(4))...)
		if i == 0 {
			first = id
		}
		for n, want := range c.delays {
			jobs := e.ClaimOne(handler)
			now := e.Clock.Now()
			if err := e.Fail(jobs[0], errors.New("upstream 503")); err != nil {
				t.Fatalf("%s: fail: %v", c.name, err)
			}
			j := e.Job(id)
			Equal(t, c.name+" status", j.Status, queuety.JobPending)
			Equal(t, c.name+" attempts", j.Attempts, n+1)
			if got := j.AvailableAt.Sub(now); got != want {
				t.Fatalf("%s: retry %d delay = %s, want %s", c.name, n+1, got, want)
			}
			Equal(t, c.name+" error_message cleared", j.ErrorMessage, "")
			e.Clock.Set(j.AvailableAt)
		}
	}
	logs := e.Events(driver.LogFilter{JobID: first})
	Equal(t, "logs of three failed attempts", strings.Join(logs, ","), "started,failed,retried,started,failed,retried,started,failed,retried")
	failed := e.Logs(driver.LogFilter{JobID: first, Event: driver.LogFailed})
	Equal(t, "failed log rows", len(failed), 3)
	l := failed[0]
	Equal(t, "failed log error", l.ErrorMessage, "upstream 503")
	Equal(t, "failed log error_class (plain errors have no type worth naming)", l.ErrorClass, "error")
}

func testBury(t *testing.T, e *Env) {
	id := e.Dispatch("charge_card", nil, queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	for attempt := 1; attempt <= 2; attempt++ {
		jobs := e.ClaimOne("charge_card")
		if err := e.Fail(jobs[0], errors.New("Card declined: insufficient funds")); err != nil {
			t.Fatal(err)
		}
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	Equal(t, "attempts", j.Attempts, 2)
	Equal(t, "error_message", j.ErrorMessage, "Card declined: insufficient funds")
	Equal(t, "failed_at", j.FailedAt, Epoch)
	Equal(t, "claimable after burial", len(e.Claim(1, "charge_card")), 0)
	got := strings.Join(e.Events(driver.LogFilter{JobID: id}), ",")
	Equal(t, "logs", got, "started,failed,retried,started,buried")
	fails := e.failures(0, id)
	if len(fails) != 1 || fails[0].Category != driver.FailureApplication || fails[0].Attempt != 2 || fails[0].NonRetryable {
		t.Fatalf("failures = %+v", fails)
	}
}

func testNonRetryable(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(5))
	jobs := e.ClaimOne("h")
	if err := e.Fail(jobs[0], queuety.NonRetryable(errors.New("invalid card number"))); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	Equal(t, "attempts", j.Attempts, 1)
	fails := e.failures(0, id)
	if len(fails) != 1 || !fails[0].NonRetryable {
		t.Fatalf("failures = %+v", fails)
	}
}

func testRetryBuried(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(1))
	jobs := e.ClaimOne("h")
	if err := e.Fail(jobs[0], errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	Equal(t, "status", e.Job(id).Status, queuety.JobBuried)
	if err := e.C.RetryJob(e.Ctx, id); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "status after retry", j.Status, queuety.JobPending)
	Equal(t, "attempts reset", j.Attempts, 0)
	Equal(t, "error cleared", j.ErrorMessage, "")
	jobs = e.ClaimOne("h")
	Equal(t, "claimable", len(jobs), 1)
	Equal(t, "fresh attempt number", jobs[0].Job.Attempts, 1)
	if err := e.C.RetryJob(e.Ctx, id); !errors.Is(err, queuety.ErrInvalidState) {
		t.Fatalf("retrying a processing job: %v", err)
	}
	if err := e.C.RetryJob(e.Ctx, 999999); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("retrying a missing job: %v", err)
	}
}

func testRelease(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(time.Hour))
	jobs := e.ClaimOne("h")
	before := e.Job(id)
	Equal(t, "schedule-to-start cleared at claim", before.ScheduleToStartAt, time.Time{})
	if err := engine.OfClient(e.C).Release(e.Ctx, jobs); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobPending)
	Equal(t, "attempts", j.Attempts, 0)
	Equal(t, "schedule-to-start restored", j.ScheduleToStartAt, Epoch.Add(time.Hour))
	Equal(t, "logs written for an unstarted job", len(e.Logs(driver.LogFilter{JobID: id})), 0)
	again := e.ClaimOne("h")
	Equal(t, "attempt number", again[0].Job.Attempts, 1)
	if errs := e.Complete(jobs...); !errors.Is(errs[0], queuety.ErrStaleAttempt) {
		t.Fatalf("completion from the released claim: %v", errs[0])
	}
	if errs := e.Complete(again...); errs[0] != nil {
		t.Fatal(errs[0])
	}
}

func testStaleRecovery(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(10)))
	first := e.ClaimOne("h")
	e.Clock.Advance(queuety.DefaultStaleTimeout - time.Second)
	n, _, err := engine.OfClient(e.C).RecoverStale(e.Ctx, 100)
	if err != nil || n != 0 {
		t.Fatalf("recovered a fresh claim: %d, %v", n, err)
	}
	e.Clock.Advance(2 * time.Second)
	n, _, err = engine.OfClient(e.C).RecoverStale(e.Ctx, 100)
	if err != nil || n != 1 {
		t.Fatalf("recover: %d, %v", n, err)
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobPending)
	Equal(t, "attempts kept (the lost attempt counts)", j.Attempts, 1)
	Equal(t, "backoff applied", j.AvailableAt, e.Clock.Now().Add(10*time.Second).Truncate(time.Second))
	e.Clock.Advance(10 * time.Second)
	second := e.ClaimOne("h")
	Equal(t, "second attempt", second[0].Job.Attempts, 2)
	if errs := e.Complete(first...); !errors.Is(errs[0], queuety.ErrStaleAttempt) {
		t.Fatalf("late completion of attempt 1: %v", errs[0])
	}
	Equal(t, "status after late completion", e.Job(id).Status, queuety.JobProcessing)
	// The second attempt dies too: attempts are used up, so it is buried.
	e.Clock.Advance(queuety.DefaultStaleTimeout + time.Second)
	if n, _, err := engine.OfClient(e.C).RecoverStale(e.Ctx, 100); err != nil || n != 1 {
		t.Fatalf("recover: %d, %v", n, err)
	}
	j = e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	Equal(t, "error", j.ErrorMessage, engine.StaleMessage)
	Equal(t, "logs", strings.Join(e.Events(driver.LogFilter{JobID: id}), ","), "retried,buried")
}

func testStaleConcurrent(t *testing.T, e *Env) {
	const jobs = 60
	var reqs []queuety.JobRequest
	for range jobs {
		reqs = append(reqs, queuety.JobRequest{Handler: "h"})
	}
	if _, err := e.C.DispatchMany(e.Ctx, reqs); err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for n := len(e.Claim(100, "h")); n > 0; n = len(e.Claim(100, "h")) {
		claimed += n
	}
	Equal(t, "jobs claimed before the claims went stale", claimed, jobs)
	e.Clock.Advance(queuety.DefaultStaleTimeout + time.Minute)
	clients := e.Clients(6)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, more, err := engine.OfClient(c).RecoverStale(context.Background(), 7)
				if err != nil {
					t.Errorf("recover: %v", err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if !more {
					return
				}
			}
		}()
	}
	wg.Wait()
	Equal(t, "jobs recovered in total", total, jobs)
	retried := e.Logs(driver.LogFilter{Event: driver.LogRetried, Limit: 10000})
	Equal(t, "retried log rows (one per job)", len(retried), jobs)
}

func testLeaseRenewal(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil)
	jobs := e.ClaimOne("h")
	e.Clock.Advance(queuety.DefaultStaleTimeout - time.Minute)
	lost, err := engine.OfClient(e.C).RenewLeases(e.Ctx, jobs)
	if err != nil || len(lost) != 0 {
		t.Fatalf("renew: %v %v", lost, err)
	}
	e.Clock.Advance(2 * time.Minute)
	Equal(t, "renewed claims recovered as stale", e.recoverStale(), 0)
	Equal(t, "status", e.Job(id).Status, queuety.JobProcessing)
	// After another worker's recovery, renewal reports the loss.
	e.Clock.Advance(queuety.DefaultStaleTimeout + time.Second)
	Equal(t, "stale claims recovered", e.recoverStale(), 1)
	lost, err = engine.OfClient(e.C).RenewLeases(e.Ctx, jobs)
	if err != nil || !errors.Is(lost[id], queuety.ErrLeaseLost) {
		t.Fatalf("renew after recovery: %v %v", lost, err)
	}
}

func testConcurrentClaims(t *testing.T, e *Env) {
	const total = 600
	var reqs []queuety.JobRequest
	for i := range total {
		reqs = append(reqs, queuety.JobRequest{Handler: "h", Payload: queuety.State{"i": i},
			Options: []queuety.JobOption{queuety.WithPriority(queuety.Priority(i % 4))}})
	}
	if _, err := e.C.DispatchMany(e.Ctx, reqs); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	clients := e.Clients(6)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := engine.OfClient(c).Claim(context.Background(), engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"h"}, Limit: 13})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				rs := make([]*engine.Result, len(jobs))
				for i, j := range jobs {
					rs[i] = &engine.Result{Claimed: j}
				}
				errs, err := engine.OfClient(c).CompleteJobs(context.Background(), rs)
				if err != nil {
					t.Errorf("complete: %v", err)
					return
				}
				mu.Lock()
				for i, j := range jobs {
					if errs[i] != nil {
						t.Errorf("complete job %d: %v", j.Job.ID, errs[i])
					}
					seen[j.Job.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	Equal(t, "distinct jobs claimed", len(seen), total)
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %d claimed %d times", id, n)
		}
	}
	counts, err := e.C.Counts(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[0].Status != queuety.JobCompleted || counts[0].Count != total {
		t.Fatalf("counts = %+v", counts)
	}
}

func testHeartbeatFencing(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil)
	first := e.ClaimOne("h")
	e.Clock.Advance(time.Minute)
	if err := engine.OfClient(e.C).Heartbeat(e.Ctx, first[0], []byte(`{"page":3}`)); err != nil {
		t.Fatal(err)
	}
	j := e.Job(id)
	Equal(t, "heartbeat_data", string(j.HeartbeatData), `{"page":3}`)
	Equal(t, "reserved_at renewed", j.ReservedAt, Epoch.Add(time.Minute))
	Equal(t, "last heartbeat", j.LastHeartbeatAt, Epoch.Add(time.Minute))
	if err := engine.OfClient(e.C).Release(e.Ctx, first); err != nil {
		t.Fatal(err)
	}
	second := e.ClaimOne("h")
	Equal(t, "claimed again after the release", len(second), 1)
	if err := engine.OfClient(e.C).Heartbeat(e.Ctx, first[0], []byte(`{"page":9}`)); !errors.Is(err, queuety.ErrStaleAttempt) {
		t.Fatalf("heartbeat from a superseded attempt: %v", err)
	}
	Equal(t, "heartbeat_data after stale heartbeat", string(e.Job(id).HeartbeatData), `{"page":3}`)
	Equal(t, "the next attempt sees the last details", string(second[0].Info().LastDetails), `{"page":3}`)
}

func testPurge(t *testing.T, e *Env) {
	old := e.Dispatch("h", nil)
	e.completeAll(e.ClaimOne("h"), old)
	e.Clock.Advance(8 * 24 * time.Hour)
	recent := e.Dispatch("h", nil)
	e.completeAll(e.ClaimOne("h"), recent)
	pending := e.Dispatch("h", nil)
	n, err := e.C.PurgeCompleted(e.Ctx, 7*24*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if _, err := e.C.Job(e.Ctx, old); !errors.Is(err, queuety.ErrNotFound) {
		t.Fatalf("old job still there: %v", err)
	}
	Equal(t, "recent completed job", e.Job(recent).Status, queuety.JobCompleted)
	Equal(t, "pending job", e.Job(pending).Status, queuety.JobPending)
}

func testMalformedPayload(t *testing.T, e *Env) {
	var id int64
	err := e.C.Store().InTx(e.Ctx, func(tx driver.Tx) error {
		j := &driver.Job{Queue: "default", Handler: "h", Payload: []byte(`{"broken": `), Status: queuety.JobPending,
			MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1}
		err := tx.JobInsert(e.Ctx, []*driver.Job{j})
		id = j.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w := e.Worker(nil)
	called := false
	w.HandleJob("h", func(context.Context, queuety.Payload) error { called = true; return nil })
	e.Drain(w)
	if called {
		t.Fatal("handler called with a malformed payload")
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	Contains(t, "error", j.ErrorMessage, "malformed payload JSON")
}

func testPanic(t *testing.T, e *Env) {
	id := e.Dispatch("explode", nil, queuety.MaxAttempts(1))
	ok := e.Dispatch("fine", nil)
	w := e.Worker(nil)
	w.HandleJob("explode", func(context.Context, queuety.Payload) error { panic("kaboom") })
	done := false
	w.HandleJob("fine", func(context.Context, queuety.Payload) error { done = true; return nil })
	st := e.Drain(w)
	if !done || st.Succeeded != 1 || st.Failed != 1 {
		t.Fatalf("worker did not survive the panic: %+v", st)
	}
	j := e.Job(id)
	Equal(t, "status", j.Status, queuety.JobBuried)
	Equal(t, "error", j.ErrorMessage, "panic: kaboom")
	b := e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried})
	if len(b) != 1 || b[0].ErrorClass != "panic" || !strings.Contains(b[0].ErrorTrace, "goroutine") {
		t.Fatalf("buried log = %+v", b)
	}
	Equal(t, "other job", e.Job(ok).Status, queuety.JobCompleted)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
