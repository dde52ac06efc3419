package cli_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// TestPHPSpellingsAreAliases: every `wp queuety` verb whose queuety-worker
// command has another path runs that command, with the same flags and the
// same output: `list` is `job list`, `pause emails` is `queue pause
// emails`, `log --job 5` is `log list --job 5`, and so on.
func TestPHPSpellingsAreAliases(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = strconv.FormatInt(dispatchID(t, dsn, "send_email", `{"n":`+strconv.Itoa(i)+`}`, "--queue", "emails"), 10)
	}
	same := func(alias, target []string) string {
		t.Helper()
		got := mustRun(t, nil, append([]string{"--dsn", dsn}, alias...)...)
		want := mustRun(t, nil, append([]string{"--dsn", dsn}, target...)...)
		assert.Equal(t, want, got, "%v is %v", alias, target)
		return got
	}
	// Reads: the same output both ways.
	out := same([]string{"list", "--json", "--queue", "emails"}, []string{"job", "list", "--json", "--queue", "emails"})
	assert.Len(t, decode[[]map[string]any](t, out), 4, "list")
	same([]string{"inspect", ids[0], "--json"}, []string{"job", "show", ids[0], "--json"})
	same([]string{"--json", "log", "--job", ids[0]}, []string{"--json", "log", "list", "--job", ids[0]})
	same([]string{"log", "--json"}, []string{"log", "list", "--json"})
	same([]string{"log"}, []string{"log", "list"})
	// wp queuety's --format: json is --json, table the default.
	same([]string{"list", "--format=json"}, []string{"job", "list", "--json"})
	same([]string{"--format", "table", "list"}, []string{"job", "list"})
	wantFail(t, 2, `--format "csv": want table or json`, "--dsn", dsn, "list", "--format=csv")

	// Writes: each alias does what its command does.
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "bury", ids[1], "--json"))
	assert.Equal(t, "buried", res["status"], "bury: %v", res)
	res = decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "retry", ids[1], "--json"))
	assert.Equal(t, "pending", res["status"], "retry: %v", res)
	mustRun(t, nil, "--dsn", dsn, "bury", ids[2])
	mustRun(t, nil, "--dsn", dsn, "retry-buried")
	c := openClient(t, dsn)
	j, err := c.Job(context.Background(), mustInt(t, ids[2]))
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobPending, j.Status, "retry-buried requeued the job")
	mustRun(t, nil, "--dsn", dsn, "delete", ids[3])
	_, err = c.Job(context.Background(), mustInt(t, ids[3]))
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "delete")
	same([]string{"recover", "--json"}, []string{"job", "recover", "--json"})
	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "purge"), "Deleted 0 completed jobs", "purge")

	mustRun(t, nil, "--dsn", dsn, "pause", "emails")
	qs, err := c.QueueStates(context.Background())
	require.NoError(t, err)
	require.Len(t, qs, 1)
	assert.True(t, qs[0].Paused, "pause emails paused the queue: %+v", qs)
	mustRun(t, nil, "--dsn", dsn, "resume", "emails")
	qs, err = c.QueueStates(context.Background())
	require.NoError(t, err)
	for _, q := range qs {
		assert.False(t, q.Paused, "resume emails: %+v", qs)
	}

	// Help follows the alias; the group usage lists the spellings.
	assert.Contains(t, mustRun(t, nil, "help", "list"), "Usage: queuety-worker job list")
	assert.Contains(t, mustRun(t, nil, "help", "pause"), "Usage: queuety-worker queue pause NAME")
	root := mustRun(t, nil, "help")
	assert.Contains(t, root, "pause = queue pause")
	assert.Contains(t, root, "inspect = job show")
	// What is no alias stays an error.
	wantFail(t, 2, `unknown command "inpsect"`, "--dsn", dsn, "inpsect", ids[0])
	wantFail(t, 2, `unknown command "show"`, "--dsn", dsn, "show", ids[0])
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// TestJobPurgeDefaultsToSevenDays: `job purge` (and `purge`) without
// --older-than deletes the jobs completed more than 7 days ago, as
// wp queuety purge does with Queuety's default retention.
func TestJobPurgeDefaultsToSevenDays(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queuety.db")
	dsn := "sqlite://" + path
	mustRun(t, nil, "--dsn", dsn, "migrate")
	old := dispatchID(t, dsn, "h")
	recent := dispatchID(t, dsn, "h")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	now := time.Now().UTC()
	for id, at := range map[int64]time.Time{old: now.Add(-8 * 24 * time.Hour), recent: now.Add(-6 * 24 * time.Hour)} {
		_, err := db.Exec("UPDATE queuety_jobs SET status = 'completed', completed_at = ? WHERE id = ?", at.Format("2006-01-02 15:04:05"), id)
		require.NoError(t, err)
	}
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "purge", "--json"))
	assert.EqualValues(t, 1, res["deleted"], "purge: %v", res)
	before, err := time.Parse(time.RFC3339, res["completed_before"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, now.Add(-7*24*time.Hour), before, time.Minute, "7 days back")
	c := openClient(t, dsn)
	_, err = c.Job(context.Background(), old)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "the job completed 8 days ago is gone")
	_, err = c.Job(context.Background(), recent)
	assert.NoError(t, err, "the job completed 6 days ago stays")
	// log purge still wants --older-than, as wp queuety log purge.
	wantFail(t, 2, "--older-than is required", "--dsn", dsn, "log", "purge")
}

