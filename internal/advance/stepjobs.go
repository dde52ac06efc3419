package advance

import (
	"context"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// EnqueueStep writes the job(s) of step idx.
func (s *Service) EnqueueStep(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) error {
	return tx.JobInsert(ctx, s.stepJobs(wf, state, steps, idx, now))
}

// stepJobs builds the job(s) of step idx, as Queuety's enqueue_step_def
// does: the step's handler (one job per parallel branch) or its internal
// placeholder, with the options resolved from the step definition and the
// workflow's defaults, and __queuety_runtime in the payload.
func (s *Service) stepJobs(wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) []*driver.Job {
	jobs, _ := s.stepJobsDoc(wf, state, steps, idx, now)
	return jobs
}

// stepJobsDoc is stepJobs, and returns the decoded payload of the single
// job of a single step (nil for any other step): the tree its Payload
// encodes.
func (s *Service) stepJobsDoc(wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, idx int, now time.Time) ([]*driver.Job, *phpjson.Object) {
	step := steps[idx]
	var jobs []*driver.Job
	switch step.Type {
	case queuetytype.StepParallel:
		for _, b := range step.Branches {
			def := mergeBranch(step.Raw, b)
			jobs = append(jobs, s.stepJob(wf, state, def, strField(def, "class"), workflowstate.ObjectField(def, "payload"), idx, 1, now, -1))
		}
	case queuetytype.StepSingle:
		j, doc := s.stepJobWithDoc(wf, state, step.Raw, step.Class, workflowstate.ObjectField(step.Raw, "payload"), idx, 1, now, -1)
		return []*driver.Job{j}, doc
	default:
		p := phpjson.NewObject()
		p.Set(stepIndexKey, int64(idx))
		delay := int64(-1)
		if step.Type == queuetytype.StepDelay {
			delay = max(step.Delay, 0)
		}
		jobs = append(jobs, s.stepJob(wf, state, step.Raw, workflowdef.PlaceholderHandler(step.Type), p, idx, 0, now, delay))
	}
	return jobs, nil
}

// stepJob resolves one step job row (Queuety's StepDispatchOptions): step
// options first, then the workflow's _queue, _priority and _max_attempts.
func (s *Service) stepJob(wf *driver.Workflow, state, def *phpjson.Object, handler string, payload *phpjson.Object, idx, defaultCost int, now time.Time, delaySeconds int64) *driver.Job {
	j, _ := s.stepJobWithDoc(wf, state, def, handler, payload, idx, defaultCost, now, delaySeconds)
	return j
}

// stepJobWithDoc is stepJob, and returns the payload tree the job's
// Payload encodes.
func (s *Service) stepJobWithDoc(wf *driver.Workflow, state, def *phpjson.Object, handler string, payload *phpjson.Object, idx, defaultCost int, now time.Time, delaySeconds int64) (*driver.Job, *phpjson.Object) {
	m := s.stepJobMaker(wf, state, def, handler, idx, defaultCost, now, delaySeconds)
	return m.job(payload.Clone())
}

// jobMaker builds the jobs of one step that differ only in their payload
// (a for-each step's branches): what the step's definition and the
// workflow's state decide, the runtime entry of the payload included, is
// worked out once.
type jobMaker struct {
	proto   driver.Job // Payload and StepIndex unset
	runtime any        // the payload's __queuety_runtime, shared read-only
	idx     int
}

// stepJobMaker resolves what stepJob resolves but the payload.
func (s *Service) stepJobMaker(wf *driver.Workflow, state, def *phpjson.Object, handler string, idx, defaultCost int, now time.Time, delaySeconds int64) *jobMaker {
	queue := strField(def, "queue")
	if queue == "" {
		queue = workflowstate.Queue(state)
	}
	prio := workflowstate.Priority(state)
	if p, ok := workflowstate.PriorityField(def); ok {
		prio = p
	}
	maxAttempts := int(intValue(def, "max_attempts"))
	if maxAttempts <= 0 {
		maxAttempts = workflowstate.MaxAttempts(state)
	}
	maxAttempts = min(max(maxAttempts, 1), queuetytype.MaxAttemptsLimit)
	rtDef := jobruntime.FromDefinition(def)
	rtDef.MaxAttempts = maxAttempts
	res := stepResources(def, defaultCost)
	var delay time.Duration
	if delaySeconds >= 0 {
		delay = time.Duration(delaySeconds) * time.Second
	} else {
		for _, k := range []string{"job_delay_seconds", "job_delay", "delay"} {
			if n := intValue(def, k); n > 0 {
				delay = time.Duration(n) * time.Second
				break
			}
		}
	}
	m := &jobMaker{idx: idx, runtime: rtDef.Encode(), proto: driver.Job{
		Queue: queue, Handler: handler, Priority: prio, Status: driver.JobPending,
		MaxAttempts: maxAttempts, AvailableAt: rowtime.Due(now, delay), WorkflowID: wf.ID,
		CostUnits: res.cost, ConcurrencyGroup: res.group, ConcurrencyLimit: res.limit, CreatedAt: rowtime.Floor(now),
	}}
	s.core.ScheduleDeadlines(&m.proto, rtDef.Timeouts, now)
	return m
}

// job returns the job whose payload is doc (which it takes over) with the
// runtime entry set, and doc.
func (m *jobMaker) job(doc *phpjson.Object) (*driver.Job, *phpjson.Object) {
	doc.Set(runtimeKey, m.runtime)
	j := m.proto
	j.Payload = workflowstate.EncodeJSON(doc)
	j.StepIndex = ptr(m.idx)
	return &j, doc
}

func mergeBranch(parent, branch *phpjson.Object) *phpjson.Object {
	out := phpjson.NewObject()
	for _, k := range parent.Keys() {
		if k == "branches" || k == "handlers" || k == "type" {
			continue
		}
		v, _ := parent.Get(k)
		out.Set(k, v)
	}
	for _, k := range branch.Keys() {
		v, _ := branch.Get(k)
		out.Set(k, v)
	}
	return out
}

// resources are a step job's concurrency group, its limit and its cost
// units.
type resources struct {
	group string
	limit int
	cost  int
}

// stepResources reads a step definition's concurrency_group,
// concurrency_limit and cost_units, on the step or in its resources
// object, as Queuety's StepDispatchOptions::resolve does: a blank group is
// none, and a limit without a group is dropped.
func stepResources(def *phpjson.Object, defaultCost int) resources {
	res, _ := mustObject(def, "resources")
	get := func(k string) any {
		if v, ok := def.Get(k); ok && v != nil {
			return v
		}
		if res != nil {
			if v, ok := res.Get(k); ok {
				return v
			}
		}
		return nil
	}
	r := resources{cost: defaultCost}
	if g, ok := get("concurrency_group").(string); ok {
		r.group = strings.TrimSpace(g)
	}
	if n, ok := get("concurrency_limit").(int64); ok && n > 0 && r.group != "" {
		r.limit = int(min(n, 65535))
	}
	if n, ok := get("cost_units").(int64); ok && n >= 0 {
		r.cost = int(n)
	}
	return r
}
