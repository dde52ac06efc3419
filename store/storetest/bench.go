package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// benchBatch is how many jobs one operation of the job benchmarks
// inserts, claims or dispatches.
const benchBatch = 100

// Bench runs the twin benchmarks every store runs, so the stores can be
// compared operation by operation:
//
//   - JobInsert: one JobInsert of 100 jobs per operation;
//   - JobClaimComplete: from a backlog, one JobClaim of 100 jobs and one
//     JobCompleteClaimed of them per operation (two transactions);
//   - WorkflowInsertUpdate: one WorkflowInsert and one WorkflowUpdate
//     (read under lock, then written) per operation;
//   - EngineRound: a full engine round through a queuety.Client:
//     DispatchMany of 100 jobs, a claim of them and CompleteJobs;
//   - ClaimAdmission: one engine claim of 100 jobs without limits, in a
//     concurrency group, and under a rate limit (see benchClaimAdmission).
//
// Each benchmark runs on a fresh database, checks that every operation
// did its work (so -benchtime 1x is a quick correctness run), and reports
// ns/op and its throughput (jobs/s or workflows/s) with the time per job
// or workflow.
func Bench(b *testing.B, h Harness) {
	b.Run("JobInsert", func(b *testing.B) { benchJobInsert(b, h) })
	b.Run("JobClaimComplete", func(b *testing.B) { benchJobClaimComplete(b, h) })
	b.Run("WorkflowInsertUpdate", func(b *testing.B) { benchWorkflowInsertUpdate(b, h) })
	b.Run("EngineRound", func(b *testing.B) { benchEngineRound(b, h) })
	b.Run("ClaimAdmission", func(b *testing.B) { benchClaimAdmission(b, h) })
}

// reportRate reports n items of work done in the timed part of b as
// <items>/s and ns/<item> ("jobs/s" and "ns/job").
func reportRate(b *testing.B, n int, items, item string) {
	elapsed := b.Elapsed()
	if elapsed <= 0 || n == 0 {
		return
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), items+"/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/"+item)
}

// benchJobs returns n new pending jobs of handler h, due at due.
func benchJobs(n int, h string, due time.Time) []*driver.Job {
	jobs := make([]*driver.Job, n)
	for i := range jobs {
		jobs[i] = newJob(driver.DefaultQueue, h)
		jobs[i].AvailableAt, jobs[i].CreatedAt = due, due
		jobs[i].Payload = []byte(`{"n":1}`)
	}
	return jobs
}

// countJobs returns the number of jobs per status.
func countJobs(b *testing.B, ctx context.Context, s driver.Store) map[driver.JobStatus]int64 {
	b.Helper()
	out := map[driver.JobStatus]int64{}
	require.NoError(b, s.InTx(ctx, func(tx driver.Tx) error {
		counts, err := tx.JobCounts(ctx)
		clear(out)
		for _, c := range counts {
			out[c.Status] += c.Count
		}
		return err
	}))
	return out
}

func benchJobInsert(b *testing.B, h Harness) {
	ctx := context.Background()
	s := openStore(b, ctx, h.DSN(b))
	now := time.Now().UTC()
	b.ResetTimer()
	for range b.N {
		jobs := benchJobs(benchBatch, "insert", now)
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) error { return tx.JobInsert(ctx, jobs) }))
		require.NotZero(b, jobs[benchBatch-1].ID, "id of the last job of the batch")
	}
	b.StopTimer()
	reportRate(b, b.N*benchBatch, "jobs", "job")
	require.Equal(b, map[driver.JobStatus]int64{driver.JobPending: int64(b.N * benchBatch)}, countJobs(b, ctx, s), "jobs inserted")
}

