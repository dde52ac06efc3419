package builder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// phpFixture is the part of a testdata/queuety-php scenario these tests
// read: the rows Queuety PHP wrote right after dispatching the workflow.
type phpFixture struct {
	Scenario  string `json:"scenario"`
	Snapshots []struct {
		Label  string `json:"label"`
		DBNow  string `json:"db_now"`
		Tables struct {
			Jobs      []map[string]*string `json:"wp_queuety_jobs"`
			Workflows []map[string]*string `json:"wp_queuety_workflows"`
			Keys      []map[string]*string `json:"wp_queuety_workflow_dispatch_keys"`
		} `json:"tables"`
	} `json:"snapshots"`
}

func loadFixture(t *testing.T, name string) *phpFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "queuety-php", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var f phpFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("parse fixture %s: %v", name, err)
	}
	if len(f.Snapshots) == 0 || len(f.Snapshots[0].Tables.Workflows) != 1 || len(f.Snapshots[0].Tables.Jobs) != 1 {
		t.Fatalf("fixture %s: want one workflow and one job in the first snapshot", name)
	}
	return &f
}

// Initial states as structs, so their keys keep PHP's order.
type (
	orderCustomer struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	orderState struct {
		OrderID  int           `json:"order_id"`
		Customer orderCustomer `json:"customer"`
	}
	dripState struct {
		UserID int    `json:"user_id"`
		Email  string `json:"email"`
	}
	invoiceState struct {
		CustomerID int `json:"customer_id"`
	}
	ticketState struct {
		TicketID int    `json:"ticket_id"`
		Subject  string `json:"subject"`
	}
	reportState struct {
		Date  string `json:"date"`
		Rerun bool   `json:"rerun,omitempty"`
	}
	expenseState struct {
		ExpenseID string  `json:"expense_id"`
		Amount    float64 `json:"amount"`
	}
)

// wireCases build, with the builder, the workflows the PHP fixtures
// dispatched (the PHP code is in each fixture's "php" field).
var wireCases = []struct {
	fixture string
	build   func() *builder.Builder
	state   any
}{
	{
		// Queuety::workflow('order_fulfilment')->then(FetchOrder::class)->then('reserve_stock')->then(NotifyCustomer::class)
		fixture: "c_three_step_workflow.json",
		build: func() *builder.Builder {
			return builder.Workflow("order_fulfilment").
				Then(`App\Steps\FetchOrder`).
				Then("reserve_stock").
				Then(`App\Steps\NotifyCustomer`)
		},
		state: orderState{OrderID: 42, Customer: orderCustomer{Email: "ana@example.com", Name: "Ana Núñez"}},
	},
	{
		// ->then(SendWelcome::class)->delay(seconds: 30)->then('send_followup')
		fixture: "d_delay_step.json",
		build: func() *builder.Builder {
			return builder.Workflow("drip_campaign").
				Then(`App\Steps\SendWelcome`).
				Sleep(30 * time.Second).
				Then("send_followup")
		},
		state: dripState{UserID: 7, Email: "ana@example.com"},
	},
	{
		// ->must_complete_within(hours: 1)->on_deadline(EscalateOverdueInvoice::class)
		fixture: "e_deadline.json",
		build: func() *builder.Builder {
			return builder.Workflow("invoice_collection").
				Then(`App\Steps\GenerateInvoice`).
				Then("send_invoice").
				MustCompleteWithin(0, 1, 0, 0).
				OnDeadline(`App\Handlers\EscalateOverdueInvoice`)
		},
		state: invoiceState{CustomerID: 501},
	},
	{
		// ->then(ClassifyTicket::class, 'classify')->then('escalate_ticket', 'escalate')->...
		fixture: "h_next_step.json",
		build: func() *builder.Builder {
			return builder.Workflow("ticket_triage").
				Then(`App\Steps\ClassifyTicket`, builder.Name("classify")).
				Then("escalate_ticket", builder.Name("escalate")).
				Then(`App\Steps\AutoReply`, builder.Name("auto_reply")).
				Then("close_ticket", builder.Name("close"))
		},
		state: ticketState{TicketID: 9001, Subject: "How do I reset my password?"},
	},
	{
		// ->then(BuildReport::class)->idempotency_key('report:2026-11-21')
		fixture: "h_idempotency_key.json",
		build: func() *builder.Builder {
			return builder.Workflow("nightly_report").
				Then(`App\Steps\BuildReport`).
				IdempotencyKey("report:2026-11-21")
		},
		state: reportState{Date: "2026-11-21"},
	},
	{
		// ->then(SubmitExpense::class)->wait_for_signal('approval')->then('record_approval')
		fixture: "f_signal.json",
		build: func() *builder.Builder {
			return builder.Workflow("expense_approval").
				Then(`App\Steps\SubmitExpense`).
				WaitForSignal("approval").
				Then("record_approval")
		},
		state: expenseState{ExpenseID: "EXP-77", Amount: 249.99},
	},
}

