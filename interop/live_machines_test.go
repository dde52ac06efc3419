package interop_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/testdb"
	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// phpSessionMachine is the documentation's machine built with Queuety
// PHP's builder, with the interop action and guard (machine-handlers.php).
const phpSessionMachine = `\Queuety\Queuety::machine('agent_session')->version('agent-session.v1')
	->state('awaiting_user')->on('user_message', 'planning')
	->state('planning')->action('QueuetyGoInterop\PlanAction')->on('planned', 'awaiting_review')
	->state('awaiting_review')->on('approve', 'completed', 'QueuetyGoInterop\ApproveGuard')->on('reject', 'awaiting_user')
	->state('completed', \Queuety\Enums\StateMachineStatus::Completed)`

// goSessionMachine is the same machine built with package machine.
func goSessionMachine() *machine.Builder {
	return machine.New("agent_session").Version("agent-session.v1").
		State("awaiting_user").On("user_message", "planning").
		State("planning").Action(`QueuetyGoInterop\PlanAction`, nil).On("planned", "awaiting_review").
		State("awaiting_review").On("approve", "completed", machine.Guard(`QueuetyGoInterop\ApproveGuard`, nil)).On("reject", "awaiting_user").
		Terminal("completed", queuetytype.MachineCompleted)
}

// machineRows reads a machine's row and its event and action job rows,
// with what differs between two runs of the same lifecycle (ids, times,
// durations, PHP stack traces) taken out.
func machineRows(t *testing.T, c *queuety.Client, prefix string, id int64) []string {
	t.Helper()
	var out []string
	ids := regexp.MustCompile(`"(job_id|machine_id)":\d+`)
	trace := regexp.MustCompile(`"trace":"(\\.|[^"\\])*"`)
	norm := func(s string) string { return trace.ReplaceAllString(ids.ReplaceAllString(s, `"$1":N`), `"trace":""`) }
	read := func(label, q string) {
		rows, err := c.DB().Query(q, id)
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			parts := []string{label}
			for i, col := range cols {
				v := "NULL"
				if b, ok := vals[i].([]byte); ok {
					v = string(b)
				} else if vals[i] != nil {
					v = fmt.Sprint(vals[i])
				}
				parts = append(parts, col+"="+norm(v))
			}
			out = append(out, strings.Join(parts, " "))
		}
		require.NoError(t, rows.Err())
	}
	read("machine", "SELECT name, status, current_state, state, definition, definition_hash, definition_version, idempotency_key, "+
		"error_message, completed_at IS NULL AS open FROM "+prefix+"queuety_state_machines WHERE id = ?")
	read("event", "SELECT state_name, handler, event, event_name, transition_name, queue, attempt, input, output, state_before, "+
		"state_after, context, artifacts, chunks, error FROM "+prefix+"queuety_state_machine_events WHERE machine_id = ? ORDER BY id")
	read("job", "SELECT queue, handler, payload, priority, status, attempts, max_attempts, concurrency_group, cost_units FROM "+
		prefix+"queuety_jobs WHERE handler = '__queuety_state_machine_action' AND payload LIKE CONCAT('{\"machine_id\":', ?, ',%') ORDER BY id")
	return out
}

