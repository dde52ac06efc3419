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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	require.NoError(t, err, "read fixture")
	var f phpFixture
	require.NoError(t, json.Unmarshal(raw, &f), "parse fixture %s", name)
	require.NotEmpty(t, f.Snapshots, "fixture %s has no snapshots", name)
	require.Len(t, f.Snapshots[0].Tables.Workflows, 1, "fixture %s: workflows in the first snapshot", name)
	require.Len(t, f.Snapshots[0].Tables.Jobs, 1, "fixture %s: jobs in the first snapshot", name)
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
			require.NoError(t, err, "decode PHP state")

			c := openClient(t)
			ctx := context.Background()
			id, err := tc.build().Dispatch(ctx, c, tc.state)
			require.NoError(t, err, "Dispatch")
			wf, err := c.Workflow(ctx, id)
			require.NoError(t, err)
			goState, err := phpjson.DecodeObject(wf.State)
			require.NoError(t, err, "decode Go state")

			// _steps and _definition_hash, byte for byte.
			for _, key := range []string{"_steps", "_definition_hash"} {
				want, _ := phpState.Get(key)
				got, ok := goState.Get(key)
				if !assert.True(t, ok, "Go state has no %s", key) {
					continue
				}
				assert.Equal(t, mustMarshal(t, want), mustMarshal(t, got), "%s (expected: PHP, actual: Go)", key)
			}
			// The re-encoded PHP _steps are PHP's own bytes.
			steps, _ := phpState.Get("_steps")
			assert.Contains(t, *phpWF["state"], `"_steps":`+mustMarshal(t, steps), "phpjson does not reproduce PHP's _steps bytes")
			// Everything the engine adds to the initial state, in PHP's
			// key order and bytes: from "_steps" to the end.
			assert.Equal(t, privateTail(t, []byte(*phpWF["state"])), privateTail(t, wf.State), "private state keys (expected: PHP, actual: Go)")

			assert.Equal(t, *phpWF["name"], wf.Name, "workflow name")
			assert.Equal(t, *phpWF["status"], string(wf.Status), "workflow status")
			assert.Equal(t, *phpWF["current_step"], strconv.Itoa(wf.CurrentStep), "workflow current_step")
			assert.Equal(t, *phpWF["total_steps"], strconv.Itoa(wf.TotalSteps), "workflow total_steps")
			checkDeadline(t, wf, phpWF, snap.DBNow)

			// The first step's job.
			jobs, err := c.ListJobs(ctx, driver.JobFilter{WorkflowID: id})
			require.NoError(t, err)
			require.Len(t, jobs, 1, "jobs")
			j := jobs[0]
			got := map[string]string{
				"handler": j.Handler, "queue": j.Queue, "priority": strconv.Itoa(int(j.Priority)),
				"max_attempts": strconv.Itoa(j.MaxAttempts), "payload": string(j.Payload),
				"status": string(j.Status), "attempts": strconv.Itoa(j.Attempts), "cost_units": strconv.Itoa(j.CostUnits),
				"step_index": strconv.Itoa(*j.StepIndex),
			}
			for col, g := range got {
				if w := phpJob[col]; assert.NotNil(t, w, "PHP wrote NULL for job %s = %q", col, g) {
					assert.Equal(t, *w, g, "job %s (expected: PHP)", col)
				}
			}
			assert.NotNil(t, j.Payload, "job payload")
			assert.Equal(t, `{"__queuety_runtime":{"max_attempts":3}}`, string(j.Payload), "job payload")

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
			require.NoError(t, err, "Dispatch")
			wf, err := c.Workflow(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, want, string(wf.State), "state (expected: PHP, actual: Go)")
		})
	}
}

// privateTail returns a stored state from its first "_" key on.
func privateTail(t *testing.T, state []byte) string {
	t.Helper()
	i := bytes.Index(state, []byte(`"_steps":`))
	require.NotEqual(t, -1, i, "state has no _steps: %s", state)
	return string(state[i:])
}

// checkDeadline compares deadline_at - dispatch time with PHP's.
func checkDeadline(t *testing.T, wf *driver.Workflow, phpWF map[string]*string, dbNow string) {
	t.Helper()
	if phpWF["deadline_at"] == nil {
		assert.True(t, wf.DeadlineAt.IsZero(), "deadline_at = %s; PHP wrote NULL", wf.DeadlineAt)
		return
	}
	const layout = "2006-01-02 15:04:05"
	phpDeadline, err := time.Parse(layout, *phpWF["deadline_at"])
	require.NoError(t, err, "parse PHP deadline_at")
	phpNow, err := time.Parse(layout, dbNow)
	require.NoError(t, err, "parse PHP db_now")
	want := phpDeadline.Sub(phpNow)
	got := wf.DeadlineAt.Sub(wf.StartedAt)
	assert.GreaterOrEqual(t, got, want, "deadline_at - started_at; PHP: %s", want)
	assert.LessOrEqual(t, got, want+time.Second, "deadline_at - started_at; PHP: %s", want)
}

// checkIdempotency dispatches again with the same key and a different
// state, as the PHP scenario did: same id, nothing new written.
func checkIdempotency(t *testing.T, c *queuety.Client, b *builder.Builder, id int64, phpKey map[string]*string) {
	t.Helper()
	ctx := context.Background()
	again, err := b.Dispatch(ctx, c, reportState{Date: "2026-11-21", Rerun: true})
	require.NoError(t, err)
	assert.Equal(t, id, again, "id of the second dispatch")
	wfs, _ := c.ListWorkflows(ctx, driver.WorkflowFilter{})
	jobs, _ := c.ListJobs(ctx, driver.JobFilter{})
	assert.Len(t, wfs, 1, "workflows after a second dispatch; PHP wrote 1")
	assert.Len(t, jobs, 1, "jobs after a second dispatch; PHP wrote 1")
	state := storedState(t, c, id)
	v, _ := state.Get("_idempotency_key")
	assert.Equal(t, *phpKey["dispatch_key"], v, "_idempotency_key (expected: PHP's key)")
	_, ok := state.Get("rerun")
	assert.False(t, ok, "the second dispatch's state was written")
}
