package builder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// The Queuety documentation's data import: three steps that must finish
// within 24 hours, with a callback for when they do not.
func ExampleWorkflow() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	w := worker.New(q)
	w.HandleStep("fetch_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"rows": []string{"ada", "grace", "linus"}}, nil
	})
	w.HandleStep("transform_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		var in struct{ Rows []string }
		if err := s.Decode(&in); err != nil {
			return nil, err
		}
		for i, r := range in.Rows {
			in.Rows[i] = strings.ToUpper(r)
		}
		return queuety.State{"rows": in.Rows}, nil
	})
	w.HandleStep("load_data", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		rows, _ := s["rows"].([]any)
		return queuety.State{"loaded": len(rows)}, nil
	})
	w.HandleDeadline("import_timeout", func(ctx context.Context, s queuety.State) error {
		fmt.Println("import timed out:", s.String("source"))
		return nil
	})

	url := "https://example.com/export.csv"
	id, err := builder.Workflow("data_import").
		Then("fetch_data").
		Then("transform_data", builder.StartToClose(5*time.Minute), builder.Retry(3)).
		Then("load_data").
		MustCompleteWithin(0, 24, 0, 0).
		OnDeadline("import_timeout").
		Dispatch(ctx, q, queuety.State{"source": url})
	if err != nil {
		log.Fatal(err)
	}

	// Run every due step, then return (what `queuety-worker work --once` does).
	if _, err := w.RunOnce(ctx, time.Minute); err != nil {
		log.Fatal(err)
	}

	wf, _ := q.Workflow(ctx, id)
	state, _ := q.State(ctx, id)
	out, _ := json.Marshal(state) // map keys come out sorted
	fmt.Println(wf.Status)
	fmt.Println(string(out))
	// Output:
	// completed
	// {"loaded":3,"rows":["ADA","GRACE","LINUS"],"source":"https://example.com/export.csv"}
}

// A signal wait with a timeout: one expense is approved, the other is
// never answered, and after 48 hours its workflow continues without the
// approval, with approval_timed_out set.
func ExampleBuilder_WaitForSignal() {
	ctx := context.Background()
	// A fake clock moves time forward instead of waiting 48 hours.
	clock := queuety.NewFakeClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	w := worker.New(q)
	w.HandleStep("submit_expense", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"submitted": true}, nil
	})
	w.HandleStep("record_decision", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		if s.Bool("approval_timed_out") {
			return queuety.State{"outcome": "escalated"}, nil
		}
		approval, _ := s["approval"].(map[string]any)
		return queuety.State{"outcome": "approved by " + fmt.Sprint(approval["by"])}, nil
	})

	approval := builder.Workflow("expense_approval").
		Then("submit_expense").
		WaitForSignal("approval", builder.ResultKey("approval"), builder.Timeout(48*time.Hour)).
		Then("record_decision")

	answered, _ := approval.Dispatch(ctx, q, queuety.State{"expense_id": "EXP-1"})
	ignored, _ := approval.Dispatch(ctx, q, queuety.State{"expense_id": "EXP-2"})
	w.RunOnce(ctx, time.Minute) // both submit, then wait

	wf, _ := q.Workflow(ctx, ignored)
	fmt.Println("EXP-2:", wf.Status)

	q.Signal(ctx, answered, "approval", queuety.State{"by": "manager@example.com"})
	clock.Advance(49 * time.Hour) // EXP-2's wait times out
	w.RunOnce(ctx, time.Minute)

	for _, id := range []int64{answered, ignored} {
		s, _ := q.State(ctx, id)
		fmt.Printf("%s: %s (timed out: %v)\n", s.String("expense_id"), s.String("outcome"), s.Bool("approval_timed_out"))
	}
	// Output:
	// EXP-2: waiting_for_signal
	// EXP-1: approved by manager@example.com (timed out: false)
	// EXP-2: escalated (timed out: true)
}

// A fan-out: one branch job per invoice, a reducer that sums the
// branches' totals, and a child workflow that mails the result. A worker
// registers the functions the steps name (queuety.Registry has the same
// methods).
func ExampleBuilder_ForEach() {
	reg := queuety.NewRegistry()
	reg.HandleStep("load_invoices", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return queuety.State{"invoices": []int{120, 80, 45}}, nil
	})
	reg.HandleForEach("price_invoice", func(ctx context.Context, s queuety.State, item any, index int) (queuety.State, error) {
		return queuety.State{"total": item}, nil
	})
	reg.HandleReducer("sum_totals", func(ctx context.Context, s queuety.State, r queuetytype.ForEachResult) (queuety.State, error) {
		sum := 0.0
		for _, b := range r.Results {
			n, _ := b.Output["total"].(float64)
			sum += n
		}
		return queuety.State{"grand_total": sum}, nil
	})
	reg.HandleStep("send_statement", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		return nil, nil
	})

	mail := builder.Workflow("mail").Then("send_statement").OnQueue("mail")
	def, err := builder.Workflow("billing").
		Then("load_invoices").
		ForEach("invoices", "price_invoice",
			builder.ResultKey("priced"), builder.Reducer("sum_totals"), builder.Retry(5)).
		RunWorkflow("statement", mail).
		MaxForEachItems(1000).
		Definition()
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range def.Steps {
		fmt.Println(strings.TrimSpace(fmt.Sprintln(s.Type, s.Handler, s.Reducer)))
	}
	fmt.Println("child:", def.Steps[2].Child.Name, "on queue", def.Steps[2].Child.Queue)
	fmt.Println("worker handlers:", strings.Join(reg.Names(), ", "))
	// Output:
	// single load_invoices
	// for_each price_invoice sum_totals
	// run_workflow
	// child: statement on queue mail
	// worker handlers: load_invoices, price_invoice, send_statement
}
