package engine

// Eager step handoff: a worker that records a batch of successful workflow
// steps can take the next steps' jobs at once. When a step's transition
// inserts the next step's job in the completion's transaction, and that
// job is one the worker would claim right away anyway, the job is
// inserted already claimed by the worker (processing, attempts 1,
// reserved_at now, a claim token, the attempt's deadlines armed): the
// row a claim would have produced, written without the claim's SELECT,
// UPDATE and workflow read. The worker starts the returned *Claimed like
// any claimed job; leases, fencing, stale recovery and the 'started' log
// row (written with the attempt's outcome) treat it as one.
//
// A job is handed off only when nothing a claim checks could have kept
// it from this worker: it is due now, has no dependency, concurrency
// group, extra cost units or rate limit, its queue is one the worker
// claims from and is not paused, its handler is the worker's, its
// workflow is running and within its deadlines, its step is a plain
// single step, and the worker has a free slot for it. Otherwise it is
// inserted pending as always.
//
// Branch jobs are handed off under the same rules, one a free slot: the
// jobs of a parallel step a transition enters, and the branch jobs a
// for-each placeholder's expansion inserts. Expansions are recorded in
// the for-each batches, which combine the workers of one process
// (combine.go): there each expansion's branches go to the worker whose
// batch held the placeholder, within that worker's offer. A for-each
// placeholder itself is never handed off.

