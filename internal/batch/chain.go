package batch

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

// CheckChain checks a chain of n jobs: a chain needs at least one.
func CheckChain(n int) error {
	if n == 0 {
		return fmt.Errorf("queuety: dispatch chain: %w", invalidf("a chain needs at least one job"))
	}
	return nil
}

// InsertChain writes a chain's jobs, built from their requests by the
// engine, in one transaction, each depending on the one before (the first
// on whatever it depends on already), sets their ids and returns them. A
// chain needs at least one job. The jobs are noted in the jobnote.Note
// ctx carries, if any, each with the job it depends on: the caller wakes
// workers for them.
func (e *Service) InsertChain(ctx context.Context, jobs []*driver.Job) ([]int64, error) {
	if err := CheckChain(len(jobs)); err != nil {
		return nil, err
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
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// JobBuried runs what the burial of a plain job sets off, in the
// transaction that buried it: its batch records the failure, and its
// chain's catch handler is enqueued. payload is the job's decoded payload
// (nil when it could not be read); msg is the error that buried it.
// Workflow step jobs are passed over.
func (e *Service) JobBuried(ctx context.Context, tx driver.Tx, row *driver.Job, payload *phpjson.Object, msg string, now time.Time) error {
	if row.WorkflowID != 0 {
		return nil
	}
	if err := e.jobBuried(ctx, tx, row, now); err != nil {
		return err
	}
	return e.chainJobBuried(ctx, tx, payload, row, msg, now)
}

// chainJobBuried enqueues the chain catch handler named in a buried job's
// payload, routed as a batch callback (callbackRoute): for a Go worker
// (HandleChainCatch) or for Queuety PHP's bridge class. Like a batch
// callback it runs once: a failure buries it, and only a worker's death
// gives it another attempt (see callbackFailed).
func (e *Service) chainJobBuried(ctx context.Context, tx driver.Tx, jobPayload *phpjson.Object, row *driver.Job, msg string, now time.Time) error {
	if jobPayload == nil {
		return nil
	}
	name := strField(jobPayload, ChainKey)
	if name == "" {
		return nil
	}
	payload := phpjson.NewObject()
	handler := name
	queue, php := e.callbackRoute(name, row.Queue)
	if php {
		handler = HandlerPHPCallback
		payload.Set("chain_catch", name)
		payload.Set("job_id", row.ID)
		payload.Set("error_message", msg)
		payload.Set(RuntimeKey, e.cfg.BridgeRuntime())
	} else {
		public := phpjson.NewObject()
		for _, k := range jobPayload.Keys() {
			if k != RuntimeKey && k != ChainKey && k != CallbackKey {
				v, _ := jobPayload.Get(k)
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
		payload.Set(CallbackKey, marker)
	}
	return tx.JobInsert(ctx, []*driver.Job{{
		Queue: queue, Handler: handler, Payload: encodeJSON(payload), Status: driver.JobPending, MaxAttempts: e.cfg.CallbackAttempts,
		AvailableAt: floorSecond(now), CostUnits: 1, CreatedAt: floorSecond(now),
	}})
}
