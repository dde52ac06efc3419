package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// insertChunk is how many jobs one INSERT writes; it keeps statements well
// below max_allowed_packet.
const insertChunk = 500

// JobRequest is one job to dispatch: a handler, its payload as an ordered
// JSON object (nil for none) and its resolved options. The Service takes
// the payload over: it adds the runtime key to it in place.
type JobRequest struct {
	Handler string
	Payload *phpjson.Object
	Spec    queuetytype.JobSpec
}

// Dispatch enqueues one job for handler and returns its id. The payload
// must encode as a JSON object (a State, a map or a struct); nil means an
// empty payload. Invalid input returns an error wrapping
// driver.ErrInvalidArgument and writes nothing.
//
// With the Unique option, an identical pending or processing job's id is
// returned instead of a new one.
func (s *Service) Dispatch(ctx context.Context, handler string, payload *phpjson.Object, spec queuetytype.JobSpec) (int64, error) {
	obs := s.cfg.Observer
	if obs == nil {
		job, _, err := s.dispatch(ctx, handler, payload, spec)
		if err != nil {
			return 0, err
		}
		return job.ID, nil
	}
	d := observe.Dispatch{Kind: observe.DispatchJob, Name: handler, Queue: orDefault(spec.Queue, queuetytype.DefaultQueue), Count: 1}
	ctx = obs.DispatchStart(ctx, d)
	job, existing, err := s.dispatch(ctx, handler, payload, spec)
	r := observe.Dispatched{Existing: existing, Err: err}
	if err == nil {
		r.ID = job.ID
		if !existing {
			r.Jobs = []observe.JobRef{{ID: job.ID, Queue: job.Queue, Handler: job.Handler}}
		}
	}
	obs.DispatchEnd(ctx, d, r)
	if err != nil {
		return 0, err
	}
	return job.ID, nil
}

// dispatch writes one job and returns it, with whether Unique found an
// identical one instead.
func (s *Service) dispatch(ctx context.Context, handler string, payload *phpjson.Object, spec queuetytype.JobSpec) (*driver.Job, bool, error) {
	job, err := s.BuildJob(JobRequest{Handler: handler, Payload: payload, Spec: spec})
	if err != nil {
		return nil, false, err
	}
	var fresh []*driver.Job
	ctx, woke := s.cfg.NoteJobs(ctx)
	err = s.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		fresh, err = insertNewJobs(ctx, tx, []*driver.Job{job}, []bool{spec.Unique})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("queuety: dispatch %q: %w", handler, err)
	}
	if len(fresh) > 0 {
		woke()
	}
	return job, len(fresh) == 0, nil
}

// DispatchMany enqueues many jobs with multi-row inserts, in one
// transaction, and returns their ids in order. Either every job is written
// or none. A request with the Unique option gets the id of an identical
// pending or processing job, or of an identical unique request earlier in
// the same call, instead of a new job (see insertJobs).
func (s *Service) DispatchMany(ctx context.Context, reqs []JobRequest) ([]int64, error) {
	obs := s.cfg.Observer
	if obs == nil {
		_, ids, err := s.dispatchMany(ctx, reqs)
		return ids, err
	}
	d := observe.Dispatch{Kind: observe.DispatchBatch, Count: len(reqs)}
	ctx = obs.DispatchStart(ctx, d)
	jobs, ids, err := s.dispatchMany(ctx, reqs)
	r := observe.Dispatched{Err: err}
	if err == nil {
		r.Jobs = make([]observe.JobRef, len(jobs))
		for i, j := range jobs {
			r.Jobs[i] = observe.JobRef{ID: j.ID, Queue: j.Queue, Handler: j.Handler}
		}
	}
	obs.DispatchEnd(ctx, d, r)
	return ids, err
}

// dispatchMany writes the jobs of reqs and returns the rows it inserted
// (not those Unique found) and every request's id.
func (s *Service) dispatchMany(ctx context.Context, reqs []JobRequest) ([]*driver.Job, []int64, error) {
	jobs, unique, err := s.buildJobs(reqs)
	if err != nil {
		return nil, nil, err
	}
	var fresh []*driver.Job
	ctx, woke := s.cfg.NoteJobs(ctx)
	if err := s.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		fresh, err = insertNewJobs(ctx, tx, jobs, unique)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("queuety: dispatch batch: %w", err)
	}
	if len(fresh) > 0 {
		woke()
	}
	return fresh, jobIDs(jobs), nil
}