import (
	"context"
	"slices"
	"time"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/steptrace"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// EagerOffer is what the worker recording a batch of step results can
// take at once.
type EagerOffer struct {
	// Slots is how many jobs the worker can start now (its free slots);
	// no more are handed off.
	Slots int
	// Queues are the queues the worker claims from.
	Queues []string
	// Handlers are the handler names the worker runs.
	Handlers []string
	// Admission is the worker's admission; a worker with limits
	// configured, or a handler with a learned rate limit, takes nothing.
	Admission *admission.Admission
}

// Handoffs returns how many jobs recording this attempt's success may
// hand off to its worker: a for-each placeholder's expansion as many as
// the step has items (unknown before: limit), a step followed by a
// parallel step one a branch, any other step one.
func (cj *Claimed) Handoffs(limit int) int {
	d := cj.flow.Def
	switch {
	case d == nil || !cj.IsStep():
		return 1
	case d.Type == queuetytype.StepForEach && cj.Job.Handler == HandlerForEach:
		return limit
	}
	if next := *cj.Job.StepIndex + 1; next < len(cj.flow.Steps) && cj.flow.Steps[next].Type == queuetytype.StepParallel {
		return max(len(cj.flow.Steps[next].Branches), 1)
	}
	return 1
}

// less returns the offer with n slots fewer (nil when none is left).
func (o *EagerOffer) less(n int) *EagerOffer {
	if o == nil || o.Slots <= n {
		return nil
	}
	c := *o
	c.Slots -= n
	return &c
}

// CompleteStepsEager is CompleteSteps, and returns the next steps' jobs
// and branch jobs it inserted already claimed for the worker that made
// offer (see the file comment). A nil offer or one without slots hands nothing off.
// The caller must start every returned job, or hand it back (Release).
func (e *Engine) CompleteStepsEager(ctx context.Context, results []*Result, offer *EagerOffer) ([]error, []*Claimed, error) {
	return e.completeSteps(ctx, results, offer)
}

// eagerFlow is the workflow a transition (or an expansion) left behind,
// shared by the candidates it queued.
type eagerFlow struct {
	wf    *driver.Workflow
	state *phpjson.Object
	steps []*stepDef
	// public is the encoded public state of state (the completed step's
	// state_after, the next step's state_before), or nil.
	public []byte
	// row and view are what the claims of the flow's jobs share: the
	// row as the transaction writes it and the public state handed to
	// handlers.
	row  *driver.Workflow
	view *publicState
}

// eagerCandidate is a job a transition queued, with the workflow it
// advanced.
type eagerCandidate struct {
	flow *eagerFlow
	job  *driver.Job
	// payload is the tree job.Payload decodes to, when the transition
	// knew it (advance.Writes.PayloadDoc), else nil.
	payload *phpjson.Object
}

// eagerPicker collects the candidates of one completion transaction.
type eagerPicker struct {
	offer *EagerOffer
	cands []eagerCandidate
}

func newEagerPicker(offer *EagerOffer) *eagerPicker {
	if offer == nil || offer.Slots <= 0 || !offer.Admission.AllowsEager() {
		return nil
	}
	return &eagerPicker{offer: offer}
}

// note records the jobs one transition of wf queued, leaving wf with
// state (public encoded, or nil): the single job of a plain single
// step, and the branch jobs of a parallel or for-each step, of a
// running workflow are candidates, as long as the worker has slots for
// them. payloadDoc returns a job's known payload tree, or nil.
func (p *eagerPicker) note(wf *driver.Workflow, state *phpjson.Object, steps []*stepDef, public []byte, jobs []*driver.Job, payloadDoc func(*driver.Job) *phpjson.Object) {
	if p == nil || len(jobs) == 0 || wf.Status != driver.WorkflowRunning || wf.CurrentStep >= len(steps) {
		return
	}
	switch steps[wf.CurrentStep].Type {
	case queuetytype.StepSingle:
		if len(jobs) != 1 {
			return
		}
	case queuetytype.StepParallel, queuetytype.StepForEach:
	default:
		return
	}
	shared := &eagerFlow{wf: wf, state: state, steps: steps, public: public}
	for _, j := range jobs {
		if len(p.cands) >= p.offer.Slots {
			return
		}
		if j.StepIndex == nil || *j.StepIndex != wf.CurrentStep || j.Handler == HandlerForEach {
			continue
		}
		if j.DependsOn != 0 || j.ConcurrencyGroup != "" || j.ConcurrencyLimit > 0 || j.CostUnits > 1 || j.Status != driver.JobPending ||
			!slices.Contains(p.offer.Queues, j.Queue) || !slices.Contains(p.offer.Handlers, j.Handler) {
			continue
		}
		p.cands = append(p.cands, eagerCandidate{flow: shared, job: j, payload: payloadDoc(j)})
	}
}

// claim marks the candidates that can run now as claimed by this
// worker, before they are inserted, and returns their claims; their ids
// are set by the insert.
func (p *eagerPicker) claim(ctx context.Context, tx driver.Tx, now time.Time) ([]*Claimed, error) {
	if p == nil || len(p.cands) == 0 {
		return nil, nil
	}
	var out []*Claimed
	var paused map[string]bool
	token := newClaimToken()
	for _, c := range p.cands {
		j, f := c.job, c.flow
		if j.AvailableAt.After(now) || workflowExpired(f.wf, now) != "" || p.offer.Admission.LearnedRate(j.Handler) {
			continue
		}
		if kind, _ := claimTimeout(j, now); kind != "" {
			continue
		}
		doc := c.payload
		if doc == nil {
			var err error
			if doc, err = decodePayload(j.Payload); err != nil {
				continue
			}
		}
		rt := jobruntime.Parse(doc)
		if rt.RateLimit.Max > 0 {
			continue
		}
		if paused == nil {
			var err error
			if paused, err = pausedQueues(ctx, tx); err != nil {
				return nil, err
			}
		}
		if paused[j.Queue] {
			continue
		}
		// What JobClaim and armAttempt would have written.
		cj := &Claimed{Job: j, ClaimedAt: now, prevS2S: j.ScheduleToStartAt, trace: steptrace.New(), payload: doc, runtime: rt}
		j.Status = driver.JobProcessing
		j.Attempts = 1
		j.ReservedAt = now.UTC().Truncate(time.Second)
		j.ClaimToken = token + 1
		j.ScheduleToStartAt = time.Time{}
		if stc := rt.StartToClose(); stc > 0 {
			j.StartToCloseAt = now.Add(stc)
		}
		if hb := rt.Timeouts.Heartbeat; hb > 0 {
			j.HeartbeatDeadline = now.Add(hb)
		}
		if f.row == nil {
			wf := *f.wf // the row as this transaction writes it
			f.row, f.view = &wf, &publicState{}
		}
		cj.flow.Workflow, cj.flow.State, cj.flow.Steps, cj.flow.Def = f.row, f.state, f.steps, f.steps[*j.StepIndex]
		cj.flow.PublicJSON = f.public
		// The jobs of one workflow share its public state, as those of
		// one claim do.
		cj.public = f.view
		f.view.users++
		out = append(out, cj)
	}
	return out, nil
}

// pausedQueues reads the paused queues (queue_states) in tx.
func pausedQueues(ctx context.Context, tx driver.Tx) (map[string]bool, error) {
	states, err := tx.QueueStates(ctx)
	if err != nil {
		return nil, err
	}
	paused := make(map[string]bool, len(states))
	for _, s := range states {
		if s.Paused {
			paused[s.Queue] = true
		}
	}
	return paused, nil
}
