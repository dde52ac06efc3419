package engine

import (
	"bytes"
	"context"
	"time"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// This file wires the claim to package admission, which holds rate
// limits, concurrency groups and cost budgets. The engine passes it what
// is its own: how a job's runtime options carry a rate limit.

// NewAdmission returns the admission of one worker (see admission.New),
// reading the rate limits claimed jobs carry in __queuety_runtime.
// running reports the cost units of the jobs the worker runs (nil when it
// has no cost budget).
func NewAdmission(l admission.Limits, running func() int) *admission.Admission {
	return admission.New(l, running, runtimeRate)
}

// runtimeRate reads the rate_limit a job's __queuety_runtime carries
// ([max, window seconds], as Queuety's StepDispatchOptions writes it).
func runtimeRate(payload []byte) (Rate, bool) {
	if !bytes.Contains(payload, []byte(`"rate_limit"`)) {
		return Rate{}, false
	}
	doc, err := workflowstate.DecodeObject("payload", payload)
	if err != nil {
		return Rate{}, false
	}
	rt := jobruntime.Parse(doc)
	if rt.RateLimit.Max <= 0 || rt.RateLimit.Window <= 0 {
		return Rate{}, false
	}
	return rt.RateLimit, true
}

// HasDueAdmitted reports whether a claim with adm would find a job:
// HasDue without the handlers whose window is full and the groups that are
// saturated.
func (e *Engine) HasDueAdmitted(ctx context.Context, queues, handlers []string, adm *admission.Admission) (bool, error) {
	if adm == nil {
		return e.HasDue(ctx, queues, handlers)
	}
	var due bool
	err := e.store.InTx(ctx, func(tx driver.Tx) error {
		var err error
		due, err = adm.HasDue(ctx, tx, queues, handlers, e.clock.Now())
		return err
	})
	if err != nil {
		return false, wrap("check due jobs", err)
	}
	return due, nil
}

// claimJobs claims the rows of one Claim transaction: with an Admission,
// within its limits; without, queue by queue as they come.
func (e *Engine) claimJobs(ctx context.Context, tx driver.Tx, req ClaimRequest, now time.Time, token int64) ([]*driver.Job, error) {
	if req.Admission == nil {
		var jobs []*driver.Job
		for _, q := range req.Queues {
			got, err := tx.JobClaim(ctx, driver.ClaimParams{Queue: q, Handlers: req.Handlers, Limit: req.Limit - len(jobs), Now: now, Token: token, IDs: req.ids})
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, got...)
			if len(jobs) >= req.Limit {
				break
			}
		}
		return jobs, nil
	}
	return req.Admission.Claim(ctx, tx, admission.Request{Queues: req.Queues, Handlers: req.Handlers, Limit: req.Limit}, now, token)
}
