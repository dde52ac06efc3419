package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// scheduleID runs `schedule add` and returns the printed id.
func scheduleID(t *testing.T, dsn string, args ...string) int64 {
	t.Helper()
	out := mustRun(t, nil, append([]string{"--dsn", dsn, "schedule", "add"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "schedule add printed %q, not an id", out)
	return id
}

// rfc3339 formats a time as the CLI prints it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func getSchedule(t *testing.T, c *queuety.Client, id int64) *driver.Schedule {
	t.Helper()
	s, err := c.ScheduleByID(context.Background(), id)
	require.NoError(t, err, "schedule %d", id)
	return s
}

type scheduleRow struct {
	ID          int64           `json:"id"`
	Handler     string          `json:"handler"`
	Kind        string          `json:"kind"`
	WorkflowKey string          `json:"workflow_key"`
	Type        string          `json:"type"`
	Expression  string          `json:"expression"`
	Queue       string          `json:"queue"`
	Overlap     string          `json:"overlap"`
	CatchUp     string          `json:"catch_up"`
	Enabled     bool            `json:"enabled"`
	LastRun     string          `json:"last_run"`
	NextRun     string          `json:"next_run"`
	LastRunID   int64           `json:"last_run_id"`
	PendingRun  string          `json:"pending_run"`
	Payload     json.RawMessage `json:"payload"`
}

func TestScheduleAddAndList(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()

	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "schedule", "list"), "No schedules", "empty list")
	assert.Equal(t, "[]", strings.TrimSpace(mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json")), "empty list --json")

	cleanup := scheduleID(t, dsn, "cleanup_sessions", `{"older_than_days": 30}`, "--cron", "0 3 * * *",
		"--queue", "maintenance", "--overlap", "skip", "--catch-up", "none")
	c := openClient(t, dsn)
	s := getSchedule(t, c, cleanup)
	assert.Equal(t, "cleanup_sessions", s.Handler, "cron schedule handler")
	assert.Equal(t, driver.ScheduleCron, s.ExpressionType, "cron schedule expression type")
	assert.Equal(t, "0 3 * * *", s.Expression, "cron schedule expression")
	assert.Equal(t, "maintenance", s.Queue, "cron schedule queue")
	assert.Equal(t, driver.OverlapSkip, s.Overlap, "cron schedule overlap")
	assert.Equal(t, driver.CatchUpNone, s.CatchUp, "cron schedule catch-up")
	assert.True(t, s.Enabled, "cron schedule is disabled")
	assert.False(t, s.IsWorkflow(), "cron schedule is a workflow schedule")
	next := s.NextRun.UTC()
	assert.Equal(t, 3, next.Hour(), "next run of '0 3 * * *' = %s", next)
	assert.Zero(t, next.Minute(), "next run of '0 3 * * *' = %s", next)
	assert.True(t, next.After(time.Now()), "next run of '0 3 * * *' = %s is not in the future", next)
	assert.LessOrEqual(t, time.Until(next), 24*time.Hour, "next run of '0 3 * * *' = %s", next)
	assert.Equal(t, `{"older_than_days":30}`, string(s.Payload), "payload")

	// --json prints {"id": N}; --every is stored as Queuety writes intervals.
	feed := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "schedule", "add", "sync_feed", "--every", "90s", "--json"))["id"]
	fs := getSchedule(t, c, feed)
	assert.NotZero(t, feed, "every schedule id")
	assert.Equal(t, "90 seconds", fs.Expression, "every schedule expression")
	assert.Equal(t, driver.ScheduleInterval, fs.ExpressionType, "every schedule expression type")
	assert.Equal(t, queuetytype.DefaultQueue, fs.Queue, "every schedule queue")
	assert.Equal(t, driver.OverlapAllow, fs.Overlap, "every schedule overlap")
	assert.Equal(t, driver.CatchUpOnce, fs.CatchUp, "every schedule catch-up")
	assert.Equal(t, "[]", string(fs.Payload), "every schedule payload")
	digest := scheduleID(t, dsn, `App\Jobs\Digest`, "--interval", "15 minutes", "--disabled", "--overlap", "buffer", "--catch-up", "all")
	ds := getSchedule(t, c, digest)
	assert.Equal(t, "15 minutes", ds.Expression, "interval schedule expression")
	assert.Equal(t, driver.ScheduleInterval, ds.ExpressionType, "interval schedule expression type")
	assert.False(t, ds.Enabled, "interval schedule added with --disabled is enabled")
	assert.Equal(t, driver.OverlapBuffer, ds.Overlap, "interval schedule overlap")
	assert.Equal(t, driver.CatchUpAll, ds.CatchUp, "interval schedule catch-up")

	// Adding the same handler again updates the schedule in place.
	before := getSchedule(t, c, feed)
	again := scheduleID(t, dsn, "sync_feed", `{"feed": 7}`, "--every", "90s", "--queue", "feeds", "--overlap", "skip")
	assert.Equal(t, feed, again, "id returned by the second add of sync_feed")
	after := getSchedule(t, c, feed)
	assert.Equal(t, "feeds", after.Queue, "updated schedule queue")
	assert.Equal(t, driver.OverlapSkip, after.Overlap, "updated schedule overlap")
	assert.Equal(t, `{"feed":7}`, string(after.Payload), "updated schedule payload")
	assert.WithinDuration(t, before.NextRun, after.NextRun, 0, "same expression: next run changed")
	assert.WithinDuration(t, before.CreatedAt, after.CreatedAt, 0, "same expression: created at changed")
	again = scheduleID(t, dsn, "sync_feed", "--cron", "*/5 * * * *", "--disabled")
	assert.Equal(t, feed, again, "id returned by the third add of sync_feed")
	cs := getSchedule(t, c, feed)
	assert.Equal(t, driver.ScheduleCron, cs.ExpressionType, "schedule after changing to cron = %+v", cs)
	assert.False(t, cs.Enabled, "schedule after changing to cron = %+v", cs)
	assert.Zero(t, cs.NextRun.UTC().Minute()%5, "schedule after changing to cron = %+v", cs)
	assert.Equal(t, queuetytype.DefaultQueue, cs.Queue, "schedule after changing to cron = %+v", cs)
	scheduleID(t, dsn, "sync_feed", "--cron", "*/5 * * * *")
	assert.False(t, getSchedule(t, c, feed).Enabled, "adding again without --disabled switched a disabled schedule back on")

	// A workflow schedule (made from code) is listed as workflow:KEY.
	def := queuety.WorkflowDefinition{Name: "nightly_import", Queue: "imports", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "imp.fetch"}}}
	wfID, err := c.ScheduleWorkflow(def, queuety.State{"source": "s3"}).Cron("@hourly").Save(ctx)
	require.NoError(t, err)

	rows := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"))
	require.Len(t, rows, 4, "schedule list --json rows")
	byID := map[int64]scheduleRow{}
	for _, r := range rows {
		byID[r.ID] = r
		_, err := time.Parse(time.RFC3339, r.NextRun)
		assert.NoError(t, err, "schedule %d next_run %q is not RFC 3339", r.ID, r.NextRun)
		assert.True(t, strings.HasSuffix(r.NextRun, "Z"), "schedule %d next_run %q is not UTC", r.ID, r.NextRun)
	}
	r := byID[cleanup]
	assert.Equal(t, "cleanup_sessions", r.Handler, "list --json cleanup = %+v", r)
	assert.Equal(t, "job", r.Kind, "list --json cleanup = %+v", r)
	assert.Empty(t, r.WorkflowKey, "list --json cleanup = %+v", r)
	assert.Equal(t, "cron", r.Type, "list --json cleanup = %+v", r)
	assert.Equal(t, "maintenance", r.Queue, "list --json cleanup = %+v", r)
	assert.Equal(t, "skip", r.Overlap, "list --json cleanup = %+v", r)
	assert.Equal(t, "none", r.CatchUp, "list --json cleanup = %+v", r)
	assert.True(t, r.Enabled, "list --json cleanup = %+v", r)
	assert.JSONEq(t, `{"older_than_days":30}`, string(r.Payload), "list --json cleanup payload")
	r = byID[wfID]
	assert.Equal(t, "workflow", r.Kind, "list --json workflow schedule = %+v", r)
	assert.Equal(t, "nightly_import", r.WorkflowKey, "list --json workflow schedule = %+v", r)
	assert.Equal(t, "__queuety_workflow:nightly_import", r.Handler, "list --json workflow schedule = %+v", r)
	assert.Equal(t, "imports", r.Queue, "list --json workflow schedule = %+v", r)
	assert.Equal(t, "0 * * * *", r.Expression, "list --json workflow schedule = %+v", r)

	out := mustRun(t, nil, "--dsn", dsn, "schedule", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, "schedule list: want a header and 4 rows:\n%s", out)
	for _, want := range []string{"ID", "HANDLER", "TYPE", "EXPRESSION", "QUEUE", "OVERLAP", "CATCH-UP", "ENABLED", "LAST RUN", "NEXT RUN"} {
		assert.Contains(t, lines[0], want, "header")
	}
	rowOf := func(id int64) string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.FormatInt(id, 10) {
				return l
			}
		}
		require.FailNow(t, "no row", "no row for schedule %d:\n%s", id, out)
		return ""
	}
	for id, want := range map[int64][]string{
		cleanup: {"cleanup_sessions", "cron", "0 3 * * *", "maintenance", "skip", "none", "yes", rfc3339(getSchedule(t, c, cleanup).NextRun)},
		feed:    {"sync_feed", "*/5 * * * *", "no"},
		digest:  {`App\Jobs\Digest`, "interval", "15 minutes", "buffer", "all", "no"},
		wfID:    {"workflow:nightly_import", "0 * * * *", "imports"},
	} {
		row := rowOf(id)
		for _, w := range want {
			assert.Contains(t, row, w, "row of schedule %d", id)
		}
	}
	assert.NotContains(t, out, "__queuety_workflow", "list shows the internal handler")
}

