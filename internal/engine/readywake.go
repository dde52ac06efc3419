package engine

// Wake-ups for rows a commit makes claimable without inserting them: a
// freed concurrency group slot. (A job handed back, or retried at once,
// is noted where it is written; see Release and failAttempt.)

import (
	"context"

	"github.com/queuety/queuety-go/internal/jobnote"
)

// freedSlots notes, for an attempt recorded (completed, failed, buried or
// handed back), the concurrency group slot it frees: a job of the group
// that the limit held back may be claimable now. Which jobs those are is
// not read, so every idle worker is woken.
func freedSlots(ctx context.Context, r *Result) {
	if j := r.Claimed.Job; j.ConcurrencyGroup != "" {
		jobnote.Any(ctx)
	}
}

// completedJobs notes the group slots that the plain jobs completed by
// CompleteJobs free. (Jobs waiting on the completed ones through
// depends_on are found by the workers' polls: reading them after every
// completion cost a drain a tenth of its rate.)
func (e *Engine) completedJobs(ctx context.Context, results []*Result, errs []error) {
	for i, r := range results {
		if errs[i] == nil {
			freedSlots(ctx, r)
		}
	}
}