// TestWireShapeMatchesQueuetyPHP dispatches each fixture's workflow with
// the builder and compares the rows with the ones Queuety PHP wrote.
func TestWireShapeMatchesQueuetyPHP(t *testing.T) {
	for _, tc := range wireCases {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			fx := loadFixture(t, tc.fixture)
			snap := fx.Snapshots[0]
			phpWF, phpJob := snap.Tables.Workflows[0], snap.Tables.Jobs[0]
			phpState, err := phpjson.DecodeObject([]byte(*phpWF["state"]))
			if err != nil {
				t.Fatalf("decode PHP state: %v", err)
			}

			c := openClient(t)
			ctx := context.Background()
			id, err := tc.build().Dispatch(ctx, c, tc.state)
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			wf, err := c.Workflow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			goState, err := phpjson.DecodeObject(wf.State)
			if err != nil {
				t.Fatalf("decode Go state: %v", err)
			}

			// _steps and _definition_hash, byte for byte.
			for _, key := range []string{"_steps", "_definition_hash"} {
				want, _ := phpState.Get(key)
				got, ok := goState.Get(key)
				if !ok {
					t.Errorf("Go state has no %s", key)
					continue
				}
				if g, w := mustMarshal(t, got), mustMarshal(t, want); g != w {
					t.Errorf("%s differs\n Go: %s\nPHP: %s", key, g, w)
				}
			}
			// The re-encoded PHP _steps are PHP's own bytes.
			if steps, _ := phpState.Get("_steps"); !bytes.Contains([]byte(*phpWF["state"]), []byte(`"_steps":`+mustMarshal(t, steps))) {
				t.Errorf("phpjson does not reproduce PHP's _steps bytes")
			}
			// Everything the engine adds to the initial state, in PHP's
			// key order and bytes: from "_steps" to the end.
			if g, w := privateTail(t, wf.State), privateTail(t, []byte(*phpWF["state"])); g != w {
				t.Errorf("private state keys differ\n Go: %s\nPHP: %s", g, w)
			}

			if wf.Name != *phpWF["name"] || string(wf.Status) != *phpWF["status"] ||
				strconv.Itoa(wf.CurrentStep) != *phpWF["current_step"] || strconv.Itoa(wf.TotalSteps) != *phpWF["total_steps"] {
				t.Errorf("workflow row: name %q status %q current_step %d total_steps %d; PHP: %q %q %s %s",
					wf.Name, wf.Status, wf.CurrentStep, wf.TotalSteps, *phpWF["name"], *phpWF["status"], *phpWF["current_step"], *phpWF["total_steps"])
			}
			checkDeadline(t, wf, phpWF, snap.DBNow)

			// The first step's job.
			jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("ListJobs = %d jobs, %v; want 1", len(jobs), err)
			}
			j := jobs[0]
			got := map[string]string{
				"handler": j.Handler, "queue": j.Queue, "priority": strconv.Itoa(int(j.Priority)),
				"max_attempts": strconv.Itoa(j.MaxAttempts), "payload": string(j.Payload),
				"status": string(j.Status), "attempts": strconv.Itoa(j.Attempts), "cost_units": strconv.Itoa(j.CostUnits),
				"step_index": strconv.Itoa(*j.StepIndex),
			}
			for col, g := range got {
				if w := phpJob[col]; w == nil || g != *w {
					t.Errorf("job %s = %q; PHP wrote %v", col, g, deref(w))
				}
			}
			if j.Payload == nil || string(j.Payload) != `{"__queuety_runtime":{"max_attempts":3}}` {
				t.Errorf("job payload = %s", j.Payload)
			}

			if len(snap.Tables.Keys) > 0 {
				checkIdempotency(t, c, tc.build(), id, snap.Tables.Keys[0])
			}
		})
	}
}

