package dispatch

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// DispatchBatch writes a batch row and its jobs in one transaction, in
// Queuety's order (the batch row, then the jobs in order), and returns the
// batch id and the job ids. A job without a queue of its own goes on the
// spec's queue. A batch needs at least one job. The rows are written by
// Config.Batches, in a NoteJobs note: idle workers are woken for the jobs
// once they committed, and the engine knows, before that, which jobs have
// dependents now (a job dispatched with DependsOn).
func (s *Service) DispatchBatch(ctx context.Context, spec batch.Spec, reqs []JobRequest) (int64, []int64, error) {
	if err := spec.Check(len(reqs)); err != nil {
		return 0, nil, err
	}
	for _, cb := range []string{spec.Then, spec.Catch, spec.Finally} {
		if cb != "" {
			if err := ValidateHandlerName(cb); err != nil {
				return 0, nil, fmt.Errorf("queuety: dispatch batch: callback: %w", err)
			}
		}
	}
	jobs := make([]*driver.Job, len(reqs))
	for i, r := range reqs {
		if r.Spec.Queue == "" {
			r.Spec.Queue = spec.Queue
		}
		if r.Spec.Unique {
			return 0, nil, fmt.Errorf("queuety: dispatch batch job %d: %w", i, invalidf("Unique is not supported in a batch"))
		}
		job, err := s.BuildJob(r)
		if err != nil {
			return 0, nil, fmt.Errorf("queuety: dispatch batch job %d: %w", i, err)
		}
		jobs[i] = job
	}
	ctx, woke := s.cfg.NoteJobs(ctx)
	id, err := s.cfg.Batches.Insert(ctx, spec, jobs)
	if err != nil {
		return 0, nil, err
	}
	woke()
	return id, jobIDs(jobs), nil
}

// DispatchChain writes a chain's jobs in one transaction, each depending on
// the one before, and returns their ids. A job without a queue of its own
// goes on queue; catch ("" for none) is added to every payload as
// __chain_catch, after the job's own keys, as ChainBuilder does. The jobs
// are written in a NoteJobs note, as a batch's are (DispatchBatch).
func (s *Service) DispatchChain(ctx context.Context, queue, catch string, reqs []JobRequest) ([]int64, error) {
	if err := batch.CheckChain(len(reqs)); err != nil {
		return nil, err
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
			r.Payload.Set(batch.ChainKey, catch)
		}
		job, err := s.BuildJob(r)
		if err != nil {
			return nil, fmt.Errorf("queuety: dispatch chain job %d: %w", i, err)
		}
		jobs[i] = job
	}
	ctx, woke := s.cfg.NoteJobs(ctx)
	ids, err := s.cfg.Batches.InsertChain(ctx, jobs)
	if err != nil {
		return nil, err
	}
	woke()
	return ids, nil
}