// TestLiveMachines runs the documentation's agent session three ways on
// one set of tables — entirely in Queuety PHP; defined and worked by PHP
// but driven by Go events (with a Go twin of the PHP guard); defined by
// the Go builder, driven by PHP events and worked by a Go worker — and
// checks that all three leave the same rows: the machine row (definition
// and hash byte for byte), every event row and the action job.
func TestLiveMachines(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	guards := queuety.NewRegistry()
	guards.HandleMachineGuard(`QueuetyGoInterop\ApproveGuard`, func(_ context.Context, in queuetytype.MachineInput) (bool, error) {
		return in.EventPayload["approved"] == true, nil
	})
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)), queuety.WithRegistry(guards))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	parseID := func(out string) int64 {
		id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		require.NoError(t, err, "PHP printed %q", out)
		return id
	}
	phpEvent := func(id int64, event, payload string) string {
		return php.eval(fmt.Sprintf(`try { \Queuety\Queuety::machine_event(%d, '%s', %s); echo 'ok'; } catch (\RuntimeException $e) { echo 'rejected: ', $e->getMessage(); }`,
			id, event, payload))
	}

	// The definition bundle and its hash, as each builder makes them.
	phpDef := php.eval(`echo json_encode(` + phpSessionMachine + `->build_runtime_definition());`)
	goDef, err := goSessionMachine().Definition()
	require.NoError(t, err)
	assert.Contains(t, phpDef, `"definition_hash":"`+goDef.Hash+`"`, "the Go builder's hash is PHP's")

	// 1. PHP only.
	phpOnly := parseID(php.eval(`echo ` + phpSessionMachine + `->dispatch(['thread_id' => 42]);`))
	assert.Equal(t, "rejected: State 'awaiting_user' does not allow event 'approve'.", phpEvent(phpOnly, "approve", "[]"))
	assert.Equal(t, "ok", phpEvent(phpOnly, "user_message", "['message' => 'hi']"))
	php.run("work")
	assert.Equal(t, "ok", phpEvent(phpOnly, "approve", "['approved' => true]"))

	// 2. Defined and worked by PHP, driven by Go.
	goDriven := parseID(php.eval(`echo ` + phpSessionMachine + `->dispatch(['thread_id' => 42]);`))
	err = c.MachineEvent(ctx, goDriven, "approve", nil)
	require.ErrorIs(t, err, queuetytype.ErrEventRejected)
	require.NoError(t, c.MachineEvent(ctx, goDriven, "user_message", queuety.State{"message": "hi"}))
	php.run("work")
	st, err := c.MachineStatus(ctx, goDriven)
	require.NoError(t, err)
	assert.Equal(t, []string{"approve", "reject"}, st.AvailableEvents, "Go reads the state PHP's action left")
	require.NoError(t, c.MachineEvent(ctx, goDriven, "approve", queuety.State{"approved": true}))

	// 3. Defined by Go, driven by PHP, its action run by a Go worker.
	phpDriven, err := goSessionMachine().Dispatch(ctx, c, queuety.State{"thread_id": 42})
	require.NoError(t, err)
	assert.Equal(t, "rejected: State 'awaiting_user' does not allow event 'approve'.", phpEvent(phpDriven, "approve", "[]"))
	assert.Equal(t, "ok", phpEvent(phpDriven, "user_message", "['message' => 'hi']"))
	w := worker.New(c, worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
	w.Registry().HandleMachineAction(`QueuetyGoInterop\PlanAction`, func(_ context.Context, in queuetytype.MachineInput) (queuety.State, error) {
		return queuety.State{"_event": "planned", "plan": fmt.Sprint("steps for ", in.State["message"])}, nil
	})
	_, err = w.RunOnce(ctx, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "ok", phpEvent(phpDriven, "approve", "['approved' => true]"))

	want := machineRows(t, c, prefix, phpOnly)
	require.Len(t, want, 1+16+1, "PHP's rows: the machine, 16 events, the action job")
	assert.Equal(t, want, machineRows(t, c, prefix, goDriven), "PHP machine driven by Go events")
	assert.Equal(t, want, machineRows(t, c, prefix, phpDriven), "Go machine driven by PHP events and run by Go")

	st, err = c.MachineStatus(ctx, phpDriven)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.MachineCompleted, st.Status)
	assert.Equal(t, map[string]any{"thread_id": int64(42), "message": "hi", "plan": "steps for hi", "approved": true}, st.State)
}

// TestLiveMachineActionStale: two machines whose entry action job's only
// attempt was claimed by a worker that died; Queuety PHP's stale recovery
// takes back one, the Go engine's the other. Both bury the job and fail
// the machine, leaving the same rows: the machine row (status, error),
// the action_failed and machine_failed events and the job.
func TestLiveMachineActionStale(t *testing.T) {
	ctx := context.Background()
	dsn, prefix := testdb.DSN(t)
	php := newLivePHP(t, prefix)
	c, err := queuety.Open(ctx, dsn, queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	def := func() *machine.Builder {
		return machine.New("stale").State("go").Action(`QueuetyGoInterop\PlanAction`, nil).On("planned", "end").
			Terminal("end", queuetytype.MachineCompleted).MaxAttempts(1)
	}
	died := func(id int64) {
		t.Helper()
		res, err := c.DB().Exec("UPDATE "+prefix+"queuety_jobs SET status = 'processing', attempts = 1, reserved_at = '2000-01-01 00:00:00' "+
			"WHERE handler = '__queuety_state_machine_action' AND payload LIKE CONCAT('{\"machine_id\":', ?, ',%')", id)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "machine %d's action job", id)
	}
	byPHP, err := def().Dispatch(ctx, c, queuety.State{"n": 1})
	require.NoError(t, err)
	byGo, err := def().Dispatch(ctx, c, queuety.State{"n": 1})
	require.NoError(t, err)

	died(byPHP)
	assert.Equal(t, "1", php.eval(`echo \Queuety\Queuety::recover_stale_jobs();`))
	died(byGo)
	n, err := c.RecoverStale(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	want := machineRows(t, c, prefix, byPHP)
	require.Len(t, want, 1+4+1, "PHP's rows: the machine, 4 events, the action job")
	assert.Contains(t, want[0], "status=failed")
	assert.Contains(t, want[0], "error_message=Stale: worker died without completing.")
	assert.Equal(t, want, machineRows(t, c, prefix, byGo), "the Go engine's stale recovery writes PHP's rows")
}
