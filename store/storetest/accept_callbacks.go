package storetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// The engine's callback jobs (batch then/catch/finally, chain catch,
// deadline and cancel callbacks) run once without a crash and at least
// once with one: a worker that dies while running one leaves it to stale
// recovery, which hands it back to run again; a callback that fails is
// buried and not run again.

func init() {
	register("Callbacks/BatchCallbacksRunAgainAfterWorkerDied", testCallbackBatchDied)
	register("Callbacks/ChainCatchRunsAgainAfterWorkerDied", testCallbackChainDied)
	register("Callbacks/DeadlineCallbackRunsAgainAfterWorkerDied", testCallbackDeadlineDied)
	register("Callbacks/CancelCallbackRunsAgainAfterWorkerDied", testCallbackCancelDied)
	register("Callbacks/FailedCallbackRunsOnce", testCallbackFailsOnce)
	register("Callbacks/BuriedAfterEveryAttemptDied", testCallbackDiedEveryAttempt)
	register("Callbacks/PHPBridgeJobRunsAgainAfterWorkerDied", testCallbackBridgeDied)
}

// dieWith claims one job of handler from queue, as a worker that then
// dies: nothing reports, the claim is never renewed. The clock moves past
// the lease and stale recovery must take exactly that job back. It returns
// the dead claim.
func (e *Env) dieWith(queue, handler string) *engine.Claimed {
	e.T.Helper()
	dead := e.ClaimFrom(e.C, []string{queue}, 1, handler)
	require.Lenf(e.T, dead, 1, "claim of %s on %s: found no due job", handler, queue)
	e.Clock.Advance(time.Hour)
	require.Equal(e.T, 1, e.recoverStale(), "stale recovery took back the dead worker's %s job", handler)
	j := e.Job(dead[0].Job.ID)
	require.Equalf(e.T, queuetytype.JobPending, j.Status, "%s job after its worker died (%s)", handler, j.ErrorMessage)
	return dead[0]
}

// ranOnceAfterDeath checks a callback job that a dead worker had claimed:
// it completed on its second attempt, and the dead attempt's late result
// is refused.
func (e *Env) ranOnceAfterDeath(dead *engine.Claimed) {
	e.T.Helper()
	j := e.Job(dead.Job.ID)
	assert.Equal(e.T, queuetytype.JobCompleted, j.Status, "%s job", j.Handler)
	assert.Equal(e.T, 2, j.Attempts, "%s job attempts: the dead one and the one that ran", j.Handler)
	assert.ErrorIs(e.T, e.Complete(dead)[0], queuetytype.ErrStaleAttempt, "the dead attempt's late result is refused")
}