func TestScheduleAddErrors(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"h"}, "give one of --cron, --every or --interval"},
		{[]string{"h", "--cron", "* * * * *", "--every", "1m"}, "give only one of"},
		{[]string{"h", "--every", "1m", "--interval", "1 hour"}, "not --every and --interval"},
		{[]string{"h", "--cron", "* * * * *", "--every", "1m", "--interval", "5 minutes"}, "give only one of"},
		{[]string{"h", "--cron", "bad"}, `--cron: invalid cron expression "bad"`},
		{[]string{"h", "--cron", "61 * * * *"}, "--cron: invalid cron expression"},
		{[]string{"h", "--cron", "0 0 30 2 *"}, "never fires"},
		{[]string{"h", "--cron", ""}, "--cron is empty"},
		{[]string{"h", "--interval", "3 months"}, "no fixed length"},
		{[]string{"h", "--interval", "soon"}, `--interval: invalid interval "soon"`},
		{[]string{"h", "--interval", " "}, "--interval is empty"},
		{[]string{"h", "--every", "500ms"}, "--every must be at least 1s"},
		{[]string{"h", "--every", "-1m"}, "--every must be at least 1s"},
		{[]string{"h", "--every", "often"}, "invalid duration"},
		{[]string{"h", "--every", "1m", "--overlap", "never"}, `--overlap "never"`},
		{[]string{"h", "--every", "1m", "--catch-up", "some"}, `--catch-up "some"`},
		{[]string{"h", "--every", "1m", "--queue", ""}, "--queue is empty"},
		{[]string{"h", "{bad", "--every", "1m"}, "not valid JSON"},
		{[]string{"h", "[1]", "--every", "1m"}, "must be a JSON object"},
		{[]string{" ", "--every", "1m"}, "HANDLER is empty"},
		{[]string{"--every", "1m"}, "missing arguments"},
		{[]string{"h", "{}", "extra", "--every", "1m"}, "unexpected argument"},
		{[]string{"h", "--every", "1m", "--bogus"}, "flag provided but not defined"},
		// Errors the library reports (queuety.ErrInvalidArgument) are usage errors too.
		{[]string{"__queuety_mine", "--every", "1m"}, "reserved"},
		{[]string{"h", "--every", "1m", "--queue", strings.Repeat("q", 65)}, "queue name must be 1-64 characters"},
		{[]string{"h", `{"__queuety_callback": 1}`, "--every", "1m"}, "reserved"},
	} {
		r := wantFail(t, 2, tc.want, append([]string{"--dsn", dsn, "schedule", "add"}, tc.args...)...)
		assert.Zero(t, strings.Count(strings.TrimSpace(r.stderr), "\n"), "%v: error is more than one line:\n%s", tc.args, r.stderr)
	}
	// Nothing was written by the failed adds.
	list, err := openClient(t, dsn).Schedules(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list, "failed adds wrote schedules")
}

