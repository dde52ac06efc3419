package interop_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestLiveSignalMatching: signal waits with match_payload and
// correlation_key built by Queuety PHP and by the Go builder store the same
// state byte for byte; a PHP signal that does not match leaves the
// Go-dispatched wait waiting and a matching one settles it (Go runs the
// workflow), and the same Go signals settle the PHP-dispatched wait only
// when they match (PHP runs it).
func TestLiveSignalMatching(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	cases := []struct {
		name    string
		php     string // the wait, as PHP builder calls
		goWF    *builder.Builder
		miss    queuety.State // a payload the wait ignores
		hit     queuety.State // a payload that settles it
		missPHP string
		hitPHP  string
	}{
		{"correlation", `->wait_for_signal('paid', 'payment', null, [], 'order_id')`,
			builder.Workflow("match").WaitForSignal("paid", builder.ResultKey("payment"), builder.CorrelationKey("order_id")),
			queuety.State{"order_id": 8}, queuety.State{"order_id": 7, "amount": 3},
			`['order_id' => 8]`, `['order_id' => 7, 'amount' => 3]`},
		{"padded_correlation", `->wait_for_signal('paid', null, null, [], ' order_id ')`,
			builder.Workflow("match").WaitForSignal("paid", builder.CorrelationKey(" order_id ")),
			queuety.State{"order_id": 8}, queuety.State{"order_id": 7, "amount": 3},
			`['order_id' => 8]`, `['order_id' => 7, 'amount' => 3]`},
		{"match_payload", `->wait_for_signals(['paid'], \Queuety\Enums\WaitMode::All, null, 'paid_ok', ['by' => ['team' => 'legal'], 'verdict' => 'ok'])`,
			builder.Workflow("match").WaitForSignals([]string{"paid"}, builder.Name("paid_ok"),
				builder.MatchPayload(queuety.State{"verdict": "ok", "by": map[string]any{"team": "legal"}})),
			queuety.State{"verdict": "ok", "by": map[string]any{"team": "sales"}},
			queuety.State{"verdict": "ok", "by": map[string]any{"team": "legal", "name": "ada"}},
			`['verdict' => 'ok', 'by' => ['team' => 'sales']]`, `['verdict' => 'ok', 'by' => ['team' => 'legal', 'name' => 'ada']]`},
		{"decision", `->wait_for_decision('yes', 'no', 'decision', null, ['level' => 2], 'order_id')`,
			builder.Workflow("match").WaitForDecision(builder.SignalNames("yes", "no"), builder.MatchPayload(queuety.State{"level": 2}),
				builder.CorrelationKey("order_id")),
			queuety.State{"order_id": 7, "level": 1}, queuety.State{"order_id": 7, "level": 2},
			`['order_id' => 7, 'level' => 1]`, `['order_id' => 7, 'level' => 2]`},
	}
	w := interopWorker(c)
	run := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	status := func(id int64) queuetytype.WorkflowStatus {
		t.Helper()
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		return wf.Status
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := php.eval(`echo \Queuety\Queuety::workflow('match')` + tc.php + `->then('QueuetyGoInterop\Finish')->dispatch(['order_id' => 7]);`)
			phpID, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
			require.NoError(t, err, "PHP printed %q", out)
			phpWF, err := c.Workflow(ctx, phpID)
			require.NoError(t, err)
			atDispatch := string(phpWF.State)
			php.run("work") // PHP opens its wait
			goID, err := tc.goWF.Then(`QueuetyGoInterop\Finish`).Dispatch(ctx, c, queuety.State{"order_id": 7})
			require.NoError(t, err)
			goWF, err := c.Workflow(ctx, goID)
			require.NoError(t, err)
			assert.Equal(t, atDispatch, string(goWF.State), "stored state at dispatch, PHP's (expected) and Go's (actual)")
			run() // Go opens its wait
			require.Equal(t, queuetytype.WorkflowWaitingForSignal, status(phpID))
			require.Equal(t, queuetytype.WorkflowWaitingForSignal, status(goID))
			phpWF, err = c.Workflow(ctx, phpID)
			require.NoError(t, err)
			goWF, err = c.Workflow(ctx, goID)
			require.NoError(t, err)
			assert.Equal(t, string(phpWF.State), string(goWF.State), "stored state while waiting (_wait), PHP's (expected) and Go's (actual)")
			assert.Equal(t, waitingOutput(t, c, phpID), waitingOutput(t, c, goID), "workflow_waiting event output, PHP's (expected) and Go's (actual)")

			signal := "paid"
			if tc.name == "decision" {
				signal = "no"
			}
			sendPHP := func(id int64, payload string) {
				php.eval(`\Queuety\Queuety::signal(` + strconv.FormatInt(id, 10) + `, '` + signal + `', ` + payload + `);`)
			}
			// PHP signals the Go-dispatched workflow; Go runs it.
			sendPHP(goID, tc.missPHP)
			assert.Equal(t, queuetytype.WorkflowWaitingForSignal, status(goID), "Go's wait ignores PHP's non-matching signal")
			sendPHP(goID, tc.hitPHP)
			run()
			// Go signals the PHP-dispatched workflow; PHP runs the rest.
			require.NoError(t, c.Signal(ctx, phpID, signal, tc.miss))
			php.run("work")
			assert.Equal(t, queuetytype.WorkflowWaitingForSignal, status(phpID), "PHP's wait ignores Go's non-matching signal")
			require.NoError(t, c.Signal(ctx, phpID, signal, tc.hit))
			php.run("work")
			var states []queuety.State
			for _, id := range []int64{goID, phpID} {
				assert.Equal(t, queuetytype.WorkflowCompleted, status(id), "workflow %d", id)
				st, err := c.State(ctx, id)
				require.NoError(t, err)
				states = append(states, st)
			}
			assert.Equal(t, states[1], states[0], "final public state, PHP-run (expected) and Go-run (actual)")
		})
	}
}

// waitingOutput is the output of a workflow's workflow_waiting event.
func waitingOutput(t *testing.T, c *queuety.Client, id int64) string {
	t.Helper()
	var out string
	err := c.DB().QueryRow("SELECT output FROM "+c.StoreInfo().Prefix+"queuety_workflow_events WHERE workflow_id = ? AND event = 'workflow_waiting'", id).Scan(&out)
	require.NoError(t, err, "workflow_waiting event of workflow %d", id)
	return out
}