// DispatchIn enqueues one job inside tx, a transaction the caller owns
// (see driver.SQLStore.WrapTx), and returns its id. It writes what
// Dispatch writes; the job exists once the caller commits. It wakes no
// worker (the commit is the caller's), but the job is written in a
// NoteJobs note all the same, so the engine knows, before the commit,
// which job it depends on (DependsOn) and wakes a worker for it when that
// one completes.
func (s *Service) DispatchIn(ctx context.Context, tx driver.Tx, handler string, payload *phpjson.Object, spec queuetytype.JobSpec) (int64, error) {
	job, err := s.BuildJob(JobRequest{Handler: handler, Payload: payload, Spec: spec})
	if err != nil {
		return 0, err
	}
	ctx, _ = s.cfg.NoteJobs(ctx) // heard for the dependency; nothing to wake
	if err := insertJobs(ctx, tx, []*driver.Job{job}, []bool{spec.Unique}); err != nil {
		return 0, fmt.Errorf("queuety: dispatch %q in transaction: %w", handler, err)
	}
	return job.ID, nil
}

// DispatchManyIn enqueues jobs inside tx, a transaction the caller owns,
// and returns their ids in order, as DispatchMany does. Like DispatchIn,
// it wakes no worker and tells the engine of the jobs' dependencies.
func (s *Service) DispatchManyIn(ctx context.Context, tx driver.Tx, reqs []JobRequest) ([]int64, error) {
	jobs, unique, err := s.buildJobs(reqs)
	if err != nil {
		return nil, err
	}
	ctx, _ = s.cfg.NoteJobs(ctx) // heard for the dependencies; nothing to wake
	if err := insertJobs(ctx, tx, jobs, unique); err != nil {
		return nil, fmt.Errorf("queuety: dispatch in transaction: %w", err)
	}
	return jobIDs(jobs), nil
}

// buildJobs validates requests and turns them into rows; unique[i] says
// whether request i asked for Unique.
func (s *Service) buildJobs(reqs []JobRequest) (jobs []*driver.Job, unique []bool, err error) {
	jobs, unique = make([]*driver.Job, len(reqs)), make([]bool, len(reqs))
	for i, r := range reqs {
		if jobs[i], err = s.BuildJob(r); err != nil {
			return nil, nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, err)
		}
		unique[i] = r.Spec.Unique
	}
	return jobs, unique, nil
}

// BuildJob validates a request and turns it into a pending row, due after
// the request's delay on the Service's clock; it writes nothing.
func (s *Service) BuildJob(r JobRequest) (*driver.Job, error) {
	spec := r.Spec
	if err := ValidateHandlerName(r.Handler); err != nil {
		return nil, err
	}
	if err := ValidateJobSpec(spec); err != nil {
		return nil, err
	}
	doc := r.Payload
	if doc == nil {
		doc = phpjson.NewObject()
	}
	for _, k := range doc.Keys() {
		if IsReservedPayloadKey(k) {
			return nil, invalidf("payload key %q is reserved", k)
		}
	}
	rt := jobruntime.Options{MaxAttempts: spec.MaxAttempts, Backoff: spec.Backoff, Timeouts: spec.Timeouts, RateLimit: spec.Resources.RateLimit}
	if rt.Backoff != nil || rt.Timeouts != (queuetytype.ActivityTimeouts{}) || rt.RateLimit.Max > 0 {
		if rt.MaxAttempts == 0 {
			rt.MaxAttempts = queuetytype.DefaultMaxAttempts
		}
		doc.Set(jobruntime.Key, rt.Encode())
	}
	payload, err := phpjson.Marshal(doc)
	if err != nil {
		return nil, invalidf("payload does not encode as JSON: %v", err)
	}
	now := s.cfg.Clock.Now()
	job := &driver.Job{
		Queue:       orDefault(spec.Queue, queuetytype.DefaultQueue),
		Handler:     r.Handler,
		Payload:     payload,
		Priority:    spec.Priority,
		Status:      driver.JobPending,
		MaxAttempts: orDefaultInt(spec.MaxAttempts, queuetytype.DefaultMaxAttempts),
		AvailableAt: rowtime.Due(now, spec.Delay),
		DependsOn:   spec.DependsOn,
		CostUnits:   1,
		CreatedAt:   rowtime.Floor(now),
	}
	if spec.Unique {
		sum := sha256.Sum256(payload)
		job.PayloadHash = hex.EncodeToString(sum[:])
	}
	applyResources(spec.Resources, job)
	ApplyScheduleDeadlines(job, spec.Timeouts, now)
	return job, nil
}

