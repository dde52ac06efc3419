package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// benchClaimAdmission measures one engine claim of 100 jobs, timed alone
// (the dispatch before and the completion after are not), in four
// variants whose limits never bind, so the differences are what checking
// them costs:
//
//   - Plain: no Admission (direct engine callers);
//   - NoLimits: a worker's Admission with nothing configured, on jobs
//     without limits (every worker claims this way);
//   - Grouped: jobs in one concurrency group with a row limit of 60,000
//     (a claim locks the group's row and counts its processing jobs);
//   - RateLimited: a limit of 10,000,000 starts per second on the
//     handler (a claim locks the handler's row, counts the window and
//     records each start).
func benchClaimAdmission(b *testing.B, h Harness) {
	for _, v := range []struct {
		name string
		opts []queuety.JobOption
		adm  func() *admission.Admission
	}{
		{"Plain", nil, func() *admission.Admission { return nil }},
		{"NoLimits", nil, func() *admission.Admission { return engine.NewAdmission(admission.Limits{}, nil) }},
		{"Grouped", []queuety.JobOption{queuety.ConcurrencyGroup("bench"), queuety.ConcurrencyLimit(60000)},
			func() *admission.Admission { return engine.NewAdmission(admission.Limits{}, nil) }},
		{"RateLimited", nil, func() *admission.Admission {
			return engine.NewAdmission(admission.Limits{Rates: map[string]engine.Rate{"claim": {Max: 10_000_000, Window: time.Second}}}, nil)
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := queuety.Open(ctx, h.DSN(b), queuety.WithLogger(quietLogger()))
			require.NoError(b, err)
			b.Cleanup(func() { c.Close() })
			eng, adm := clientseam.Engine(c), v.adm()
			reqs := make([]queuety.JobRequest, benchBatch)
			for i := range reqs {
				reqs[i] = queuety.JobRequest{Handler: "claim", Payload: queuety.State{"i": i}, Options: v.opts}
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				_, err := c.DispatchMany(ctx, reqs)
				require.NoError(b, err, "dispatch")
				b.StartTimer()
				claimed, err := eng.Claim(ctx, engine.ClaimRequest{Queues: []string{queuetytype.DefaultQueue}, Handlers: []string{"claim"},
					Limit: benchBatch, Admission: adm})
				b.StopTimer()
				require.NoError(b, err, "claim")
				require.Len(b, claimed, benchBatch, "jobs claimed")
				results := make([]*engine.Result, len(claimed))
				for i, cj := range claimed {
					results[i] = &engine.Result{Claimed: cj, StartedAt: time.Now()}
				}
				_, err = eng.CompleteJobs(ctx, results)
				require.NoError(b, err, "complete")
				b.StartTimer()
			}
			b.StopTimer()
			reportRate(b, b.N*benchBatch, "jobs", "job")
			require.Equal(b, map[driver.JobStatus]int64{driver.JobCompleted: int64(b.N * benchBatch)}, countJobs(b, ctx, clientseam.StoreOf(c)),
				"jobs dispatched, claimed and completed")
		})
	}
}