func TestScheduleOperations(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	sid := func(id int64) string { return strconv.FormatInt(id, 10) }

	// enable / disable.
	report := scheduleID(t, dsn, "report", `{"kind": "weekly"}`, "--cron", "0 6 * * 1", "--queue", "reports")
	out := mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(report))
	assert.Contains(t, out, "Schedule "+sid(report)+" (report) disabled", "disable output")
	assert.False(t, getSchedule(t, c, report).Enabled, "disabled schedule is enabled")
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "enable", sid(report))
	s := getSchedule(t, c, report)
	assert.True(t, s.Enabled, "enabled schedule = %+v", s)
	assert.True(t, s.NextRun.After(time.Now()), "enabled schedule = %+v: next run is not in the future", s)
	assert.Contains(t, out, "enabled; next run "+rfc3339(s.NextRun), "enable output")
	en := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(report), "--json"))
	assert.Equal(t, false, en["enabled"], "disable --json = %v", en)
	assert.Equal(t, float64(report), en["id"], "disable --json = %v", en)

	// run-now fires a disabled schedule too, and leaves its next run alone.
	before := getSchedule(t, c, report)
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(report))
	s = getSchedule(t, c, report)
	require.NotZero(t, s.LastRunRef, "run-now output %q, schedule %+v", out, s)
	require.Contains(t, out, "Schedule "+sid(report)+" dispatched job "+sid(s.LastRunRef), "run-now output")
	assert.WithinDuration(t, before.NextRun, s.NextRun, 0, "run-now changed the next run")
	assert.False(t, s.LastRun.IsZero(), "run-now left the last run empty")
	reportJob := s.LastRunRef
	j, err := c.Job(ctx, reportJob)
	require.NoError(t, err, "dispatched job")
	assert.Equal(t, "report", j.Handler, "dispatched job = %+v", j)
	assert.Equal(t, "reports", j.Queue, "dispatched job = %+v", j)
	assert.Equal(t, queuetytype.JobPending, j.Status, "dispatched job = %+v", j)
	assert.Contains(t, string(j.Payload), `"kind":"weekly"`, "dispatched job payload")

	// Overlap skip: the second run-now is held back while the first job is pending.
	skip := scheduleID(t, dsn, "exclusive", "--every", "1h", "--overlap", "skip")
	first := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip), "--json"))
	require.Equal(t, false, first["held_back"], "first run-now --json = %v", first)
	require.Equal(t, "job", first["kind"], "first run-now --json = %v", first)
	require.NotZero(t, first["dispatched_id"].(float64), "first run-now --json = %v", first)
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip))
	assert.Contains(t, out, "held back by its overlap policy (skip)", "held-back run-now output")
	assert.Contains(t, out, "job "+strconv.FormatFloat(first["dispatched_id"].(float64), 'f', 0, 64), "held-back run-now output")
	held := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip), "--json"))
	assert.Equal(t, true, held["held_back"], "held-back run-now --json = %v", held)
	assert.Equal(t, 0.0, held["dispatched_id"], "held-back run-now --json = %v", held)
	assert.Equal(t, false, held["buffered"], "held-back run-now --json = %v", held)
	assert.Equal(t, first["dispatched_id"], held["active_run_id"], "held-back run-now --json = %v", held)
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "exclusive"})
	require.NoError(t, err)
	assert.Len(t, jobs, 1, "jobs dispatched by the skip schedule")

	// Overlap buffer: the held-back firing waits for the active run.
	buf := scheduleID(t, dsn, "buffered", "--every", "1h", "--overlap", "buffer")
	mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(buf))
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(buf))
	assert.Contains(t, out, "held back by its overlap policy (buffer)", "buffered run-now output")
	assert.Contains(t, out, "dispatched when that run ends", "buffered run-now output")
	bs := getSchedule(t, c, buf)
	assert.False(t, bs.PendingRun.IsZero(), "buffered schedule has no pending run: %+v", bs)

	// run-now of a workflow schedule dispatches a workflow.
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "n.step"}}}
	wfSched, err := c.ScheduleWorkflow(def, queuety.State{"n": 1}).Every(time.Hour).Save(ctx)
	require.NoError(t, err)
	wr := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(wfSched), "--json"))
	require.Equal(t, "workflow", wr["kind"], "workflow run-now --json = %v", wr)
	require.Equal(t, false, wr["held_back"], "workflow run-now --json = %v", wr)
	wf, err := c.Workflow(ctx, int64(wr["dispatched_id"].(float64)))
	require.NoError(t, err, "dispatched workflow")
	assert.Equal(t, "nightly", wf.Name, "dispatched workflow = %+v", wf)
	assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "dispatched workflow = %+v", wf)
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(wfSched))
	assert.Contains(t, out, "disabled", "disable workflow schedule output")
	assert.False(t, getSchedule(t, c, wfSched).Enabled, "disabled workflow schedule is enabled")

	// remove.
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "remove", sid(report))
	assert.Contains(t, out, "Schedule "+sid(report)+" (report) removed", "remove output")
	_, err = c.ScheduleByID(ctx, report)
	assert.Error(t, err, "schedule %d still exists after remove", report)
	_, err = c.Job(ctx, reportJob)
	assert.NoError(t, err, "remove deleted the dispatched job")
	rm := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "remove", sid(wfSched), "--json"))
	assert.Equal(t, true, rm["removed"], "remove --json = %v", rm)
	rows := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"))
	assert.Len(t, rows, 2, "schedule list after two removes")

	// Missing schedules are runtime errors (exit 1); bad ids are usage errors.
	for _, cmd := range []string{"remove", "enable", "disable", "run-now"} {
		wantFail(t, 1, "not found", "--dsn", dsn, "schedule", cmd, sid(report))
		// Every verb also takes a handler name: an unknown one is not found.
		wantFail(t, 1, `schedule "abc": not found`, "--dsn", dsn, "schedule", cmd, "abc")
		wantFail(t, 1, `schedule "workflow:nope": not found`, "--dsn", dsn, "schedule", cmd, "workflow:nope")
		wantFail(t, 2, "positive integer", "--dsn", dsn, "schedule", cmd, "0")
		wantFail(t, 2, "missing arguments", "--dsn", dsn, "schedule", cmd)
		wantFail(t, 2, "unexpected argument", "--dsn", dsn, "schedule", cmd, "1", "2")
	}
	wantFail(t, 2, "no subcommand given", "--dsn", dsn, "schedule")
	wantFail(t, 2, `unknown command "pause"`, "--dsn", dsn, "schedule", "pause", "1")
}

