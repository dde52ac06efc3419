package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/sweep"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func init() {
	register("Jobs/DispatchWritesQueuetyRow", testDispatchRow)
	register("Jobs/DispatchRejectsBadInput", testDispatchRejects)
	register("Jobs/DispatchMany", testDispatchMany)
	register("Jobs/Unique", testUnique)
	register("Jobs/UniqueWhateverTheKeyOrder", testUniqueKeyOrder)
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
	register("Jobs/StaleRecoveryOfPHPClaim", testStaleRecoveryOfPHPClaim)
	register("Jobs/LeaseTimeoutOption", testLeaseTimeoutOption)
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
	assert.Equal(t, "default", j.Queue, "queue")
	assert.Equal(t, "send_email", j.Handler, "handler")
	assert.Equal(t, `{"f":1.5,"n":1,"name":"Zo\u00eb","url":"https:\/\/example.com\/a\/b"}`, string(j.Payload), "payload")
	assert.Equal(t, queuetytype.PriorityLow, j.Priority, "priority")
	assert.Equal(t, queuetytype.JobPending, j.Status, "status")
	assert.Equal(t, 0, j.Attempts, "attempts")
	assert.Equal(t, 3, j.MaxAttempts, "max_attempts")
	assert.Equal(t, Epoch, j.AvailableAt, "available_at")
	assert.Equal(t, Epoch, j.CreatedAt, "created_at")
	assert.Equal(t, 1, j.CostUnits, "cost_units")
	assert.Equal(t, int64(0), j.WorkflowID, "workflow_id")
	assert.Nil(t, j.StepIndex, "step_index")
	assert.Empty(t, j.PayloadHash, "payload_hash")
	assert.Equal(t, time.Time{}, j.ReservedAt, "reserved_at")

	empty := e.Dispatch("noop", nil, queuety.OnQueue("emails"), queuety.WithPriority(queuetytype.PriorityUrgent),
		queuety.Delay(90*time.Second), queuety.MaxAttempts(5))
	j = e.Job(empty)
	assert.Equal(t, `[]`, string(j.Payload), "empty payload")
	assert.Equal(t, "emails", j.Queue, "queue")
	assert.Equal(t, queuetytype.PriorityUrgent, j.Priority, "priority")
	assert.Equal(t, Epoch.Add(90*time.Second), j.AvailableAt, "available_at")
	assert.Equal(t, 5, j.MaxAttempts, "max_attempts")

	type order struct {
		ID    int    `json:"order_id"`
		Email string `json:"email"`
	}
	j = e.Job(e.Dispatch("struct", order{ID: 7, Email: "a@b.c"}))
	assert.Equal(t, `{"order_id":7,"email":"a@b.c"}`, string(j.Payload), "struct payload keeps field order")
}

func testDispatchRejects(t *testing.T, e *Env) {
	cases := []struct {
		name    string
		handler string
		payload any
		opts    []queuety.JobOption
		want    error
	}{
		{"empty handler", "", nil, nil, queuetytype.ErrInvalidArgument},
		{"long handler", strings.Repeat("h", 256), nil, nil, queuetytype.ErrInvalidArgument},
		{"list payload", "h", []int{1, 2}, nil, queuetytype.ErrInvalidArgument},
		{"string payload", "h", "text", nil, queuetytype.ErrInvalidArgument},
		{"NaN", "h", queuety.State{"x": math.NaN()}, nil, queuetytype.ErrInvalidArgument},
		{"invalid UTF-8", "h", queuety.State{"x": "\xff\xfe"}, nil, queuetytype.ErrInvalidArgument},
		{"reserved key", "h", queuety.State{"__queuety_runtime": 1}, nil, queuetytype.ErrInvalidArgument},
		{"priority out of range", "h", nil, []queuety.JobOption{queuety.WithPriority(7)}, queuetytype.ErrInvalidArgument},
		{"negative delay", "h", nil, []queuety.JobOption{queuety.Delay(-time.Second)}, queuetytype.ErrInvalidArgument},
		{"too many attempts", "h", nil, []queuety.JobOption{queuety.MaxAttempts(256)}, queuetytype.ErrInvalidArgument},
		{"negative attempts", "h", nil, []queuety.JobOption{queuety.MaxAttempts(-1)}, queuetytype.ErrInvalidArgument},
		{"negative backoff", "h", nil, []queuety.JobOption{queuety.WithBackoff(queuety.BackoffSeconds(5, -1))}, queuetytype.ErrInvalidArgument},
		{"bad coefficient", "h", nil, []queuety.JobOption{queuety.WithBackoff(queuety.BackoffPolicy(time.Second, 0.5, time.Minute))}, queuetytype.ErrInvalidArgument},
		{"long queue", "h", nil, []queuety.JobOption{queuety.OnQueue(strings.Repeat("q", 65))}, queuetytype.ErrInvalidArgument},
		{"sub-second timeout", "h", nil, []queuety.JobOption{queuety.StartToClose(500 * time.Millisecond)}, queuetytype.ErrInvalidTimeout},
		{"negative timeout", "h", nil, []queuety.JobOption{queuety.HeartbeatTimeout(-time.Second)}, queuetytype.ErrInvalidTimeout},
	}
	for _, c := range cases {
		_, err := e.C.Dispatch(e.Ctx, c.handler, c.payload, c.opts...)
		assert.ErrorIs(t, err, c.want, c.name)
	}
	assert.Empty(t, e.Jobs(driver.JobFilter{}), "jobs written by rejected dispatches")
}

