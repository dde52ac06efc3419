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

// TestLiveSignalFamily: wait_for_signals, wait_for_approval,
// wait_for_decision and wait_for_input built by Queuety PHP and by the Go
// builder store the same state byte for byte; PHP's answers
// (approve_workflow, reject_workflow, submit_workflow_input) settle the
// waits of Go-dispatched workflows, run by Go; and Go's answers settle
// PHP-dispatched waits that PHP runs.
func TestLiveSignalFamily(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)

	phpDispatch := func(chain string) int64 {
		t.Helper()
		out := php.eval(`echo \Queuety\Queuety::workflow('human')` + chain + `->then('QueuetyGoInterop\Finish')->dispatch(['doc' => 1]);`)
		id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		require.NoError(t, err, "PHP printed %q", out)
		return id
	}
	goDispatch := func(b *builder.Builder) int64 {
		t.Helper()
		id, err := b.Then(`QueuetyGoInterop\Finish`).Dispatch(ctx, c, queuety.State{"doc": 1})
		require.NoError(t, err)
		return id
	}
	pairs := []struct {
		name   string
		php    string
		goWF   *builder.Builder
		answer string // PHP code answering workflow %d
		goAns  func(id int64) error
		want   string // a key the answer leaves in the final state
	}{
		{"signals", `->wait_for_signals(['legal', 'finance'], \Queuety\Enums\WaitMode::Any, 'first')`,
			builder.Workflow("human").WaitForSignals([]string{"legal", "finance"}, builder.Any(), builder.ResultKey("first")),
			`\Queuety\Queuety::signal(%d, 'finance', ['ok' => true]);`,
			func(id int64) error { return c.Signal(ctx, id, "finance", queuety.State{"ok": true}) }, "first"},
		{"approval", `->wait_for_approval()`, builder.Workflow("human").WaitForApproval(),
			`\Queuety\Queuety::approve_workflow(%d, ['by' => 'ada']);`,
			func(id int64) error { _, err := c.Approve(ctx, id, queuety.State{"by": "ada"}); return err }, "approval"},
		{"decision", `->wait_for_decision()`, builder.Workflow("human").WaitForDecision(),
			`\Queuety\Queuety::reject_workflow(%d, ['reason' => 'no']);`,
			func(id int64) error { _, err := c.Reject(ctx, id, queuety.State{"reason": "no"}); return err }, "decision"},
		{"input", `->wait_for_input()`, builder.Workflow("human").WaitForInput(),
			`\Queuety\Queuety::submit_workflow_input(%d, ['title' => 'Q3']);`,
			func(id int64) error { _, err := c.SubmitInput(ctx, id, queuety.State{"title": "Q3"}); return err }, "input"},
	}
	w := interopWorker(c)
	run := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			phpID, goID := phpDispatch(p.php), goDispatch(p.goWF)
			phpWF, err := c.Workflow(ctx, phpID)
			require.NoError(t, err)
			goWF, err := c.Workflow(ctx, goID)
			require.NoError(t, err)
			assert.Equal(t, string(phpWF.State), string(goWF.State), "stored state at dispatch, PHP's (expected) and Go's (actual)")

			// PHP answers the Go-dispatched workflow; Go runs it.
			run()
			php.eval(strings.ReplaceAll(p.answer, "%d", strconv.FormatInt(goID, 10)))
			run()
			// Go answers the PHP-dispatched workflow; PHP runs it.
			php.run("work")
			require.NoError(t, p.goAns(phpID))
			php.run("work")
			var states []queuety.State
			for _, id := range []int64{goID, phpID} {
				wf, err := c.Workflow(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
				st, err := c.State(ctx, id)
				require.NoError(t, err)
				assert.Contains(t, st, p.want, "workflow %d state %v", id, st)
				states = append(states, st)
			}
			assert.Equal(t, states[1], states[0], "final public state, PHP-run (expected) and Go-run (actual)")
		})
	}
}
