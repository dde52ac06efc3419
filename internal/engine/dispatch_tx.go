package engine

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// insertChunk is how many jobs one INSERT writes; it keeps statements well
// below max_allowed_packet.
const insertChunk = 500

// DispatchIn enqueues one job inside tx, a transaction the caller owns
// (see driver.SQLStore.WrapTx), and returns its id. It writes what
// Dispatch writes; the job exists once the caller commits.
func (e *Engine) DispatchIn(ctx context.Context, tx driver.Tx, handler string, payload *phpjson.Object, spec JobSpec) (int64, error) {
	job, err := e.buildJob(JobRequest{Handler: handler, Payload: payload, Spec: spec})
	if err != nil {
		return 0, err
	}
	if err := insertJobs(ctx, tx, []*driver.Job{job}, []bool{spec.Unique}); err != nil {
		return 0, fmt.Errorf("queuety: dispatch %q in transaction: %w", handler, err)
	}
	return job.ID, nil
}

// DispatchManyIn enqueues jobs inside tx, a transaction the caller owns,
// and returns their ids in order, as DispatchMany does.
func (e *Engine) DispatchManyIn(ctx context.Context, tx driver.Tx, reqs []JobRequest) ([]int64, error) {
	jobs, unique, err := e.buildJobs(reqs)
	if err != nil {
		return nil, err
	}
	if err := insertJobs(ctx, tx, jobs, unique); err != nil {
		return nil, fmt.Errorf("queuety: dispatch in transaction: %w", err)
	}
	return jobIDs(jobs), nil
}

// DispatchWorkflowIn starts a workflow inside tx, a transaction the caller
// owns, writing what DispatchWorkflow writes. With an idempotency key used
// before it returns the existing workflow's id and writes nothing. When
// another transaction stores the same key first, it returns an error
// wrapping driver.ErrDuplicate and the caller must roll back.
func (e *Engine) DispatchWorkflowIn(ctx context.Context, tx driver.Tx, def Definition, initial *phpjson.Object) (int64, error) {
	p, err := prepareWorkflow(def, initial)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	id, err := e.insertWorkflow(ctx, tx, p, e.clock.Now())
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q in transaction: %w", def.Name, err)
	}
	return id, nil
}

// buildJobs validates requests and turns them into rows; unique[i] says
// whether request i asked for Unique.
func (e *Engine) buildJobs(reqs []JobRequest) (jobs []*driver.Job, unique []bool, err error) {
	jobs, unique = make([]*driver.Job, len(reqs)), make([]bool, len(reqs))
	for i, r := range reqs {
		if jobs[i], err = e.buildJob(r); err != nil {
			return nil, nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, err)
		}
		unique[i] = r.Spec.Unique
	}
	return jobs, unique, nil
}

// insertJobs writes jobs in tx, in order, with multi-row inserts, and sets
// their ids. A job whose request asked for Unique is written only when no
// job of its handler with the same payload, whatever the order of its
// object keys (see unique.go), is pending or processing after a unique
// dispatch, or was written earlier in this call; otherwise it gets that
// job's id. That is what Queuety's dispatch(...)->unique() returns when
// the jobs are dispatched one after another.
func insertJobs(ctx context.Context, tx driver.Tx, jobs []*driver.Job, unique []bool) error {
	_, err := insertNewJobs(ctx, tx, jobs, unique)
	return err
}

// insertNewJobs is insertJobs, returning the rows it inserted.
func insertNewJobs(ctx context.Context, tx driver.Tx, jobs []*driver.Job, unique []bool) ([]*driver.Job, error) {
	type key struct{ handler, canon string }
	first := map[key]*driver.Job{} // the unique job that owns a key in this call
	var fresh []*driver.Job
	dupOf := map[int]*driver.Job{}
	for i, j := range jobs {
		j.ID = 0 // InTx may run this again
		if !unique[i] {
			fresh = append(fresh, j)
			continue
		}
		u := uniqueKey(j.Payload, j.PayloadHash)
		k := key{j.Handler, u.canon}
		if f, ok := first[k]; ok {
			dupOf[i] = f
			continue
		}
		first[k] = j
		id, err := findActiveTwin(ctx, tx, j.Handler, j.Payload, j.PayloadHash, u)
		if err != nil {
			return nil, err
		}
		if id != 0 {
			j.ID = id
			continue
		}
		fresh = append(fresh, j)
	}
	for start := 0; start < len(fresh); start += insertChunk {
		if err := tx.JobInsert(ctx, fresh[start:min(start+insertChunk, len(fresh))]); err != nil {
			return nil, err
		}
	}
	for i, f := range dupOf {
		jobs[i].ID = f.ID
	}
	return fresh, nil
}

func jobIDs(jobs []*driver.Job) []int64 {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// SyncPayload is the payload a handler run by a sync dispatch sees: the
// object as a claimed job's handler would read it back from its row (the
// stored JSON decoded again), without reserved keys.
func SyncPayload(payload *phpjson.Object) (Payload, error) {
	if payload == nil {
		payload = phpjson.NewObject()
	}
	for _, k := range payload.Keys() {
		if k == runtimeKey || k == callbackKey { // as buildJob
			return nil, invalidf("payload key %q is reserved", k)
		}
	}
	raw, err := phpjson.Marshal(payload)
	if err != nil {
		return nil, invalidf("payload does not encode as JSON: %v", err)
	}
	doc, err := workflowstate.DecodeObject("payload", raw)
	if err != nil {
		return nil, err
	}
	return (&Claimed{payload: doc}).Payload(), nil
}