func testDispatchMany(t *testing.T, e *Env) {
	var reqs []queuety.JobRequest
	for i := range 1200 {
		reqs = append(reqs, queuety.JobRequest{Handler: "bulk", Payload: queuety.State{"i": i}})
	}
	ids, err := e.C.DispatchMany(e.Ctx, reqs)
	require.NoError(t, err)
	require.Len(t, ids, 1200, "ids")
	for i, id := range ids {
		if i > 0 {
			require.Greaterf(t, id, ids[i-1], "ids not increasing at %d", i)
		}
	}
	j := e.Job(ids[777])
	assert.Equal(t, `{"i":777}`, string(j.Payload), "payload of item 777")
	// One bad item rejects the whole batch.
	_, err = e.C.DispatchMany(e.Ctx, []queuety.JobRequest{{Handler: "ok"}, {Handler: ""}})
	require.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "bad batch")
	assert.Empty(t, e.Jobs(driver.JobFilter{Handler: "ok"}), "jobs from the rejected batch")
	assert.Len(t, e.Jobs(driver.JobFilter{Limit: 2000}), 1200, "jobs in total")
}

func testUnique(t *testing.T, e *Env) {
	a := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	b := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	c := e.Dispatch("report", queuety.State{"day": "tue"}, queuety.Unique())
	assert.Equal(t, a, b, "duplicate returns the first id")
	assert.NotEqual(t, a, c, "a different payload must get its own job")
	// sha256 of the stored payload bytes, as Queuety PHP computes it.
	assert.Equal(t, sha256Hex(`{"day":"mon"}`), e.Job(a).PayloadHash, "payload_hash")
	e.completeAll(e.Claim(10, "report"), a, c)
	d := e.Dispatch("report", queuety.State{"day": "mon"}, queuety.Unique())
	assert.NotEqual(t, a, d, "a completed job must not block a new unique dispatch")
}

// testUniqueKeyOrder: a unique dispatch finds a pending job with the same
// payload whatever the order of its object keys, at any depth, as Queuety
// PHP writes them (in the order its array was built, json.RawMessage here),
// both by looking up the hashes of every order and, for a payload with too
// many orders, by comparing payloads; list order and values still count.
func testUniqueKeyOrder(t *testing.T, e *Env) {
	php := e.Dispatch("report", json.RawMessage(`{"site":"b","post":{"tags":["x","y"],"id":3}}`), queuety.Unique())
	assert.Equal(t, sha256Hex(`{"site":"b","post":{"tags":["x","y"],"id":3}}`), e.Job(php).PayloadHash, "payload_hash of the stored order")
	same := e.Dispatch("report", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"x", "y"}}, "site": "b"}, queuety.Unique())
	assert.Equal(t, php, same, "a map payload (keys sorted) finds the job written in another order")
	type post struct {
		Tags []string `json:"tags"`
		ID   int      `json:"id"`
	}
	byStruct := e.Dispatch("report", struct {
		Post post   `json:"post"`
		Site string `json:"site"`
	}{post{[]string{"x", "y"}, 3}, "b"}, queuety.Unique())
	assert.Equal(t, php, byStruct, "a struct payload in a third order")
	other := e.Dispatch("report", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"y", "x"}}, "site": "b"}, queuety.Unique())
	assert.NotEqual(t, php, other, "list order counts")
	value := e.Dispatch("report", queuety.State{"post": queuety.State{"id": 4, "tags": []string{"x", "y"}}, "site": "b"}, queuety.Unique())
	assert.NotEqual(t, php, value, "values count")
	assert.NotEqual(t, php, e.Dispatch("other_report", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"x", "y"}}, "site": "b"}, queuety.Unique()), "handlers count")
	plain := e.Dispatch("plain", json.RawMessage(`{"b":1,"a":2}`))
	assert.NotEqual(t, plain, e.Dispatch("plain", queuety.State{"a": 2, "b": 1}, queuety.Unique()), "a job dispatched without Unique has no hash: it is not a twin")

	// Eight keys: 40,320 orders, compared by payload.
	wide := e.Dispatch("wide", json.RawMessage(`{"h":8,"g":7,"f":6,"e":5,"d":4,"c":3,"b":2,"a":1}`), queuety.Unique())
	state := queuety.State{}
	for i, k := range strings.Split("abcdefgh", "") {
		state[k] = i + 1
	}
	assert.Equal(t, wide, e.Dispatch("wide", state, queuety.Unique()), "a wide payload in another order")
	state["h"] = 9
	assert.NotEqual(t, wide, e.Dispatch("wide", state, queuety.Unique()), "a wide payload with another value")

	// One call: the second order is a twin of the first.
	ids, err := e.C.DispatchMany(e.Ctx, []queuety.JobRequest{
		{Handler: "batch", Payload: json.RawMessage(`{"b":1,"a":2}`), Options: []queuety.JobOption{queuety.Unique()}},
		{Handler: "batch", Payload: queuety.State{"a": 2, "b": 1}, Options: []queuety.JobOption{queuety.Unique()}},
	})
	require.NoError(t, err)
	assert.Equal(t, ids[0], ids[1], "twins in one call")

	// A finished twin does not count.
	e.completeAll(e.Claim(10, "report"), php, other, value)
	assert.NotEqual(t, php, e.Dispatch("report", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"x", "y"}}, "site": "b"}, queuety.Unique()),
		"a completed twin does not block a new unique dispatch")
}

