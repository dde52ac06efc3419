package engine

// This file runs Queuety's chains (ChainBuilder): jobs that run one after
// another because each depends on the previous one (depends_on), so a
// claim takes a job only once the one before it completed. A job that is
// buried stops the chain: the jobs after it stay pending for good, as in
// Queuety. With a catch handler every job's payload carries
// "__chain_catch": <name>, and the burial of any of them calls it once:
// Queuety calls the class in-process (handle($job, $exception)); the Go
// engine enqueues a job in the transaction that buries, routed like a
// batch callback (see batch.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// DispatchChain writes a chain's jobs in one transaction, each depending on
// the one before, and returns their ids. A job without a queue of its own
// goes on queue; catch ("" for none) is added to every payload as
// __chain_catch, after the job's own keys, as ChainBuilder does.
func (e *Engine) DispatchChain(ctx context.Context, queue, catch string, reqs []JobRequest) ([]int64, error) {
	if len(reqs) == 0 {
		return nil, fmt.Errorf("queuety: dispatch chain: %w", invalidf("a chain needs at least one job"))
	}
	if catch != "" {
		if err := ValidateHandlerName(catch); err != nil {
			return nil, fmt.Errorf("queuety: dispatch chain: catch handler: %w", err)
		}
	}
	jobs := make([]*driver.Job, len(reqs))
	for i, r := range reqs {
		if r.Spec.Queue == "" {
			r.Spec.Queue = queue
		}
		if r.Spec.Unique {
			return nil, fmt.Errorf("queuety: dispatch chain job %d: %w", i, invalidf("Unique is not supported in a chain"))
		}
		if i > 0 && r.Spec.DependsOn != 0 {
			return nil, fmt.Errorf("queuety: dispatch chain job %d: %w", i, invalidf("DependsOn is set by the chain"))
		}
		if catch != "" {
			if r.Payload == nil {
				r.Payload = phpjson.NewObject()
			}
			r.Payload.Set(chainKey, catch)
		}
		job, err := e.buildJob(r)
		if err != nil {
			return nil, fmt.Errorf("queuety: dispatch chain job %d: %w", i, err)
		}
		jobs[i] = job
	}
	first := jobs[0].DependsOn
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		prev := first
		for _, j := range jobs {
			j.ID, j.DependsOn = 0, prev
			if err := tx.JobInsert(ctx, []*driver.Job{j}); err != nil {
				return err
			}
			prev = j.ID
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch chain: %w", err)
	}
	e.wake()
	return jobIDs(jobs), nil
}

// jobBuried runs what the burial of a plain job sets off, in the
// transaction that buried it: its batch records the failure, and its
// chain's catch handler is enqueued.
func (e *Engine) jobBuried(ctx context.Context, tx driver.Tx, cj *Claimed, row *driver.Job, msg string, now time.Time) error {
	if row.WorkflowID != 0 {
		return nil
	}
	if err := e.batchJobBuried(ctx, tx, row, now); err != nil {
		return err
	}
	return e.chainJobBuried(ctx, tx, cjWithPayload(cj, row), row, msg, now)
}

// chainJobBuried enqueues the chain catch handler named in a buried job's
// payload, routed as a batch callback (callbackRoute): for a Go worker
// (HandleChainCatch) or for Queuety PHP's bridge class. Like a batch
// callback it runs once: a failure buries it, and only a worker's death
// gives it another attempt (see callbackFailed).
func (e *Engine) chainJobBuried(ctx context.Context, tx driver.Tx, cj *Claimed, row *driver.Job, msg string, now time.Time) error {
	if cj.payload == nil {
		return nil
	}
	name := strField(cj.payload, chainKey)
	if name == "" {
		return nil
	}
	payload := phpjson.NewObject()
	handler := name
	queue, php := e.callbackRoute(name, row.Queue)
	if php {
		handler = HandlerPHPBatchCallback
		payload.Set("chain_catch", name)
		payload.Set("job_id", row.ID)
		payload.Set("error_message", msg)
		payload.Set(runtimeKey, callbackRuntime())
	} else {
		public := phpjson.NewObject()
		for _, k := range cj.payload.Keys() {
			if k != runtimeKey && k != chainKey && k != callbackKey {
				v, _ := cj.payload.Get(k)
				public.Set(k, v)
			}
		}
		payload.Set("job_id", row.ID)
		payload.Set("handler", row.Handler)
		payload.Set("queue", row.Queue)
		payload.Set("payload", public)
		payload.Set("error_message", msg)
		marker := phpjson.NewObject()
		marker.Set("kind", "chain_catch")
		marker.Set("job_id", row.ID)
		payload.Set(callbackKey, marker)
	}
	return tx.JobInsert(ctx, []*driver.Job{{
		Queue: queue, Handler: handler, Payload: EncodeJSON(payload), Status: driver.JobPending, MaxAttempts: callbackAttempts,
		AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now),
	}})
}