func benchJobClaimComplete(b *testing.B, h Harness) {
	ctx := context.Background()
	s := openStore(b, ctx, h.DSN(b))
	now := time.Now().UTC()
	backlog := b.N * benchBatch
	for left := backlog; left > 0; left -= 1000 {
		jobs := benchJobs(min(left, 1000), "claim", now.Add(-time.Minute))
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) error { return tx.JobInsert(ctx, jobs) }))
	}
	b.ResetTimer()
	for i := range b.N {
		p := driver.ClaimParams{Queue: driver.DefaultQueue, Handlers: []string{"claim"}, Limit: benchBatch, Now: now, Token: int64(i+1) << 8}
		var claimed []*driver.Job
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) (err error) {
			claimed, err = tx.JobClaim(ctx, p)
			return err
		}))
		require.Len(b, claimed, benchBatch, "jobs claimed")
		var done int64
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) (err error) {
			// Each claimed row's token is the claim's base token plus
			// its attempt (driver.ClaimParams.Token).
			done, err = tx.JobCompleteClaimed(ctx, jobIDs(claimed), claimed[0].ClaimToken, claimed[0].Attempts, now)
			return err
		}))
		require.Equal(b, int64(benchBatch), done, "jobs completed")
	}
	b.StopTimer()
	reportRate(b, backlog, "jobs", "job")
	require.Equal(b, map[driver.JobStatus]int64{driver.JobCompleted: int64(backlog)}, countJobs(b, ctx, s), "jobs claimed and completed")
}

func benchWorkflowInsertUpdate(b *testing.B, h Harness) {
	ctx := context.Background()
	s := openStore(b, ctx, h.DSN(b))
	now := time.Now().UTC()
	state := []byte(`{"order_id":42,"_steps":[{"type":"single","name":"0","class":"a"},{"type":"single","name":"1","class":"b"}],"_queue":"default","_priority":0,"_max_attempts":3}`)
	b.ResetTimer()
	for range b.N {
		wf := &driver.Workflow{Name: "bench", Status: driver.WorkflowRunning, State: state, TotalSteps: 2, StartedAt: now,
			RunNumber: 1, RunStartedAt: now, RunDeadlineAt: now.Add(time.Hour)}
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) error { return tx.WorkflowInsert(ctx, wf) }))
		require.NotZero(b, wf.ID, "workflow id")
		require.NoError(b, s.InTx(ctx, func(tx driver.Tx) error {
			row, err := tx.WorkflowGet(ctx, wf.ID, driver.LockUpdate)
			if err != nil {
				return err
			}
			row.CurrentStep, row.Status, row.CompletedAt, row.RunDeadlineAt = 2, driver.WorkflowCompleted, now, time.Time{}
			return tx.WorkflowUpdate(ctx, row)
		}))
	}
	b.StopTimer()
	reportRate(b, b.N, "workflows", "workflow")
	var counts map[driver.WorkflowStatus]int64
	require.NoError(b, s.InTx(ctx, func(tx driver.Tx) (err error) {
		counts, err = tx.WorkflowCounts(ctx)
		return err
	}))
	require.Equal(b, map[driver.WorkflowStatus]int64{driver.WorkflowCompleted: int64(b.N)}, counts, "workflows inserted and completed")
}

func benchEngineRound(b *testing.B, h Harness) {
	ctx := context.Background()
	c, err := queuety.Open(ctx, h.DSN(b), queuety.WithLogger(quietLogger()))
	require.NoError(b, err)
	b.Cleanup(func() { c.Close() })
	eng := clientseam.Engine(c)
	reqs := make([]queuety.JobRequest, benchBatch)
	for i := range reqs {
		reqs[i] = queuety.JobRequest{Handler: "round", Payload: queuety.State{"i": i}}
	}
	b.ResetTimer()
	for range b.N {
		ids, err := c.DispatchMany(ctx, reqs)
		require.NoError(b, err, "dispatch")
		require.Len(b, ids, benchBatch, "jobs dispatched")
		claimed, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"round"}, Limit: benchBatch})
		require.NoError(b, err, "claim")
		require.Len(b, claimed, benchBatch, "jobs claimed")
		results := make([]*engine.Result, len(claimed))
		for i, cj := range claimed {
			results[i] = &engine.Result{Claimed: cj, StartedAt: time.Now()}
		}
		errs, err := eng.CompleteJobs(ctx, results)
		require.NoError(b, err, "complete")
		for _, err := range errs {
			require.NoError(b, err, "complete a job")
		}
	}
	b.StopTimer()
	reportRate(b, b.N*benchBatch, "jobs", "job")
	require.Equal(b, map[driver.JobStatus]int64{driver.JobCompleted: int64(b.N * benchBatch)}, countJobs(b, ctx, clientseam.StoreOf(c)),
		"jobs dispatched, claimed and completed")
}