func testClaimOrder(t *testing.T, e *Env) {
	low := e.Dispatch("h", nil)
	urgent := e.Dispatch("h", nil, queuety.WithPriority(queuetytype.PriorityUrgent))
	normal := e.Dispatch("h", nil, queuety.WithPriority(queuetytype.PriorityNormal))
	high := e.Dispatch("h", nil, queuety.WithPriority(queuetytype.PriorityHigh))
	low2 := e.Dispatch("h", nil)
	// A low job that became due earlier than low and low2 goes first among lows.
	e.Clock.Advance(-10 * time.Second)
	early := e.Dispatch("h", nil)
	e.Clock.Advance(10 * time.Second)
	got := IDs(e.Claim(3, "h"))
	assert.Equal(t, []int64{urgent, high, normal}, got, "first batch")
	got = IDs(e.Claim(10, "h"))
	assert.Equal(t, []int64{early, low, low2}, got, "second batch")
}

func testClaimQueueOrder(t *testing.T, e *Env) {
	b1 := e.Dispatch("h", nil, queuety.OnQueue("b"), queuety.WithPriority(queuetytype.PriorityUrgent))
	a1 := e.Dispatch("h", nil, queuety.OnQueue("a"))
	a2 := e.Dispatch("h", nil, queuety.OnQueue("a"))
	got := IDs(e.ClaimFrom(e.C, []string{"a", "b"}, 10, "h"))
	assert.Equal(t, []int64{a1, a2, b1}, got, "claim across queues")
}

func testClaimDelay(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.Delay(30*time.Second))
	assert.Empty(t, e.Claim(10, "h"), "claimed before due")
	e.Clock.Advance(29 * time.Second)
	assert.Empty(t, e.Claim(10, "h"), "claimed 1 s before due")
	e.Clock.Advance(time.Second)
	assert.Equal(t, []int64{id}, IDs(e.Claim(10, "h")), "claimed when due")
}

func testPausedQueue(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.OnQueue("reports"))
	require.NoError(t, e.C.PauseQueue(e.Ctx, "reports"))
	require.NoError(t, e.C.PauseQueue(e.Ctx, "reports"), "pausing twice")
	assert.Empty(t, e.ClaimFrom(e.C, []string{"reports"}, 10, "h"), "claimed from paused queue")
	states, err := e.C.QueueStates(e.Ctx)
	require.NoError(t, err)
	require.Len(t, states, 1, "queue states")
	assert.True(t, states[0].Paused, "queue state paused")
	assert.Equal(t, "reports", states[0].Queue, "queue state queue")
	assert.Equal(t, 0, e.Job(id).Attempts, "attempts of job in paused queue")
	require.NoError(t, e.C.ResumeQueue(e.Ctx, "reports"))
	states, err = e.C.QueueStates(e.Ctx)
	require.NoError(t, err)
	assert.Empty(t, states, "queue_states rows after resume (Queuety deletes the row)")
	assert.Equal(t, []int64{id}, IDs(e.ClaimFrom(e.C, []string{"reports"}, 10, "h")), "claimed after resume")
}

