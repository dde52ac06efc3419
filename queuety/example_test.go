package queuety_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/sweep"

	"github.com/queuety/queuety-go/deadline"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Dispatch a job and run it with a worker, on the embedded store.
func ExampleClient_Dispatch() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	if err != nil {
		panic(err)
	}
	defer q.Close()

	id, err := q.Dispatch(ctx, "send_email", queuety.State{"to": "ana@example.com"},
		queuety.OnQueue("mail"), queuety.Retry(5, queuety.BackoffSeconds(10, 60)))
	if err != nil {
		panic(err)
	}

	w := worker.New(q, worker.Queues("mail"), worker.WithLogger(quiet()))
	w.HandleJob("send_email", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("sending to", p.String("to"))
		return nil
	})
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		panic(err)
	}
	job, _ := q.Job(ctx, id)
	fmt.Println(job.Status, job.Attempts)
	// Output:
	// sending to ana@example.com
	// completed 1
}

// A workflow whose deadline passes fails with "Deadline exceeded", and its
// OnDeadline callback receives the public state. A fake clock stands in for
// the hour.
func ExampleClient_DispatchWorkflow() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()

	id, err := q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{
		Name:             "invoice_collection",
		Steps:            []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "send_invoice"}},
		ExecutionTimeout: time.Hour,
		OnDeadline:       "escalate",
	}, queuety.State{"customer_id": 501})
	if err != nil {
		panic(err)
	}

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleDeadline("escalate", func(ctx context.Context, s queuety.State) error {
		fmt.Println("escalating customer", s["customer_id"])
		return nil
	})
	clock.Advance(2 * time.Hour) // nobody ran the step in time
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		panic(err)
	}
	wf, _ := q.Workflow(ctx, id)
	fmt.Println(wf.Status, wf.ErrorMessage)
	// Output:
	// escalating customer 501
	// failed Deadline exceeded
}

// NonRetryable makes a failure final: the job is buried at once.
func ExampleNonRetryable() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := q.Dispatch(ctx, "charge_card", nil, queuety.MaxAttempts(5))

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("charge_card", func(ctx context.Context, p queuety.Payload) error {
		return queuety.NonRetryable(errors.New("card number is invalid"))
	})
	_, _ = w.RunOnce(ctx, time.Minute)
	job, _ := q.Job(ctx, id)
	fmt.Println(job.Status, job.Attempts, job.ErrorMessage)
	// Output: buried 1 card number is invalid
}

// A recurring job: every day at 03:00 UTC, skipped while the previous run
// is still going.
func ExampleClient_Schedule() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()

	id, err := q.Schedule("cleanup_sessions", queuety.State{"older_than_days": 30}).
		Cron("0 3 * * *").Overlap(driver.OverlapSkip).Save(ctx)
	if err != nil {
		panic(err)
	}
	s, _ := q.ScheduleByID(ctx, id)
	fmt.Println("next run:", s.NextRun.Format(time.RFC3339))

	clock.Advance(16 * time.Hour) // 04:00 the next day
	tick, _ := sweep.TickSchedules(ctx, clientseam.Engine(q), 100)
	fmt.Println("fired:", tick.Fired)
	// Output:
	// next run: 2030-01-02T03:00:00Z
	// fired: 1
}

// A step can restart its workflow with fresh state; the execution deadline
// carries over and the run number goes up.
func ExampleContinueAsNew() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{
		Name:  "paginate",
		Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "page"}},
	}, queuety.State{"cursor": 0})

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleStep("page", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		cursor, _ := s.Int("cursor")
		if cursor < 2 {
			return nil, queuety.ContinueAsNew(queuety.State{"cursor": cursor + 1})
		}
		return queuety.State{"done": true}, nil
	})
	_, _ = w.RunOnce(ctx, time.Minute)
	wf, _ := q.Workflow(ctx, id)
	state, _ := q.State(ctx, id)
	fmt.Println(wf.Status, "run", wf.RunNumber, state)
	// Output: completed run 3 map[cursor:2 done:true]
}

// The sweeps are safe to run from any number of processes; RunAll runs
// each once (what `queuety-worker work --once` does before draining).
func Example_sweeps() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()
	for range 3 {
		_, _ = q.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "report", ExecutionTimeout: time.Minute,
			Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "build"}}}, nil)
	}
	clock.Advance(time.Hour)
	report, err := deadline.New(q).RunAll(ctx)
	fmt.Println(report.WorkflowsExpired, err)
	// Output: 3 <nil>
}

// QueueSummaries merges the job counts and the paused flags, as `status`
// and the web UI show them.
func ExampleClient_QueueSummaries() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	for range 2 {
		_, _ = q.Dispatch(ctx, "send_email", nil, queuety.OnQueue("mail"))
	}
	_ = q.PauseQueue(ctx, "reports")
	sums, _ := q.QueueSummaries(ctx)
	for _, s := range sums {
		fmt.Println(s.Queue, s.Pending, s.Paused)
	}
	// Output:
	// mail 2 false
	// reports 0 true
}
