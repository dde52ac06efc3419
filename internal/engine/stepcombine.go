package engine

import (
	"context"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// maxCombinedSteps caps the step results one combined step transaction
// records (a turn always takes its first batch, whatever its size).
const maxCombinedSteps = 1000

// stepCombiner combines the batches of single and delay step completions
// (completeStepBatch) that the workers of one engine record at the same
// time: the batches queued while one transaction runs go into the next
// one, as plain-job completions do (combine.go). A workflow's steps run
// one at a time, so the batches of several workers advance different
// workflows; a workflow that shows up twice sends the transaction to the
// locked path, which records it once and leaves the other result to
// Finish, as within one worker's batch. The next steps' jobs are handed
// off (eager.go) to the worker whose result queued them, within that
// worker's offer: each worker gets back only jobs handed to it, never
// more than its free slots. A transaction that fails, or that finds an
// attempt no longer owning its job, fails or leaves to Finish every
// batch it combined, as it does a single batch.
type stepCombiner struct {
	c combiner[stepRequest, stepResponse]
}

// stepRequest is one worker's batch: results[i] and outputs[i] for each i
// in batch, and the worker's offer (nil: it takes nothing).
type stepRequest struct {
	results []*Result
	outputs []*phpjson.Object
	batch   []int
	offer   *EagerOffer
}

// stepResponse is what one worker's batch got back: the indexes (into its
// results) left for Finish, and the jobs handed off to it.
type stepResponse struct {
	individual []int
	handed     []*Claimed
}

// takeSteps is the take of combined step batches: the first, then those
// after it while their sizes add up to at most maxCombinedSteps.
func takeSteps(ts []*turn[stepRequest, stepResponse]) int {
	n, total := 0, 0
	for _, t := range ts {
		if n > 0 && total+len(t.req.batch) > maxCombinedSteps {
			break
		}
		n, total = n+1, total+len(t.req.batch)
	}
	return n
}

// complete records req's batch, in one transaction with the batches of
// the engine's other workers queued meanwhile.
func (sc *stepCombiner) complete(ctx context.Context, e *Engine, req stepRequest) ([]int, []*Claimed, error) {
	res, err := sc.c.do("", req, takeSteps, func(ts []*turn[stepRequest, stepResponse]) {
		if len(ts) == 1 {
			r := ts[0].req
			individual, handed, err := e.completeStepBatch(ctx, r.results, r.outputs, r.batch, oneOffer(r.offer))
			ts[0].err, ts[0].res = err, stepResponse{individual: individual}
			if err == nil && len(handed) > 0 {
				ts[0].res.handed = handed[0]
			}
			return
		}
		// One batch of every turn's results: flat[j] is results[orig[j]]
		// of turn owner[j].
		var flat []*Result
		var outs []*phpjson.Object
		var orig, owner []int
		offers := make([]*EagerOffer, len(ts))
		for k, t := range ts {
			offers[k] = t.req.offer
			for _, i := range t.req.batch {
				flat = append(flat, t.req.results[i])
				outs = append(outs, t.req.outputs[i])
				orig, owner = append(orig, i), append(owner, k)
			}
		}
		batch := make([]int, len(flat))
		for j := range batch {
			batch[j] = j
		}
		individual, handed, err := e.completeStepBatch(ctx, flat, outs, batch, stepOffers{offers: offers, owner: owner})
		for k, t := range ts {
			t.err, t.res = err, stepResponse{}
			if err == nil && k < len(handed) {
				t.res.handed = handed[k]
			}
		}
		if err != nil {
			return
		}
		for _, j := range individual {
			t := ts[owner[j]]
			t.res.individual = append(t.res.individual, orig[j])
		}
	})
	return res.individual, res.handed, err
}