func testClaimKnownHandlers(t *testing.T, e *Env) {
	other := e.Dispatch("php_only", nil)
	mine := e.Dispatch("go_handler", nil)
	assert.Equal(t, []int64{mine}, IDs(e.Claim(10, "go_handler")), "claimed")
	j := e.Job(other)
	assert.Equal(t, queuetytype.JobPending, j.Status, "unknown handler's job status")
	assert.Equal(t, 0, j.Attempts, "unknown handler's job attempts")
}

func testDependsOn(t *testing.T, e *Env) {
	a := e.Dispatch("h", nil)
	b := e.Dispatch("h", nil, queuety.DependsOn(a))
	first := e.Claim(10, "h")
	assert.Equal(t, []int64{a}, IDs(first), "claimable before the dependency completed")
	assert.Empty(t, e.Claim(10, "h"), "claim while a runs")
	e.Complete(first...)
	assert.Equal(t, []int64{b}, IDs(e.Claim(10, "h")), "claimable after")
}

func testCompleteLogs(t *testing.T, e *Env) {
	id := e.Dispatch("h", queuety.State{"a": 1})
	jobs := e.Claim(10, "h")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobProcessing, j.Status, "status while claimed")
	assert.Equal(t, 1, j.Attempts, "attempts after claim")
	assert.Equal(t, Epoch, j.ReservedAt, "reserved_at")
	e.Clock.Advance(3 * time.Second)
	require.NoError(t, e.Complete(jobs...)[0])
	j = e.Job(id)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "status")
	assert.Equal(t, Epoch.Add(3*time.Second), j.CompletedAt, "completed_at")
	logs := e.Logs(driver.LogFilter{JobID: id})
	require.Len(t, logs, 2, "log rows")
	assert.Equal(t, driver.LogStarted, logs[0].Event, "first log")
	assert.Equal(t, driver.LogCompleted, logs[1].Event, "second log")
	require.NotNil(t, logs[1].Attempt, "completed attempt")
	assert.Equal(t, 1, *logs[1].Attempt, "completed attempt")
	assert.Equal(t, "h", logs[1].Handler, "completed handler")
	assert.NotNil(t, logs[1].DurationMS, "completed log has no duration_ms")
	// Completing again is rejected as stale and changes nothing.
	require.ErrorIs(t, e.Complete(jobs...)[0], queuetytype.ErrStaleAttempt, "second completion")
	assert.Len(t, e.Logs(driver.LogFilter{JobID: id}), 2, "log rows after stale completion")
}

func testRetryBackoff(t *testing.T, e *Env) {
	cases := []struct {
		name   string
		opts   []queuety.JobOption
		delays []time.Duration
	}{
		{"exponential default", nil, []time.Duration{60 * time.Second, 120 * time.Second, 240 * time.Second}},
		{"fixed", []queuety.JobOption{queuety.WithBackoff(queuetytype.BackoffFixed)}, []time.Duration{60 * time.Second, 60 * time.Second, 60 * time.Second}},
		{"linear", []queuety.JobOption{queuety.WithBackoff(queuetytype.BackoffLinear)}, []time.Duration{60 * time.Second, 120 * time.Second, 180 * time.Second}},
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
			require.NoErrorf(t, e.Fail(jobs[0], errors.New("upstream 503")), "%s: fail", c.name)
			j := e.Job(id)
			assert.Equal(t, queuetytype.JobPending, j.Status, c.name+" status")
			assert.Equal(t, n+1, j.Attempts, c.name+" attempts")
			assert.Equalf(t, want, j.AvailableAt.Sub(now), "%s: retry %d delay", c.name, n+1)
			assert.Equal(t, "", j.ErrorMessage, c.name+" error_message cleared")
			e.Clock.Set(j.AvailableAt)
		}
	}
	logs := e.Events(driver.LogFilter{JobID: first})
	assert.Equal(t, "started,failed,retried,started,failed,retried,started,failed,retried", strings.Join(logs, ","), "logs of three failed attempts")
	failed := e.Logs(driver.LogFilter{JobID: first, Event: driver.LogFailed})
	require.Len(t, failed, 3, "failed log rows")
	l := failed[0]
	assert.Equal(t, "upstream 503", l.ErrorMessage, "failed log error")
	assert.Equal(t, "error", l.ErrorClass, "failed log error_class (plain errors have no type worth naming)")
}

