package cli_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestMachineCommands: machine list, status, event, timeline, trace and state-at
// on a machine dispatched by the Go builder; a rejected event exits 1 and
// is recorded on the timeline.
func TestMachineCommands(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	c := openClient(t, dsn)
	id, err := machine.New("ticket").Version("v1").
		State("open").On("assign", "assigned").
		State("assigned").On("close", "closed").
		Terminal("closed", queuetytype.MachineCompleted).
		Dispatch(context.Background(), c, map[string]any{"n": 1})
	require.NoError(t, err)
	sid := strconv.FormatInt(id, 10)

	rows := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "machine", "list", "--json"))
	require.Len(t, rows, 1)
	assert.Equal(t, "ticket", rows[0]["name"])
	assert.Equal(t, []any{"assign"}, rows[0]["available_events"])
	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "machine", "list"), "waiting_event")

	st := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "machine", "event", sid, "assign", `{"to":"ada"}`, "--json"))
	assert.Equal(t, "assigned", st["current_state"])
	assert.Equal(t, map[string]any{"n": float64(1), "to": "ada"}, st["state"])
	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "machine", "status", sid), "available events  close")

	r := run(t, nil, "--dsn", dsn, "machine", "event", sid, "assign")
	assert.Equal(t, 1, r.code, "rejected event: %s", r.stderr)
	assert.Contains(t, r.stderr, "State 'assigned' does not allow event 'assign'.")
	wantFail(t, 2, "empty", "--dsn", dsn, "machine", "event", sid, " ")
	wantFail(t, 2, "--status", "--dsn", dsn, "machine", "list", "--status", "sleeping")

	evs := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "machine", "timeline", sid, "--json"))
	var kinds []any
	for _, ev := range evs {
		kinds = append(kinds, ev["event"])
	}
	assert.Equal(t, []any{"machine_started", "machine_waiting", "event_received", "transitioned", "machine_waiting",
		"event_received", "event_rejected"}, kinds)
	assert.Equal(t, "State 'assigned' does not allow event 'assign'.", evs[6]["error_message"])
	first := strconv.FormatInt(int64(evs[0]["id"].(float64)), 10)
	assert.JSONEq(t, `{"n":1}`, mustRun(t, nil, "--dsn", dsn, "machine", "state-at", sid, first))
	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "machine", "timeline", sid), "event_rejected")

	for _, args := range [][]string{{"machine", "trace", sid}, {"machine", "trace", sid, "--json"}} {
		trace := decode[map[string]any](t, mustRun(t, nil, append([]string{"--dsn", dsn}, args...)...))
		m, ok := trace["machine"].(map[string]any)
		require.True(t, ok, "trace machine: %v", trace)
		assert.Equal(t, float64(id), m["id"])
		assert.Len(t, trace["events"], len(evs), "every event")
		assert.Contains(t, trace, "states")
	}
	wantFail(t, 1, "not found", "--dsn", dsn, "machine", "trace", "999999")
	wantFail(t, 2, "", "--dsn", dsn, "machine", "trace")
}