// TestWorkflowAnswerDataAndSignalFlags: approve, reject and input take the
// data as --data, and --signal sends a signal of that name, as
// wp queuety workflow approve|reject|input --data --signal do.
func TestWorkflowAnswerDataAndSignalFlags(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	one := func(s queuety.WorkflowStep) string {
		id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "ask", Steps: []queuety.WorkflowStep{s}}, nil)
		require.NoError(t, err)
		return strconv.FormatInt(id, 10)
	}
	approval := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"approval"}, HumanWait: "approval", ResultKey: "approval"})
	input := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"input"}, HumanWait: "input", ResultKey: "input"})
	custom := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"manager_ok"}, ResultKey: "ok"})
	rejectable := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"nope"}, ResultKey: "no"})
	mustRun(t, nil, "--dsn", dsn, "work", "--once")

	wantFail(t, 2, "give the data once", "--dsn", dsn, "workflow", "approve", approval, `{"a":1}`, "--data", `{"b":2}`)
	wantFail(t, 2, "must be a JSON object", "--dsn", dsn, "workflow", "input", input, "--data=[1]")
	wantFail(t, 2, "--signal is empty", "--dsn", dsn, "workflow", "approve", approval, "--signal", " ")
	mustRun(t, nil, "--dsn", dsn, "workflow", "approve", approval, `--data={"by":"ada"}`)
	mustRun(t, nil, "--dsn", dsn, "workflow", "input", input, "--data", `{"title":"Q3"}`)
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "approve", custom, "--signal", "manager_ok", "--data", `{"by":"bo"}`, "--json"))
	assert.Equal(t, "manager_ok", res["signal"], "approve --signal: %v", res)
	mustRun(t, nil, "--dsn", dsn, "workflow", "reject", rejectable, "--signal=nope")
	for id, key := range map[string]string{approval: "approval", input: "input", custom: "ok", rejectable: "no"} {
		w, err := c.Workflow(ctx, mustInt(t, id))
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, w.Status, "workflow %s (%s)", id, key)
	}
	st, err := c.State(ctx, mustInt(t, approval))
	require.NoError(t, err)
	assert.Equal(t, "ada", st["approval"].(map[string]any)["by"], "approve --data: %v", st)
	st, err = c.State(ctx, mustInt(t, input))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"title": "Q3"}, st["input"], "input --data")
}

// TestWorkflowTimelinePaging: `workflow timeline --limit --offset` pages
// the timeline as wp queuety workflow timeline does.
func TestWorkflowTimelinePaging(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(context.Background(), queuety.WorkflowDefinition{Name: "paged", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepWaitForSignal, Signals: []string{"go"}}}}, nil)
	require.NoError(t, err)
	sid := strconv.FormatInt(id, 10)
	mustRun(t, nil, "--dsn", dsn, "work", "--once")
	mustRun(t, nil, "--dsn", dsn, "signal", sid, "go")
	all := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid, "--json"))
	require.GreaterOrEqual(t, len(all), 3, "timeline: %v", all)
	page := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid, "--limit=1", "--offset=1", "--json"))
	assert.Equal(t, all[1:2], page, "--limit 1 --offset 1")
	page = decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid, "--limit", "2", "--json"))
	assert.Equal(t, all[:2], page, "--limit 2")
	text := mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid, "--limit", "1")
	assert.Contains(t, text, "more", "the text says more entries follow:\n%s", text)
	wantFail(t, 2, "--limit", "--dsn", dsn, "workflow", "timeline", sid, "--limit", "0")
}

// TestWorkflowStatusShowsWhatPHPShows: `workflow status` shows the step
// name, definition version and hash, idempotency key, the wait in
// progress, budget usage and artifacts, as wp queuety workflow status.
func TestWorkflowStatusShowsWhatPHPShows(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{
		Name: "review", Version: "v2", IdempotencyKey: "order-7", MaxTransitions: 10, MaxCostUnits: 50,
		Steps: []queuety.WorkflowStep{{Name: "await_ok", Type: queuetytype.StepWaitForSignal, Signals: []string{"ok", "override"}, Mode: queuetytype.WaitAny}},
	}, queuety.State{"order": 7})
	require.NoError(t, err)
	require.NoError(t, c.PutArtifact(ctx, id, "report", map[string]any{"rows": 3}))
	require.NoError(t, c.PutArtifact(ctx, id, "notes", "text"))
	mustRun(t, nil, "--dsn", dsn, "work", "--once")
	sid := strconv.FormatInt(id, 10)

	st := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "status", sid, "--json"))
	assert.Equal(t, "await_ok", st["step_name"], "%v", st)
	assert.Equal(t, "v2", st["definition_version"])
	assert.NotEmpty(t, st["definition_hash"])
	assert.Equal(t, "order-7", st["idempotency_key"])
	assert.Equal(t, map[string]any{"type": "signal", "waiting_for": []any{"ok", "override"}, "mode": "any"}, st["wait"])
	budget := st["budget"].(map[string]any)
	assert.EqualValues(t, 10, budget["max_transitions"], "%v", budget)
	assert.EqualValues(t, 50, budget["max_cost_units"], "%v", budget)
	assert.EqualValues(t, 0, budget["cost_units"], "%v", budget)
	assert.EqualValues(t, len(`{"order":7}`), budget["public_state_bytes"], "%v", budget)
	assert.EqualValues(t, 2, st["artifact_count"])
	assert.ElementsMatch(t, []any{"report", "notes"}, st["artifact_keys"])
	assert.Equal(t, map[string]any{"order": float64(7)}, st["state"])

	text := mustRun(t, nil, "--dsn", dsn, "workflow", "status", sid)
	for _, want := range []string{"step name", "await_ok", "version", "v2", "definition hash", "idempotency key", "order-7",
		"waiting for", "signal: ok, override (any)", "budget", "transitions 0/10", "cost units 0/50", "artifacts", "2 "} {
		assert.Contains(t, text, want, "workflow status:\n%s", text)
	}
	assert.True(t, strings.Contains(text, "report") && strings.Contains(text, "notes"), "artifact keys:\n%s", text)
}
