package mysql_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// BenchmarkStepBatchHandoff records batches of completed steps of
// 3-step workflows as a worker does, each completion handing the next
// steps off at once (CompleteStepsEager), and reports the worker's
// allocations and CPU time per step. Dispatching the workflows is not
// timed.
func BenchmarkStepBatchHandoff(b *testing.B) {
	ctx := context.Background()
	c, e := batchBenchClient(b)
	const n = 50
	def := queuety.WorkflowDefinition{Name: "bench", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"}, {Type: queuetytype.StepSingle, Handler: "s"},
	}}
	queues, handlers := []string{driver.DefaultQueue}, []string{"s"}
	run := func(claimed []*engine.Claimed) []*engine.Claimed {
		results := make([]*engine.Result, len(claimed))
		for i, cj := range claimed {
			st := cj.State()
			results[i] = &engine.Result{Claimed: cj, Output: engine.State{"marked": len(st)}, StartedAt: time.Now()}
		}
		return completeEager(b, e, results, &engine.EagerOffer{Slots: n, Queues: queues, Handlers: handlers})
	}
	b.ReportAllocs()
	steps := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		for i := range n {
			if _, err := c.DispatchWorkflow(ctx, def, queuety.State{"n": i, "name": "abc"}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := processCPU()
		claimed, err := e.Claim(ctx, engine.ClaimRequest{Queues: queues, Handlers: handlers, Limit: n})
		if err != nil || len(claimed) != n {
			b.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
		}
		for len(claimed) > 0 {
			steps += len(claimed)
			claimed = run(claimed)
		}
		cpu += processCPU() - start
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps)/1000, "µs/step")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(steps)/1000, "cpu-µs/step")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}

// batchBenchClient opens a client on a migrated database for a batch
// benchmark, without wake-ups, closed when b ends, and its engine.
func batchBenchClient(b *testing.B) (*queuety.Client, *engine.Engine) {
	dsn, _ := migrated.DSN(b)
	c, err := queuety.Open(context.Background(), dsn+"&wake=false", queuety.WithLogger(quiet()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c, clientseam.Engine(c)
}

// completeEager records results with CompleteStepsEager, failing b on
// any error, and returns the jobs it handed off.
func completeEager(b *testing.B, e *engine.Engine, results []*engine.Result, offer *engine.EagerOffer) []*engine.Claimed {
	errs, handed, err := e.CompleteStepsEager(context.Background(), results, offer)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return handed
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
