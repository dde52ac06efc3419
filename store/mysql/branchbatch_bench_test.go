package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// BenchmarkBranchBatch runs 10 workflows, each a for_each over 10 items,
// as a worker does: claims of up to 50 jobs, each branch's output built
// from its item and state, the batch recorded with CompleteStepsEager.
// It reports the worker's allocations and CPU time per branch.
// Dispatching the workflows is not timed.
func BenchmarkBranchBatch(b *testing.B) {
	ctx := context.Background()
	c, e := batchBenchClient(b)
	const n, items, limit = 10, 10, 50
	def := queuety.WorkflowDefinition{Name: "bench_fan_out", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepForEach, ItemsKey: "items", Handler: "item", ResultKey: "results"},
	}}
	list := make([]any, items)
	for i := range list {
		list[i] = i
	}
	queues, handlers := []string{driver.DefaultQueue}, append([]string{"item"}, engine.InternalHandlers()...)
	run := func(claimed []*engine.Claimed) (int, []*engine.Claimed) {
		results := make([]*engine.Result, len(claimed))
		branches := 0
		for i, cj := range claimed {
			var out engine.State
			if item, _, ok := cj.ForEachItem(); ok {
				branches++
				st := cj.State()
				out = engine.State{"done": item, "keys": len(st)}
			}
			results[i] = &engine.Result{Claimed: cj, Output: out, StartedAt: time.Now()}
		}
		return branches, completeEager(b, e, results, &engine.EagerOffer{Slots: limit, Queues: queues, Handlers: handlers})
	}
	b.ReportAllocs()
	branches := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		for range n {
			if _, err := c.DispatchWorkflow(ctx, def, queuety.State{"items": list}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := processCPU()
		for done := 0; done < n*items; {
			claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: queues, Handlers: handlers, Limit: limit})
			if err != nil {
				b.Fatal(err)
			}
			if len(claimed) == 0 {
				b.Fatalf("nothing to claim after %d of %d branches", done, n*items)
			}
			for len(claimed) > 0 {
				k, handed := run(claimed)
				done += k
				claimed = handed
			}
		}
		branches += n * items
		cpu += processCPU() - start
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(branches)/1000, "µs/branch")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(branches)/1000, "cpu-µs/branch")
}