// TestScheduleVerbsTakeNames: every schedule verb takes a schedule id, a
// handler name or workflow:KEY, and --handler reads digits as a name.
func TestScheduleVerbsTakeNames(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	report := scheduleID(t, dsn, "report", "--every", "1h")
	digits := scheduleID(t, dsn, "2024", "--every", "1h")
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "n.step"}}}
	nightly, err := c.ScheduleWorkflow(def, nil).Every(time.Hour).Save(ctx)
	require.NoError(t, err)

	out := mustRun(t, nil, "--dsn", dsn, "schedule", "disable", "report")
	assert.Contains(t, out, fmt.Sprintf("Schedule %d (report) disabled", report), "disable by handler")
	assert.False(t, getSchedule(t, c, report).Enabled, "disabled by handler")
	mustRun(t, nil, "--dsn", dsn, "schedule", "enable", "report")
	assert.True(t, getSchedule(t, c, report).Enabled, "enabled by handler")
	run := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", "report", "--json"))
	assert.Equal(t, float64(report), run["id"], "run-now by handler: %v", run)
	assert.NotZero(t, run["dispatched_id"], "run-now by handler: %v", run)

	mustRun(t, nil, "--dsn", dsn, "schedule", "disable", "workflow:nightly")
	assert.False(t, getSchedule(t, c, nightly).Enabled, "disabled by workflow:KEY")
	run = decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", "workflow:nightly", "--json"))
	assert.Equal(t, "workflow", run["kind"], "run-now by workflow:KEY: %v", run)

	mustRun(t, nil, "--dsn", dsn, "schedule", "disable", "--handler", "2024")
	assert.False(t, getSchedule(t, c, digits).Enabled, "disabled by an all-digit handler with --handler")
	mustRun(t, nil, "--dsn", dsn, "schedule", "remove", "workflow:nightly")
	_, err = c.ScheduleByID(ctx, nightly)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "removed by workflow:KEY")
}

