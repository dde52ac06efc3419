package queuetytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytest"
	"github.com/queuety/queuety-go/queuetytype"
)

// signup is application code under test: it dispatches a welcome email.
func signup(ctx context.Context, q *queuety.Client, email string) error {
	_, err := q.Dispatch(ctx, "send_welcome", queuety.State{"to": email, "locale": "en"},
		queuety.OnQueue("mail"), queuety.Delay(10*time.Minute))
	return err
}

// Assert that code under test dispatched a job, then run it.
func ExampleRequireDispatched() {
	// In a real test, t is the test's *testing.T.
	t := &testing.T{}
	ctx := context.Background()
	kit := queuetytest.New(t)

	if err := signup(ctx, kit.Client(), "ana@example.com"); err != nil {
		panic(err)
	}

	job := queuetytest.RequireDispatched(t, kit, "send_welcome",
		queuetytest.Queue("mail"),
		queuetytest.Payload(queuety.State{"to": "ana@example.com"}), // a subset of the payload
		queuetytest.Delay(10*time.Minute))
	fmt.Println("dispatched job", job.ID, "due", job.AvailableAt.Format(time.Kitchen))

	kit.HandleJob("send_welcome", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("sending to", p.String("to"))
		return nil
	})
	fmt.Println("run now:", kit.Work(ctx).Succeeded) // not due yet
	kit.Advance(10 * time.Minute)
	fmt.Println("run later:", kit.Work(ctx).Succeeded)
	// Output:
	// dispatched job 1 due 9:10AM
	// run now: 0
	// sending to ana@example.com
	// run later: 1
}

// RequireNotDispatched fails the test when a matching job was dispatched;
// filters narrow what counts.
func ExampleRequireNotDispatched() {
	t := &testing.T{} // in a real test, the test's *testing.T
	ctx := context.Background()
	kit := queuetytest.New(t)

	_ = signup(ctx, kit.Client(), "ana@example.com")

	queuetytest.RequireNotDispatched(t, kit, "charge_card")
	queuetytest.RequireNotDispatched(t, kit, "send_welcome", queuetytest.Queue("default"))
	fmt.Println("failed:", t.Failed())
	// Output: failed: false
}

// A Sleep step waits for the fake clock: RunWorkflow stops there until the
// test advances it.
func ExampleKit_RunWorkflow() {
	t := &testing.T{} // in a real test, the test's *testing.T
	ctx := context.Background()
	kit := queuetytest.New(t)
	kit.HandleStep("charge", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"charged": true}, nil
	})
	kit.HandleStep("ship", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"shipped": true}, nil
	})

	id, err := builder.Workflow("order").
		Then("charge").
		Sleep(24*time.Hour). // a cooling-off day
		Then("ship").
		Dispatch(ctx, kit.Client(), queuety.State{"order": 42})
	if err != nil {
		panic(err)
	}

	fmt.Println(kit.RunWorkflow(ctx, id))
	kit.Advance(23 * time.Hour)
	fmt.Println(kit.RunWorkflow(ctx, id).Stop)
	kit.Advance(time.Hour)
	run := kit.RunWorkflow(ctx, id)
	fmt.Println(run.Stop, run.State)
	// Output:
	// workflow 1 waiting_for_time at step delay_0 until 2030-01-02T09:00:00Z
	// waiting_for_time
	// completed map[charged:true order:42 shipped:true]
}

// A WaitForSignal step blocks until the test sends the signal.
func ExampleKit_RunWorkflow_signal() {
	t := &testing.T{} // in a real test, the test's *testing.T
	ctx := context.Background()
	kit := queuetytest.New(t)
	kit.HandleStep("publish", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		fmt.Println("publishing, approved by", s.String("reviewer"))
		return nil, nil
	})

	id, _ := builder.Workflow("article").
		WaitForSignal("approved").
		Then("publish").
		Dispatch(ctx, kit.Client(), nil)

	fmt.Println(kit.RunWorkflow(ctx, id))
	if err := kit.Client().Signal(ctx, id, "approved", queuety.State{"reviewer": "sam"}); err != nil {
		panic(err)
	}
	fmt.Println(kit.RunWorkflow(ctx, id).Stop)
	kit.RequireWorkflowStatus(t, id, queuetytype.WorkflowCompleted)
	// Output:
	// workflow 1 waiting_for_signal at step wait_for_approved [approved]
	// publishing, approved by sam
	// completed
}

// A workflow that must complete within an hour fails when the clock passes
// its deadline, and its OnDeadline handler runs once.
func ExampleKit_RunWorkflow_deadline() {
	t := &testing.T{} // in a real test, the test's *testing.T
	ctx := context.Background()
	kit := queuetytest.New(t)
	kit.HandleStep("request_quote", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"quote_id": "q-7"}, nil
	})
	kit.HandleDeadline("quote_expired", func(ctx context.Context, s queuety.State) error {
		fmt.Println("deadline handler called for", s.String("quote_id"))
		return nil
	})

	id, _ := builder.Workflow("quote").
		Then("request_quote").
		WaitForSignal("accepted").
		MustCompleteWithin(0, 1, 0, 0). // days, hours, minutes, seconds
		OnDeadline("quote_expired").
		Dispatch(ctx, kit.Client(), nil)

	fmt.Println(kit.RunWorkflow(ctx, id).Stop)
	kit.Advance(61 * time.Minute)
	fmt.Println(kit.RunWorkflow(ctx, id))
	kit.Advance(time.Hour)
	kit.Work(ctx) // the handler is not called again
	queuetytest.RequireDispatched(t, kit, "quote_expired", queuetytest.Status(queuetytype.JobCompleted))
	logs := kit.Logs(id)
	fmt.Println(logs[len(logs)-2:])
	// Output:
	// waiting_for_signal
	// deadline handler called for q-7
	// workflow 1 failed at step wait_for_accepted: Deadline exceeded
	// [workflow_failed workflow_deadline_exceeded]
}

// RunStep runs one step handler as a workflow would, without a workflow
// of the test's own: the input comes back from JSON (an int is an int64)
// and the output is merged into the state.
func ExampleRunStep() {
	t := &testing.T{} // in a real test, the test's *testing.T
	double := func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, ok := s.Int("n")
		if !ok {
			return nil, errors.New("no n")
		}
		info, _ := queuety.JobInfoFrom(ctx)
		return queuety.State{"doubled": 2 * n, "attempt": info.Attempt, "_secret": "dropped"}, nil
	}

	state, err := queuetytest.RunStep(context.Background(), t, double, queuety.State{"n": 21})
	fmt.Println(state, err)
	_, err = queuetytest.RunStep(context.Background(), t, double, nil)
	fmt.Println(err)
	// Output:
	// map[attempt:1 doubled:42 n:21] <nil>
	// no n
}