func testCallbackBatchDied(t *testing.T, e *Env) {
	id, err := e.C.NewBatch(batchJobs("import_row", 1, 1)...).Then("done").Finally("cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	e.completeAll(e.ClaimOne("import_row"), e.Jobs(driver.JobFilter{Handler: "import_row"})[0].ID)
	dead := e.dieWith(queuetytype.DefaultQueue, "done")
	log := &callbackLog{}
	w := e.Worker(nil, worker.Concurrency(1))
	log.register(w, "done", "cleanup")
	e.Drain(w)
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	assert.ElementsMatch(t, []string{"done:then", "cleanup:finally"}, log.all(), "each callback ran once after the crash")
	e.ranOnceAfterDeath(dead)
	assert.Len(t, e.Jobs(driver.JobFilter{Handler: "done"}), 1, "one then job")
	assert.Equal(t, id, log.batch("done").ID, "the rerun saw the batch")
	assert.Equal(t, dead.Job.ID, e.batchEvents(id)["then"].JobID, "the then event names the job that ran")
}

func testCallbackChainDied(t *testing.T, e *Env) {
	ids, err := e.C.Chain(batchJobs("step", 1, 2)...).Catch("chain_failed").DispatchIDs(e.Ctx)
	require.NoError(t, err)
	first := e.ClaimOne("step")
	require.NoError(t, e.Fail(first[0], queuety.NonRetryable(errors.New("step 1 broke"))))
	dead := e.dieWith(queuetytype.DefaultQueue, "chain_failed")
	var caught []queuety.ChainFailure
	w := e.Worker(nil)
	w.HandleChainCatch("chain_failed", func(_ context.Context, f queuety.ChainFailure) error {
		caught = append(caught, f)
		return nil
	})
	e.Drain(w)
	require.Len(t, caught, 1, "catch calls after the crash")
	assert.Equal(t, ids[0], caught[0].JobID, "the catch got the buried job")
	assert.Equal(t, "step 1 broke", caught[0].Error, "the catch got its error")
	e.ranOnceAfterDeath(dead)
}

func testCallbackDeadlineDied(t *testing.T, e *Env) {
	id := e.Start(expiring("invoice_collection"), queuety.State{"customer_id": 501})
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.sweep(), "expired at the deadline")
	dead := e.dieWith("invoices", "escalate")
	var calls []queuety.State
	w := e.Worker(nil, worker.Queues("invoices"))
	w.HandleDeadline("escalate", func(_ context.Context, s queuety.State) error { calls = append(calls, s); return nil })
	e.Drain(w)
	require.Len(t, calls, 1, "deadline handler calls after the crash")
	assert.Equal(t, queuety.State{"customer_id": int64(501)}, calls[0], "the rerun got the public state")
	e.ranOnceAfterDeath(dead)
	assert.Equal(t, 0, e.sweep(), "the failed workflow is not swept again")
	e.Clock.Advance(time.Hour)
	e.Drain(w)
	assert.Len(t, calls, 1, "deadline handler calls in the end")
	assert.Len(t, e.Jobs(driver.JobFilter{Handler: "escalate"}), 1, "one deadline callback job")
	assert.Equal(t, queuetytype.WorkflowFailed, e.Workflow(id).Status, "status")
}

func testCallbackCancelDied(t *testing.T, e *Env) {
	id := e.startB(builder.Workflow("cancel_me").WaitForSignal("go").OnCancel("undo"), queuety.State{"order": 7})
	w := e.Worker(nil)
	var calls []queuety.State
	w.HandleDeadline("undo", func(_ context.Context, s queuety.State) error { calls = append(calls, s); return nil })
	e.Drain(w)
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, id))
	dead := e.dieWith(queuetytype.DefaultQueue, "undo")
	e.Drain(w)
	require.Len(t, calls, 1, "cancel callback calls after the crash")
	assert.Equal(t, queuety.State{"order": int64(7)}, calls[0], "the rerun got the public state")
	e.ranOnceAfterDeath(dead)
	assert.Equal(t, queuetytype.WorkflowCancelled, e.Workflow(id).Status, "status")
}

