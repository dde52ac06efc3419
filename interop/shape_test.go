package interop_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpfixture"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

var (
	intRE      = regexp.MustCompile(`^-?[0-9]+$`)
	datetimeRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?$`)
)

// kind classifies a stored value the way a reader of the row sees it.
func kind(v *string) string {
	switch {
	case v == nil:
		return "NULL"
	case intRE.MatchString(*v):
		return "int"
	case datetimeRE.MatchString(*v):
		return "datetime"
	case strings.HasPrefix(*v, "{") || strings.HasPrefix(*v, "["):
		if _, err := phpjson.Decode([]byte(*v)); err == nil {
			return "json"
		}
	}
	return "text"
}

// enumColumns hold values from an ENUM (or a fixed set) that must match.
var enumColumns = map[string]bool{"status": true, "event": true, "step_type": true, "priority": true}

// compareShape checks a row Go wrote against the row PHP wrote at the same
// point: the same columns (plus the known Go-only ones), NULL in the same
// places, the same kind of value in each column, and the same enum values.
// skip lists columns whose values may differ (ids, times); every other
// column must be equal as text, or as JSON for JSON columns.
func compareShape(t *testing.T, table string, php, gorow phpfixture.Row, skip ...string) {
	t.Helper()
	skipped := map[string]bool{}
	for _, c := range skip {
		skipped[c] = true
	}
	for _, col := range sortedKeys(php) {
		g, ok := gorow[col]
		if !assert.True(t, ok, "%s.%s: PHP writes it, Go's row has no such column", table, col) {
			continue
		}
		w := php[col]
		if !assert.Equal(t, kind(w), kind(g), "%s.%s: kind of value, PHP %s, Go %s", table, col, val(w), val(g)) {
			continue
		}
		if enumColumns[col] && !assert.Equal(t, val(w), val(g), "%s.%s: enum value", table, col) {
			continue
		}
		if skipped[col] || kind(w) == "datetime" || w == nil {
			continue
		}
		if kind(w) == "json" && col != "payload" {
			assert.True(t, jsonEqual(*w, *g), "%s.%s: JSON values differ: PHP %s, Go %s", table, col, *w, *g)
			continue
		}
		assert.Equal(t, *w, *g, "%s.%s", table, col)
	}
	for col := range gorow {
		_, ok := php[col]
		assert.True(t, ok || isGoOnly(table, col), "%s.%s: Go's row has a column that is neither Queuety's nor a known Go column", table, col)
	}
}

// The initial states PHP dispatched, as structs so the keys keep PHP's
// order.
type customer struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

type orderInput struct {
	OrderID  int      `json:"order_id"`
	Customer customer `json:"customer"`
}

type invoiceInput struct {
	CustomerID int `json:"customer_id"`
}

type expenseInput struct {
	ExpenseID string  `json:"expense_id"`
	Amount    float64 `json:"amount"`
}

func single(h string) queuety.WorkflowStep {
	return queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: h}
}

// TestGoRowsMatchPHPShape dispatches, with queuety.WorkflowDefinition, the
// workflows PHP dispatched in c_three_step_workflow, e_deadline and
// f_signal, with the same initial state, and compares the rows Go writes
// with PHP's "dispatched" rows: the same columns, NULLs, kinds of value,
// enum values, _steps and _definition_hash bytes, state keys in the same
// order, the first job row and the workflow_started log row equal but for
// ids and times. The Go-dispatched c workflow then runs to completion and
// its rows are compared with PHP's "completed" rows.
func TestGoRowsMatchPHPShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fixture string
		def     queuety.WorkflowDefinition
		initial any
	}{
		{"c_three_step_workflow.json", queuety.WorkflowDefinition{
			Name:  "order_fulfilment",
			Steps: []queuety.WorkflowStep{single(`App\Steps\FetchOrder`), single("reserve_stock"), single(`App\Steps\NotifyCustomer`)},
		}, orderInput{42, customer{"ana@example.com", "Ana Núñez"}}},
		{"e_deadline.json", queuety.WorkflowDefinition{
			Name:             "invoice_collection",
			Steps:            []queuety.WorkflowStep{single(`App\Steps\GenerateInvoice`), single("send_invoice")},
			ExecutionTimeout: time.Hour,
			OnDeadline:       `App\Handlers\EscalateOverdueInvoice`,
		}, invoiceInput{501}},
		{"f_signal.json", queuety.WorkflowDefinition{
			Name: "expense_approval",
			Steps: []queuety.WorkflowStep{
				single(`App\Steps\SubmitExpense`),
				{Type: queuetytype.StepWaitForSignal, Signal: "approval"},
				single("record_approval"),
			},
		}, expenseInput{"EXP-77", 249.99}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.fixture, ".json"), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.fixture)
			php := e.snap("dispatched")
			e.clock.Set(php.Now())
			id, err := e.c.DispatchWorkflow(e.ctx, tc.def, tc.initial)
			require.NoError(t, err)
			require.Equal(t, int64(1), id, "workflow id on empty tables, PHP's was 1")

			// Row by row, then the whole snapshot with the rules of the
			// other tests.
			pw := one(t, rowsOf(php, "queuety_workflows"), "id", "1")
			gw := one(t, e.rows("queuety_workflows"), "id", "1")
			compareShape(t, "queuety_workflows", pw, gw, "state")
			ps, gs := val(pw["state"]), val(gw["state"])
			assert.Equal(t, objectKeys(t, ps), objectKeys(t, gs), "state keys, PHP's (expected) and Go's (actual)")
			for _, k := range []string{"_steps", "_definition_hash"} {
				assert.Equal(t, rawMember(t, ps, k), rawMember(t, gs, k), "state %s bytes", k)
			}
			// With struct initial states, the whole state is byte-equal.
			assert.Equal(t, ps, gs, "state bytes")
			assert.Equal(t, val(pw["deadline_at"]), val(gw["deadline_at"]), "deadline_at (dispatch time + _deadline_seconds)")
			// Go-only columns: a PHP-dispatched row has them NULL; a Go
			// dispatch starts run 1.
			assert.Equal(t, "1", val(gw["run_number"]), "run_number; row %s", show(gw))
			assert.NotNil(t, gw["run_started_at"], "run_started_at; row %s", show(gw))
			assert.Nil(t, gw["run_deadline_at"], "run_deadline_at; row %s", show(gw))
			assert.Nil(t, gw["wait_deadline_at"], "wait_deadline_at; row %s", show(gw))

			pj, gj := rowsOf(php, "queuety_jobs"), e.rows("queuety_jobs")
			require.Equal(t, len(pj), len(gj), "jobs at dispatch, PHP's (expected) and Go's (actual)")
			compareShape(t, "queuety_jobs", pj[0], gj[0], "id")
			for _, c := range goOnlyColumns["queuety_jobs"] {
				assert.Nil(t, gj[0][c], "jobs.%s = %s on a step job without timeouts, want NULL", c, val(gj[0][c]))
			}
			pl, gl := rowsOf(php, "queuety_logs"), e.rows("queuety_logs")
			require.Equal(t, 1, len(pl), "PHP's logs at dispatch:\n%s", showAll(pl))
			require.Equal(t, 1, len(gl), "Go's logs at dispatch:\n%s", showAll(gl))
			compareShape(t, "queuety_logs", pl[0], gl[0], "id")

			e.compareWith(php)
		})
	}

	t.Run("c_three_step_workflow completed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, "c_three_step_workflow.json")
		e.clock.Set(e.snap("dispatched").Now())
		_, err := e.c.DispatchWorkflow(e.ctx, cases[0].def, cases[0].initial)
		require.NoError(t, err)
		php := e.snap("completed")
		e.runExpect(orderSteps, php, 0)
		for _, tbl := range []string{"queuety_jobs", "queuety_workflows", "queuety_logs", "queuety_workflow_events"} {
			pr, gr := rowsOf(php, tbl), e.rows(tbl)
			if !assert.Equal(t, len(pr), len(gr), "%s: number of rows, PHP's (expected) and Go's (actual)", tbl) {
				continue
			}
			for i := range pr {
				// Values are compared by compareWith above; here only the
				// shape: columns, NULLs, kinds and enum values.
				skip := sortedKeys(pr[i])
				if tbl == "queuety_logs" {
					// Go has no per-job memory peak: NULL where PHP
					// writes a number.
					g := phpfixture.Row{}
					for k, v := range gr[i] {
						g[k] = v
					}
					g["memory_peak_kb"] = pr[i]["memory_peak_kb"]
					compareShape(t, tbl, pr[i], g, skip...)
					continue
				}
				compareShape(t, tbl, pr[i], gr[i], skip...)
			}
		}
	})
}