// TestWireStateMatchesQueuetyPHP compares the whole stored state, initial
// payload included. The initial state is passed as a struct, whose field
// order is PHP's key order.
func TestWireStateMatchesQueuetyPHP(t *testing.T) {
	for _, tc := range wireCases {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			fx := loadFixture(t, tc.fixture)
			want := *fx.Snapshots[0].Tables.Workflows[0]["state"]
			c := openClient(t)
			id, err := tc.build().Dispatch(context.Background(), c, tc.state)
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			wf, err := c.Workflow(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if string(wf.State) != want {
				t.Errorf("state differs\n Go: %s\nPHP: %s", wf.State, want)
			}
		})
	}
}

// privateTail returns a stored state from its first "_" key on.
func privateTail(t *testing.T, state []byte) string {
	t.Helper()
	i := bytes.Index(state, []byte(`"_steps":`))
	if i < 0 {
		t.Fatalf("state has no _steps: %s", state)
	}
	return string(state[i:])
}

// checkDeadline compares deadline_at - dispatch time with PHP's.
func checkDeadline(t *testing.T, wf *driver.Workflow, phpWF map[string]*string, dbNow string) {
	t.Helper()
	if phpWF["deadline_at"] == nil {
		if !wf.DeadlineAt.IsZero() {
			t.Errorf("deadline_at = %s; PHP wrote NULL", wf.DeadlineAt)
		}
		return
	}
	const layout = "2006-01-02 15:04:05"
	phpDeadline, err1 := time.Parse(layout, *phpWF["deadline_at"])
	phpNow, err2 := time.Parse(layout, dbNow)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse PHP times: %v %v", err1, err2)
	}
	want := phpDeadline.Sub(phpNow)
	if got := wf.DeadlineAt.Sub(wf.StartedAt); got < want || got > want+time.Second {
		t.Errorf("deadline_at - started_at = %s; PHP: %s", got, want)
	}
}

// checkIdempotency dispatches again with the same key and a different
// state, as the PHP scenario did: same id, nothing new written.
func checkIdempotency(t *testing.T, c *queuety.Client, b *builder.Builder, id int64, phpKey map[string]*string) {
	t.Helper()
	ctx := context.Background()
	again, err := b.Dispatch(ctx, c, reportState{Date: "2026-11-21", Rerun: true})
	if err != nil {
		t.Fatal(err)
	}
	if again != id {
		t.Errorf("second dispatch returned %d; want %d", again, id)
	}
	wfs, _ := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	jobs, _ := c.ListJobs(ctx, driver.JobFilter{})
	if len(wfs) != 1 || len(jobs) != 1 {
		t.Errorf("%d workflows, %d jobs after a second dispatch; PHP wrote 1 and 1", len(wfs), len(jobs))
	}
	state := storedState(t, c, id)
	if v, _ := state.Get("_idempotency_key"); v != *phpKey["dispatch_key"] {
		t.Errorf("_idempotency_key = %v; PHP key %q", v, *phpKey["dispatch_key"])
	}
	if _, ok := state.Get("rerun"); ok {
		t.Error("the second dispatch's state was written")
	}
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