// IsReservedPayloadKey reports whether k is a payload key the engine owns
// (__queuety_runtime, __queuety_callback), which callers may not set.
func IsReservedPayloadKey(k string) bool { return k == jobruntime.Key || k == batch.CallbackKey }

// ApplyScheduleDeadlines sets the deadlines of job that start at
// scheduling: schedule-to-start from its due time, schedule-to-close from
// now.
func ApplyScheduleDeadlines(job *driver.Job, t queuetytype.ActivityTimeouts, now time.Time) {
	if t.ScheduleToStart > 0 {
		job.ScheduleToStartAt = job.AvailableAt.Add(t.ScheduleToStart)
	}
	if t.ScheduleToClose > 0 {
		job.ScheduleToCloseAt = now.Add(t.ScheduleToClose)
	}
}

// ValidateHandlerName checks a handler name: 1-255 characters.
func ValidateHandlerName(h string) error {
	switch {
	case h == "":
		return invalidf("handler name is empty")
	case len(h) > 255:
		return invalidf("handler name is longer than 255 characters")
	}
	return nil
}

// ValidateJobSpec checks the values a JobSpec would store.
func ValidateJobSpec(s queuetytype.JobSpec) error {
	if len(s.Queue) > 64 {
		return invalidf("queue name %q is longer than 64 characters", s.Queue)
	}
	if s.PrioritySet && !s.Priority.Valid() {
		return invalidf("priority %d out of range (0-3)", int(s.Priority))
	}
	if s.Delay < 0 {
		return invalidf("delay must not be negative, got %s", s.Delay)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > queuetytype.MaxAttemptsLimit {
		return invalidf("max attempts %d out of range (1-%d)", s.MaxAttempts, queuetytype.MaxAttemptsLimit)
	}
	if s.DependsOn < 0 {
		return invalidf("depends-on job id must be positive, got %d", s.DependsOn)
	}
	if err := jobruntime.ValidateBackoff(s.Backoff); err != nil {
		return err
	}
	if err := validateResources(s.Resources); err != nil {
		return err
	}
	return jobruntime.ValidateTimeouts(s.Timeouts)
}

// validateResources checks a job's concurrency group and limit, cost
// units and rate limit.
func validateResources(r queuetytype.JobResources) error {
	g := strings.TrimSpace(r.ConcurrencyGroup)
	switch {
	case r.ConcurrencyGroup != "" && g == "":
		return invalidf("concurrency group name is blank")
	case len(g) > 191:
		return invalidf("concurrency group name is longer than 191 characters")
	case r.ConcurrencyLimit < 0 || r.ConcurrencyLimit > 65535:
		return invalidf("concurrency limit %d out of range (1-65535)", r.ConcurrencyLimit)
	case r.ConcurrencyLimit > 0 && g == "":
		return invalidf("a concurrency limit needs a concurrency group")
	case r.CostUnitsSet && (r.CostUnits < 1 || r.CostUnits > 1<<31):
		return invalidf("cost units must be at least 1, got %d", r.CostUnits)
	case r.RateLimit != queuetytype.Rate{} && (r.RateLimit.Max < 1 || r.RateLimit.Window < time.Second):
		return invalidf("rate limit needs at least 1 start in a window of at least 1 second, got %d per %s", r.RateLimit.Max, r.RateLimit.Window)
	}
	return nil
}

// applyResources writes a job's resource columns.
func applyResources(r queuetytype.JobResources, job *driver.Job) {
	job.ConcurrencyGroup = strings.TrimSpace(r.ConcurrencyGroup)
	job.ConcurrencyLimit = r.ConcurrencyLimit
	if r.CostUnitsSet {
		job.CostUnits = r.CostUnits
	}
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