func TestScheduleHelp(t *testing.T) {
	t.Parallel()
	assert.Contains(t, mustRun(t, nil, "help"), "schedule", "help does not list schedule")
	out := mustRun(t, nil, "schedule", "-h")
	for _, want := range []string{"Usage: queuety-worker schedule COMMAND", "list", "add HANDLER [JSON]", "remove SCHEDULE", "enable SCHEDULE", "disable SCHEDULE", "run-now SCHEDULE", "Examples:"} {
		assert.Contains(t, out, want, "schedule -h")
	}
	for _, args := range [][]string{{"schedule", "add", "-h"}, {"help", "schedule", "run-now"}, {"schedule", "list", "--help"}} {
		r := run(t, nil, args...)
		assert.Equal(t, 0, r.code, "%v: exit code\n%s%s", args, r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "Usage: queuety-worker schedule", "%v", args)
		assert.Contains(t, r.stdout, "Examples:", "%v", args)
	}
	out = mustRun(t, nil, "schedule", "add", "-h")
	for _, want := range []string{"--cron", "--every", "--interval", "--catch-up"} {
		assert.Contains(t, out, want, "schedule add -h")
	}
}

// A due schedule fires in `work --once` and the same run executes its job.
func TestScheduleFiresInWorkOnce(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	var ran atomic.Int64
	var got atomic.Value
	reg := queuety.NewRegistry()
	reg.HandleJob("sched.tick", func(ctx context.Context, p queuety.Payload) error {
		ran.Add(1)
		got.Store(p.String("who"))
		return nil
	})

	id := scheduleID(t, dsn, "sched.tick", `{"who": "cron"}`, "--every", "1s")
	c := openClient(t, dsn)

	s := getSchedule(t, c, id)
	require.Zero(t, s.LastRunRef, "fresh schedule = %+v", s)
	require.False(t, s.NextRun.IsZero(), "fresh schedule = %+v", s)
	// Wait until the next run has passed.
	deadline := time.Now().Add(10 * time.Second)
	for !time.Now().After(s.NextRun) {
		require.False(t, time.Now().After(deadline), "next run %s did not pass", s.NextRun)
		time.Sleep(min(time.Until(s.NextRun)+10*time.Millisecond, 200*time.Millisecond))
	}

	out := mustRun(t, reg, "--dsn", dsn, "work", "--once", "--max-time", "10s", "--json")
	sum := decode[map[string]any](t, out)
	assert.Equal(t, 1.0, sum["claimed"], "work --once = %v", sum)
	assert.Equal(t, 1.0, sum["succeeded"], "work --once = %v", sum)
	assert.Equal(t, int64(1), ran.Load(), "sched.tick runs")
	assert.Equal(t, "cron", got.Load(), "sched.tick who")
	after := getSchedule(t, c, id)
	require.NotZero(t, after.LastRunRef, "schedule after work --once = %+v", after)
	require.False(t, after.LastRun.IsZero(), "schedule after work --once = %+v", after)
	require.True(t, after.NextRun.After(s.NextRun), "schedule after work --once = %+v: next run did not move on", after)
	j, err := c.Job(ctx, after.LastRunRef)
	require.NoError(t, err, "fired job")
	assert.Equal(t, "sched.tick", j.Handler, "fired job = %+v", j)
	assert.Equal(t, queuetytype.JobCompleted, j.Status, "fired job = %+v", j)
	assert.Equal(t, 1, j.Attempts, "fired job = %+v", j)
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "sched.tick"})
	require.NoError(t, err)
	assert.Len(t, jobs, 1, "sched.tick jobs")

	// The list shows the run.
	row := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"))[0]
	assert.NotEmpty(t, row.LastRun, "list after firing = %+v", row)
	assert.Equal(t, after.LastRunRef, row.LastRunID, "list after firing = %+v", row)
}