func testBury(t *testing.T, e *Env) {
	id := e.Dispatch("charge_card", nil, queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	for attempt := 1; attempt <= 2; attempt++ {
		jobs := e.ClaimOne("charge_card")
		require.NoError(t, e.Fail(jobs[0], errors.New("Card declined: insufficient funds")))
	}
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, 2, j.Attempts, "attempts")
	assert.Equal(t, "Card declined: insufficient funds", j.ErrorMessage, "error_message")
	assert.Equal(t, Epoch, j.FailedAt, "failed_at")
	assert.Empty(t, e.Claim(1, "charge_card"), "claimable after burial")
	got := strings.Join(e.Events(driver.LogFilter{JobID: id}), ",")
	assert.Equal(t, "started,failed,retried,started,buried", got, "logs")
	fails := e.failures(0, id)
	require.Len(t, fails, 1, "failures")
	assert.Equal(t, driver.FailureApplication, fails[0].Category, "failure category")
	assert.Equal(t, 2, fails[0].Attempt, "failure attempt")
	assert.False(t, fails[0].NonRetryable, "failure non_retryable")
}

func testNonRetryable(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(5))
	jobs := e.ClaimOne("h")
	require.NoError(t, e.Fail(jobs[0], queuety.NonRetryable(errors.New("invalid card number"))))
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "attempts")
	fails := e.failures(0, id)
	require.Len(t, fails, 1, "failures")
	assert.True(t, fails[0].NonRetryable, "failure non_retryable")
}

func testRetryBuried(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(1))
	jobs := e.ClaimOne("h")
	require.NoError(t, e.Fail(jobs[0], errors.New("boom")))
	assert.Equal(t, queuetytype.JobBuried, e.Job(id).Status, "status")
	require.NoError(t, e.C.RetryJob(e.Ctx, id))
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status after retry")
	assert.Equal(t, 0, j.Attempts, "attempts reset")
	assert.Equal(t, "", j.ErrorMessage, "error cleared")
	jobs = e.ClaimOne("h")
	require.Len(t, jobs, 1, "claimable")
	assert.Equal(t, 1, jobs[0].Job.Attempts, "fresh attempt number")
	require.ErrorIs(t, e.C.RetryJob(e.Ctx, id), queuetytype.ErrInvalidState, "retrying a processing job")
	require.ErrorIs(t, e.C.RetryJob(e.Ctx, 999999), queuetytype.ErrNotFound, "retrying a missing job")
}

func testRelease(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.ScheduleToStart(time.Hour))
	jobs := e.ClaimOne("h")
	before := e.Job(id)
	assert.Equal(t, time.Time{}, before.ScheduleToStartAt, "schedule-to-start cleared at claim")
	require.NoError(t, e.eng.Release(e.Ctx, jobs))
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status")
	assert.Equal(t, 0, j.Attempts, "attempts")
	assert.Equal(t, Epoch.Add(time.Hour), j.ScheduleToStartAt, "schedule-to-start restored")
	assert.Empty(t, e.Logs(driver.LogFilter{JobID: id}), "logs written for an unstarted job")
	again := e.ClaimOne("h")
	assert.Equal(t, 1, again[0].Job.Attempts, "attempt number")
	require.ErrorIs(t, e.Complete(jobs...)[0], queuetytype.ErrStaleAttempt, "completion from the released claim")
	require.NoError(t, e.Complete(again...)[0])
}

func testStaleRecovery(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(2), queuety.WithBackoff(queuety.BackoffSeconds(10)))
	first := e.ClaimOne("h")
	// A Go worker's claim that is not renewed is recovered after the lease
	// timeout, not the (much longer) stale timeout.
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout - time.Second)
	n, _, err := sweep.RecoverStale(e.Ctx, e.eng, 100)
	require.NoError(t, err)
	require.Zero(t, n, "recovered a fresh claim")
	e.Clock.Advance(2 * time.Second)
	n, _, err = sweep.RecoverStale(e.Ctx, e.eng, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n, "recovered")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobPending, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "attempts kept (the lost attempt counts)")
	// The worker died; the handler did not fail: no backoff, and the job
	// keeps its original due time, ahead of jobs that fell due later.
	assert.Equal(t, Epoch, j.AvailableAt, "due at its original time, without backoff")
	newer := e.Dispatch("h", nil)
	second := e.ClaimOne("h")
	assert.Equal(t, id, second[0].Job.ID, "the recovered job is claimed before a job dispatched after it")
	assert.Equal(t, queuetytype.JobPending, e.Job(newer).Status, "the newer job waits")
	assert.Equal(t, 2, second[0].Job.Attempts, "second attempt")
	require.ErrorIs(t, e.Complete(first...)[0], queuetytype.ErrStaleAttempt, "late completion of attempt 1")
	assert.Equal(t, queuetytype.JobProcessing, e.Job(id).Status, "status after late completion")
	// The second attempt dies too: attempts are used up, so it is buried.
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout + time.Second)
	n, _, err = sweep.RecoverStale(e.Ctx, e.eng, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n, "recovered")
	j = e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, engine.StaleMessage, j.ErrorMessage, "error")
	assert.Equal(t, "retried,buried", strings.Join(e.Events(driver.LogFilter{JobID: id}), ","), "logs")
}