// testCallbackFailsOnce: attempts left for a crash are no retries for a
// callback that fails. Each of these runs once and is buried with its
// error, however long the worker keeps going.
func testCallbackFailsOnce(t *testing.T, e *Env) {
	_, err := e.C.NewBatch(batchJobs("import_row", 1, 1)...).Then("done").Finally("cleanup").Dispatch(e.Ctx)
	require.NoError(t, err)
	_, err = e.C.Chain(batchJobs("step", 1, 1)...).Catch("chain_failed").DispatchIDs(e.Ctx)
	require.NoError(t, err)
	e.Start(queuety.WorkflowDefinition{Name: "late", Steps: steps("never"), ExecutionTimeout: time.Minute, OnDeadline: "escalate"}, nil)
	cancelled := e.startB(builder.Workflow("cancel_me").WaitForSignal("go").OnCancel("undo"), nil)

	calls := map[string]*atomic.Int64{}
	for _, name := range []string{"done", "cleanup", "chain_failed", "escalate", "undo"} {
		calls[name] = &atomic.Int64{}
	}
	w := e.Worker(nil)
	w.HandleJob("import_row", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("step", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("broke")) })
	w.HandleBatchCallback("done", func(context.Context, *queuety.Batch) error {
		calls["done"].Add(1)
		return errors.New("then failed")
	})
	w.HandleBatchCallback("cleanup", func(context.Context, *queuety.Batch) error {
		calls["cleanup"].Add(1)
		panic("finally panicked")
	})
	w.HandleChainCatch("chain_failed", func(context.Context, queuety.ChainFailure) error {
		calls["chain_failed"].Add(1)
		return errors.New("catch failed")
	})
	w.HandleDeadline("escalate", func(context.Context, queuety.State) error {
		calls["escalate"].Add(1)
		return errors.New("pager down")
	})
	w.HandleDeadline("undo", func(context.Context, queuety.State) error {
		calls["undo"].Add(1)
		return errors.New("undo failed")
	})
	e.Drain(w)
	require.NoError(t, e.C.CancelWorkflow(e.Ctx, cancelled))
	e.Clock.Advance(2 * time.Minute)
	require.Equal(t, 1, e.sweep(), "deadline expired")
	for range 4 {
		e.Drain(w)
		e.Clock.Advance(time.Hour) // past any backoff
	}
	for name, n := range calls {
		assert.Equal(t, int64(1), n.Load(), "runs of the failing %s callback", name)
		j := e.OneJob(driver.JobFilter{Handler: name})
		assert.Equal(t, queuetytype.JobBuried, j.Status, "%s job", name)
		assert.Equal(t, 1, j.Attempts, "%s job attempts", name)
		assert.NotEmpty(t, j.ErrorMessage, "%s job error", name)
		assert.NotEqual(t, engine.StaleMessage, j.ErrorMessage, "%s job error", name)
	}
}

// testCallbackDiedEveryAttempt: the attempts after the first are bounded:
// a callback whose worker dies on every attempt is buried as stale once
// they are used up.
func testCallbackDiedEveryAttempt(t *testing.T, e *Env) {
	_, err := e.C.NewBatch(batchJobs("import_row", 1, 1)...).Then("done").Dispatch(e.Ctx)
	require.NoError(t, err)
	e.completeAll(e.ClaimOne("import_row"), e.Jobs(driver.JobFilter{Handler: "import_row"})[0].ID)
	job := e.OneJob(driver.JobFilter{Handler: "done"})
	require.Greater(t, job.MaxAttempts, 1, "then job max_attempts")
	for i := 1; i < job.MaxAttempts; i++ {
		e.dieWith(queuetytype.DefaultQueue, "done")
	}
	e.ClaimOne("done")
	e.Clock.Advance(time.Hour)
	require.Equal(t, 1, e.recoverStale(), "stale recovery of the last attempt")
	j := e.Job(job.ID)
	assert.Equal(t, queuetytype.JobBuried, j.Status, "then job after every attempt died")
	assert.Equal(t, job.MaxAttempts, j.Attempts, "attempts")
	assert.Equal(t, engine.StaleMessage, j.ErrorMessage, "error")
}

// testCallbackBridgeDied: a callback job handed to Queuety PHP's bridge
// class whose worker died is handed back by stale recovery, and carries
// its attempts in the payload's runtime options, which Queuety PHP puts
// before the bridge class's config().
func testCallbackBridgeDied(t *testing.T, e *Env) {
	c := e.Client(queuety.WithPHPBatchCallbacks("php"))
	_, err := c.NewBatch(batchJobs("import_row", 1, 1)...).Then(`App\Done`).Dispatch(e.Ctx)
	require.NoError(t, err)
	w := e.Worker(c)
	w.HandleJob("import_row", func(context.Context, queuety.Payload) error { return nil })
	e.Drain(w)
	bridge := e.OneJob(driver.JobFilter{Queue: "php"})
	require.Equal(t, batch.HandlerPHPCallback, bridge.Handler, "bridge job")
	assert.Contains(t, string(bridge.Payload), `"__queuety_runtime":{"max_attempts":`, "bridge payload")
	dead := e.dieWith("php", batch.HandlerPHPCallback)
	j := e.Job(dead.Job.ID)
	assert.Equal(t, 1, j.Attempts, "the dead attempt counts")
	assert.Greater(t, j.MaxAttempts, j.Attempts, "attempts left for the bridge job")
}
