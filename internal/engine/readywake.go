package engine

// Wake-ups for rows a commit makes claimable without inserting them: a
// freed concurrency group slot (by a worker's attempt, a stale recovery
// or a timeout). A job handed back, or retried at once, is noted where it
// is written (Release, failAttempt); the jobs that wait on a completed one
// (depends_on) in dependents.go.

import (
	"context"

	"github.com/queuety/queuety-go/internal/jobnote"
	"github.com/queuety/queuety-go/store/driver"
)

// freedSlots notes, for an attempt recorded (completed, failed, buried or
// handed back), the concurrency group slot it frees: a job of the group
// that the limit held back may be claimable now. Which jobs those are is
// not read, so every idle worker is woken.
func freedSlots(ctx context.Context, r *Result) { freedSlot(ctx, r.Claimed.Job) }

// freedSlot notes the concurrency group slot that job, leaving the
// processing status, frees.
func freedSlot(ctx context.Context, j *driver.Job) {
	if j.ConcurrencyGroup != "" {
		jobnote.Any(ctx)
	}
}

// NoteJobs returns ctx carrying a note of the jobs that the transactions
// run with it make claimable, and a function to call once they committed,
// which wakes idle workers for them (as a worker's own commits do). The
// sweeps run under it: stale recovery, and those of internal/sweep's
// batch and foreign (a resumed workflow's next step, a callback job).
func (e *Engine) NoteJobs(ctx context.Context) (context.Context, func()) { return e.noteJobs(ctx) }

// completedJobs notes the group slots that the plain jobs completed by
// CompleteJobs free. (The jobs waiting on the completed ones through
// depends_on are noted in the completion's transaction, when they may
// exist: see dependents.go.)
func (e *Engine) completedJobs(ctx context.Context, results []*Result, errs []error) {
	for i, r := range results {
		if errs[i] == nil {
			freedSlots(ctx, r)
		}
	}
}