// testLeaseTimeoutOption: queuety.WithLeaseTimeout sets when an unrenewed
// Go claim is recovered, and it never exceeds the stale timeout.
func testLeaseTimeoutOption(t *testing.T, e *Env) {
	c := e.Client(queuety.WithLeaseTimeout(30 * time.Second))
	recoverWith := func(c *queuety.Client) int {
		t.Helper()
		n, _, err := sweep.RecoverStale(e.Ctx, clientseam.Engine(c), 100)
		require.NoError(t, err, "recover stale")
		return n
	}
	id := e.Dispatch("h", nil)
	e.ClaimFrom(c, []string{"default"}, 1, "h")
	e.Clock.Advance(29 * time.Second)
	assert.Equal(t, 0, recoverWith(c), "recovered before the 30 s lease timeout")
	e.Clock.Advance(2 * time.Second)
	assert.Equal(t, 1, recoverWith(c), "recovered after the 30 s lease timeout")
	assert.Equal(t, queuetytype.JobPending, e.Job(id).Status, "status")

	capped := e.Client(queuety.WithLeaseTimeout(time.Hour), queuety.WithStaleTimeout(time.Minute))
	assert.Equal(t, time.Minute, clientseam.Engine(capped).LeaseTimeout(), "lease timeout capped at the stale timeout")
}

// testStaleRecoveryOfPHPClaim: a claim made by Queuety PHP (no claim token
// for its attempt, never renewed) is not recovered after the lease
// timeout: a PHP job may run for minutes without a sign of life. It is
// recovered after the stale timeout. A token left from an earlier Go
// attempt does not make it a Go claim.
func testStaleRecoveryOfPHPClaim(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil, queuety.MaxAttempts(3), queuety.WithBackoff(queuety.BackoffSeconds(0)))
	goAttempt := e.ClaimOne("h")
	require.NoError(t, e.Fail(goAttempt[0], errors.New("boom")), "Go attempt 1 fails and is retried")
	// Queuety PHP claims attempt 2 the way its claim does: status,
	// reserved_at and attempts; claim_token is not its column.
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		j, err := tx.JobGet(e.Ctx, id, driver.LockUpdate)
		if err != nil {
			return err
		}
		j.Status, j.ReservedAt, j.Attempts = driver.JobProcessing, e.Clock.Now(), j.Attempts+1
		j.ClaimToken = goAttempt[0].Job.ClaimToken // the worst case: Go's old token still there
		return tx.JobUpdate(e.Ctx, j)
	})
	require.NoError(t, err)
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout + time.Minute)
	assert.Equal(t, 0, e.recoverStale(), "a PHP claim recovered after the lease timeout")
	assert.Equal(t, queuetytype.JobProcessing, e.Job(id).Status, "status")
	e.Clock.Advance(queuetytype.DefaultStaleTimeout)
	assert.Equal(t, 1, e.recoverStale(), "PHP claim recovered after the stale timeout")
	assert.Equal(t, queuetytype.JobPending, e.Job(id).Status, "status after recovery")
}

func testStaleConcurrent(t *testing.T, e *Env) {
	const jobs = 60
	var reqs []queuety.JobRequest
	for range jobs {
		reqs = append(reqs, queuety.JobRequest{Handler: "h"})
	}
	_, err := e.C.DispatchMany(e.Ctx, reqs)
	require.NoError(t, err)
	claimed := 0
	for n := len(e.Claim(100, "h")); n > 0; n = len(e.Claim(100, "h")) {
		claimed += n
	}
	assert.Equal(t, jobs, claimed, "jobs claimed before the claims went stale")
	e.Clock.Advance(queuetytype.DefaultStaleTimeout + time.Minute)
	clients := e.Clients(6)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, more, err := sweep.RecoverStale(context.Background(), clientseam.Engine(c), 7)
				if !assert.NoError(t, err, "recover") {
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
	assert.Equal(t, jobs, total, "jobs recovered in total")
	retried := e.Logs(driver.LogFilter{Event: driver.LogRetried, Limit: 10000})
	assert.Len(t, retried, jobs, "retried log rows (one per job)")
}

func testLeaseRenewal(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil)
	jobs := e.ClaimOne("h")
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout - time.Second)
	lost, err := e.eng.RenewLeases(e.Ctx, jobs, nil)
	require.NoError(t, err, "renew")
	require.Empty(t, lost, "claims lost at renewal")
	e.Clock.Advance(2 * time.Second)
	assert.Equal(t, 0, e.recoverStale(), "renewed claims recovered as stale")
	assert.Equal(t, queuetytype.JobProcessing, e.Job(id).Status, "status")
	// After another worker's recovery, renewal reports the loss.
	e.Clock.Advance(queuetytype.DefaultLeaseTimeout)
	assert.Equal(t, 1, e.recoverStale(), "stale claims recovered")
	lost, err = e.eng.RenewLeases(e.Ctx, jobs, nil)
	require.NoError(t, err, "renew after recovery")
	assert.ErrorIs(t, lost[id], queuetytype.ErrLeaseLost, "renew after recovery")
}

