package storetest

// This file holds the cases of rows that could stop every claim: a claim
// takes a batch of rows in one statement, so one row whose values the
// claim cannot write would fail the claims of its queue, and a worker
// claims for all its queues at once.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Jobs/ClaimTakesRowAtAttemptsLimit", testClaimAttemptsAtLimit)
	register("Jobs/MaxAttemptsAboveColumnIsClamped", testMaxAttemptsAboveColumn)
}

// insertPoisoned inserts, in queue "poison", a pending job of handler
// "fails" with the given attempts and payload, and ten jobs of handler
// "ok" in queue "default". It returns the poisoned job's id and the others'.
func insertPoisoned(t *testing.T, e *Env, attempts int, payload string) (int64, []int64) {
	t.Helper()
	poison := &driver.Job{Queue: "poison", Handler: "fails", Payload: []byte(payload), Status: queuetytype.JobPending,
		Attempts: attempts, MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1}
	var others []*driver.Job
	for range 10 {
		others = append(others, &driver.Job{Queue: "default", Handler: "ok", Payload: []byte(`{}`), Status: queuetytype.JobPending,
			MaxAttempts: 3, AvailableAt: Epoch, CreatedAt: Epoch, CostUnits: 1})
	}
	require.NoError(t, clientseam.StoreOf(e.C).InTx(e.Ctx, func(tx driver.Tx) error {
		return tx.JobInsert(e.Ctx, append([]*driver.Job{poison}, others...))
	}), "insert jobs")
	ids := make([]int64, len(others))
	for i, j := range others {
		ids[i] = j.ID
	}
	return poison.ID, ids
}

// runPoisoned runs a worker of one slot on queues "poison" then "default",
// whose "fails" handler always fails, until nothing is due (at most 15 s),
// and returns how many "ok" jobs ran.
func runPoisoned(t *testing.T, e *Env) int64 {
	t.Helper()
	var ran atomic.Int64
	w := e.Worker(nil, worker.Queues("poison", "default"), worker.Concurrency(1))
	w.HandleJob("fails", func(context.Context, queuety.Payload) error { return errors.New("handler failed") })
	w.HandleJob("ok", func(context.Context, queuety.Payload) error { ran.Add(1); return nil })
	_, err := w.RunOnce(e.Ctx, 15*time.Second)
	require.NoError(t, err, "RunOnce")
	return ran.Load()
}

// testClaimAttemptsAtLimit: a pending row whose attempts already hold the
// column's largest value (written by Queuety PHP or by hand) is claimed
// with attempts kept at the limit instead of failing every claim of the
// worker; its failed attempt buries it, and the other queue's jobs run.
func testClaimAttemptsAtLimit(t *testing.T, e *Env) {
	poison, others := insertPoisoned(t, e, queuetytype.MaxAttemptsLimit, `{}`)
	assert.Equal(t, int64(len(others)), runPoisoned(t, e), "jobs of the worker's other queue that ran")
	for _, id := range others {
		assert.Equal(t, queuetytype.JobCompleted, e.Job(id).Status, "job %d", id)
	}
	j := e.Job(poison)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "the row at the limit: status")
	assert.Equal(t, queuetytype.MaxAttemptsLimit, j.Attempts, "attempts stay at the column's limit")
	assert.Equal(t, "handler failed", j.ErrorMessage, "error")
}

// testMaxAttemptsAboveColumn: a job whose __queuety_runtime allows more
// attempts than the column can count is buried at the column's limit with
// an error that says why, instead of reaching it, being retried, and then
// failing every claim.
func testMaxAttemptsAboveColumn(t *testing.T, e *Env) {
	poison, others := insertPoisoned(t, e, queuetytype.MaxAttemptsLimit-2, `{"__queuety_runtime":{"max_attempts":1000,"backoff":[0]}}`)
	assert.Equal(t, int64(len(others)), runPoisoned(t, e), "jobs of the worker's other queue that ran")
	j := e.Job(poison)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
	assert.Equal(t, queuetytype.MaxAttemptsLimit, j.Attempts, "buried at the column's limit")
	assert.True(t, strings.HasPrefix(j.ErrorMessage, "handler failed"), "error %q starts with the handler's", j.ErrorMessage)
	assert.Contains(t, j.ErrorMessage, fmt.Sprintf("max_attempts 1000 is more than the attempts column holds, so %d is the limit", queuetytype.MaxAttemptsLimit), "error")
	assert.Equal(t, "started,failed,retried,started,buried", strings.Join(e.Events(driver.LogFilter{JobID: poison}), ","), "the two attempts' log rows")
}