func testConcurrentClaims(t *testing.T, e *Env) {
	const total = 600
	var reqs []queuety.JobRequest
	for i := range total {
		reqs = append(reqs, queuety.JobRequest{Handler: "h", Payload: queuety.State{"i": i},
			Options: []queuety.JobOption{queuety.WithPriority(queuetytype.Priority(i % 4))}})
	}
	_, err := e.C.DispatchMany(e.Ctx, reqs)
	require.NoError(t, err)
	seen := map[int64]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	clients := e.Clients(6)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := clientseam.Engine(c).Claim(context.Background(), engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"h"}, Limit: 13})
				if !assert.NoError(t, err, "claim") {
					return
				}
				if len(jobs) == 0 {
					return
				}
				rs := make([]*engine.Result, len(jobs))
				for i, j := range jobs {
					rs[i] = &engine.Result{Claimed: j}
				}
				errs, err := clientseam.Engine(c).CompleteJobs(context.Background(), rs)
				if !assert.NoError(t, err, "complete") {
					return
				}
				mu.Lock()
				for i, j := range jobs {
					assert.NoErrorf(t, errs[i], "complete job %d", j.Job.ID)
					seen[j.Job.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, seen, total, "distinct jobs claimed")
	for id, n := range seen {
		assert.Equalf(t, 1, n, "times job %d was claimed", id)
	}
	counts, err := e.C.Counts(e.Ctx)
	require.NoError(t, err)
	require.Len(t, counts, 1, "counts")
	assert.Equal(t, queuetytype.JobCompleted, counts[0].Status, "counted status")
	assert.Equal(t, int64(total), counts[0].Count, "completed jobs")
}

func testHeartbeatFencing(t *testing.T, e *Env) {
	id := e.Dispatch("h", nil)
	first := e.ClaimOne("h")
	e.Clock.Advance(time.Minute)
	require.NoError(t, e.eng.Heartbeat(e.Ctx, first[0], []byte(`{"page":3}`)))
	j := e.Job(id)
	assert.Equal(t, `{"page":3}`, string(j.HeartbeatData), "heartbeat_data")
	assert.Equal(t, Epoch.Add(time.Minute), j.ReservedAt, "reserved_at renewed")
	assert.Equal(t, Epoch.Add(time.Minute), j.LastHeartbeatAt, "last heartbeat")
	require.NoError(t, e.eng.Release(e.Ctx, first))
	second := e.ClaimOne("h")
	require.Len(t, second, 1, "claimed again after the release")
	require.ErrorIs(t, e.eng.Heartbeat(e.Ctx, first[0], []byte(`{"page":9}`)), queuetytype.ErrStaleAttempt, "heartbeat from a superseded attempt")
	assert.Equal(t, `{"page":3}`, string(e.Job(id).HeartbeatData), "heartbeat_data after stale heartbeat")
	assert.Equal(t, `{"page":3}`, string(second[0].Info().LastDetails), "the next attempt sees the last details")
}

func testPurge(t *testing.T, e *Env) {
	old := e.Dispatch("h", nil)
	e.completeAll(e.ClaimOne("h"), old)
	e.Clock.Advance(8 * 24 * time.Hour)
	recent := e.Dispatch("h", nil)
	e.completeAll(e.ClaimOne("h"), recent)
	pending := e.Dispatch("h", nil)
	n, err := e.C.PurgeCompleted(e.Ctx, 7*24*time.Hour)
	require.NoError(t, err, "purge")
	assert.Equal(t, int64(1), n, "jobs purged")
	_, err = e.C.Job(e.Ctx, old)
	require.ErrorIs(t, err, queuetytype.ErrNotFound, "old job still there")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(recent).Status, "recent completed job")
	assert.Equal(t, queuetytype.JobPending, e.Job(pending).Status, "pending job")
}

// testMalformedPayload runs stored payloads of every shape through a
// worker. Like Queuety PHP, a JSON object runs as it is and a JSON list
// runs as an object keyed "0".."n-1"; unlike PHP, which runs anything else
// with an empty payload, a payload that is not an object or a list
// (malformed, empty, null, a string, a number) is buried at once with an
// error saying what it was, in the row and in the log.
func testMalformedPayload(t *testing.T, e *Env) {
	cases := []struct {
		payload string
		runs    bool
		want    queuety.Payload // the payload the handler sees
		err     string          // the start of the stored error
	}{
		{payload: `{"a":1}`, runs: true, want: queuety.Payload{"a": int64(1)}},
		{payload: `[]`, runs: true, want: queuety.Payload{}},
		{payload: `[1,2,3]`, runs: true, want: queuety.Payload{"0": int64(1), "1": int64(2), "2": int64(3)}},
		{payload: `{"broken": `, err: "queuety: malformed payload JSON"},
		{payload: ``, err: "queuety: malformed payload JSON: empty"},
		{payload: `null`, err: "queuety: malformed payload JSON: phpjson: expected a JSON object, got null"},
		{payload: `"str"`, err: "queuety: malformed payload JSON: phpjson: expected a JSON object, got string"},
		{payload: `12`, err: "queuety: malformed payload JSON: phpjson: expected a JSON object, got number"},
	}
	ids := make([]int64, len(cases))
	err := clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		for i, c := range cases {
			j := &driver.Job{Queue: "default", Handler: "h", Payload: []byte(c.payload), Status: queuetytype.JobPending,
				MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1}
			if err := tx.JobInsert(e.Ctx, []*driver.Job{j}); err != nil {
				return err
			}
			ids[i] = j.ID
		}
		return nil
	})
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[int64]queuety.Payload{}
	w := e.Worker(nil)
	w.HandleJob("h", func(ctx context.Context, p queuety.Payload) error {
		info, _ := queuety.JobInfoFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen[info.JobID] = p
		return nil
	})
	e.Drain(w)
	for i, c := range cases {
		j := e.Job(ids[i])
		got, ran := seen[ids[i]]
		if c.runs {
			assert.True(t, ran, "payload %q: handler not called", c.payload)
			assert.Equal(t, c.want, got, "payload %q: what the handler saw", c.payload)
			assert.Equal(t, queuetytype.JobCompleted, j.Status, "payload %q: status", c.payload)
			continue
		}
		assert.False(t, ran, "payload %q: handler called", c.payload)
		assert.Equal(t, queuetytype.JobBuried, j.Status, "payload %q: status", c.payload)
		assert.Equal(t, 1, j.Attempts, "payload %q: buried on its first attempt", c.payload)
		assert.True(t, strings.HasPrefix(j.ErrorMessage, c.err), "payload %q: error %q, want it to start with %q", c.payload, j.ErrorMessage, c.err)
		buried := e.Logs(driver.LogFilter{JobID: ids[i], Event: driver.LogBuried})
		if assert.Len(t, buried, 1, "payload %q: buried log rows", c.payload) {
			assert.Equal(t, j.ErrorMessage, buried[0].ErrorMessage, "payload %q: the log row's error", c.payload)
		}
	}
}

func testPanic(t *testing.T, e *Env) {
	id := e.Dispatch("explode", nil, queuety.MaxAttempts(1))
	ok := e.Dispatch("fine", nil)
	w := e.Worker(nil)
	w.HandleJob("explode", func(context.Context, queuety.Payload) error { panic("kaboom") })
	done := false
	w.HandleJob("fine", func(context.Context, queuety.Payload) error { done = true; return nil })
	st := e.Drain(w)
	assert.True(t, done, "the other job ran after the panic")
	assert.Equal(t, int64(1), st.Succeeded, "jobs succeeded")
	assert.Equal(t, int64(1), st.Failed, "jobs failed")
	j := e.Job(id)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, "panic: kaboom", j.ErrorMessage, "error")
	b := e.Logs(driver.LogFilter{JobID: id, Event: driver.LogBuried})
	require.Len(t, b, 1, "buried logs")
	assert.Equal(t, "panic", b[0].ErrorClass, "buried log error_class")
	assert.Contains(t, b[0].ErrorTrace, "goroutine", "buried log error_trace")
	assert.Equal(t, queuetytype.JobCompleted, e.Job(ok).Status, "other job")
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
