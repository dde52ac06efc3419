package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// scheduleID runs `schedule add` and returns the printed id.
func scheduleID(t *testing.T, dsn string, args ...string) int64 {
	t.Helper()
	out := mustRun(t, nil, append([]string{"--dsn", dsn, "schedule", "add"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("schedule add printed %q, not an id", out)
	}
	return id
}

// compact returns JSON text on one line.
func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.String()
}

// rfc3339 formats a time as the CLI prints it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func getSchedule(t *testing.T, c *queuety.Client, id int64) *driver.Schedule {
	t.Helper()
	s, err := c.ScheduleByID(context.Background(), id)
	if err != nil {
		t.Fatalf("schedule %d: %v", id, err)
	}
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

	if out := mustRun(t, nil, "--dsn", dsn, "schedule", "list"); !strings.Contains(out, "No schedules") {
		t.Errorf("empty list:\n%s", out)
	}
	if out := mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("empty list --json: %q", out)
	}

	cleanup := scheduleID(t, dsn, "cleanup_sessions", `{"older_than_days": 30}`, "--cron", "0 3 * * *",
		"--queue", "maintenance", "--overlap", "skip", "--catch-up", "none")
	c := openClient(t, dsn)
	s := getSchedule(t, c, cleanup)
	if s.Handler != "cleanup_sessions" || s.ExpressionType != driver.ScheduleCron || s.Expression != "0 3 * * *" ||
		s.Queue != "maintenance" || s.Overlap != driver.OverlapSkip || s.CatchUp != driver.CatchUpNone || !s.Enabled || s.IsWorkflow() {
		t.Errorf("cron schedule = %+v", s)
	}
	if next := s.NextRun.UTC(); next.Hour() != 3 || next.Minute() != 0 || !next.After(time.Now()) || next.Sub(time.Now()) > 24*time.Hour {
		t.Errorf("next run of '0 3 * * *' = %s", next)
	}
	if string(s.Payload) != `{"older_than_days":30}` {
		t.Errorf("payload = %s", s.Payload)
	}

	// --json prints {"id": N}; --every is stored as Queuety writes intervals.
	feed := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "schedule", "add", "sync_feed", "--every", "90s", "--json"))["id"]
	if s := getSchedule(t, c, feed); feed == 0 || s.Expression != "90 seconds" || s.ExpressionType != driver.ScheduleInterval ||
		s.Queue != queuety.DefaultQueue || s.Overlap != driver.OverlapAllow || s.CatchUp != driver.CatchUpOnce || string(s.Payload) != "[]" {
		t.Errorf("every schedule %d = %+v (payload %s)", feed, s, s.Payload)
	}
	digest := scheduleID(t, dsn, `App\Jobs\Digest`, "--interval", "15 minutes", "--disabled", "--overlap", "buffer", "--catch-up", "all")
	if s := getSchedule(t, c, digest); s.Expression != "15 minutes" || s.ExpressionType != driver.ScheduleInterval || s.Enabled ||
		s.Overlap != driver.OverlapBuffer || s.CatchUp != driver.CatchUpAll {
		t.Errorf("interval schedule = %+v", s)
	}

	// Adding the same handler again updates the schedule in place.
	before := getSchedule(t, c, feed)
	if again := scheduleID(t, dsn, "sync_feed", `{"feed": 7}`, "--every", "90s", "--queue", "feeds", "--overlap", "skip"); again != feed {
		t.Errorf("second add of sync_feed returned id %d, want %d", again, feed)
	}
	after := getSchedule(t, c, feed)
	if after.Queue != "feeds" || after.Overlap != driver.OverlapSkip || string(after.Payload) != `{"feed":7}` {
		t.Errorf("updated schedule = %+v (payload %s)", after, after.Payload)
	}
	if !after.NextRun.Equal(before.NextRun) || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("same expression: next run %s -> %s, created %s -> %s", before.NextRun, after.NextRun, before.CreatedAt, after.CreatedAt)
	}
	if again := scheduleID(t, dsn, "sync_feed", "--cron", "*/5 * * * *", "--disabled"); again != feed {
		t.Errorf("third add of sync_feed returned id %d, want %d", again, feed)
	}
	if s := getSchedule(t, c, feed); s.ExpressionType != driver.ScheduleCron || s.Enabled || s.NextRun.UTC().Minute()%5 != 0 || s.Queue != queuety.DefaultQueue {
		t.Errorf("schedule after changing to cron = %+v", s)
	}
	scheduleID(t, dsn, "sync_feed", "--cron", "*/5 * * * *")
	if getSchedule(t, c, feed).Enabled {
		t.Error("adding again without --disabled switched a disabled schedule back on")
	}

	// A workflow schedule (made from code) is listed as workflow:KEY.
	def := queuety.WorkflowDefinition{Name: "nightly_import", Queue: "imports", Steps: []queuety.WorkflowStep{{Type: queuety.StepSingle, Handler: "imp.fetch"}}}
	wfID, err := c.ScheduleWorkflow(def, queuety.State{"source": "s3"}).Cron("@hourly").Save(ctx)
	if err != nil {
		t.Fatal(err)
	}

	rows := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"))
	if len(rows) != 4 {
		t.Fatalf("schedule list --json has %d rows, want 4: %+v", len(rows), rows)
	}
	byID := map[int64]scheduleRow{}
	for _, r := range rows {
		byID[r.ID] = r
		if _, err := time.Parse(time.RFC3339, r.NextRun); err != nil || !strings.HasSuffix(r.NextRun, "Z") {
			t.Errorf("schedule %d next_run %q is not UTC RFC 3339", r.ID, r.NextRun)
		}
	}
	if r := byID[cleanup]; r.Handler != "cleanup_sessions" || r.Kind != "job" || r.WorkflowKey != "" || r.Type != "cron" ||
		r.Queue != "maintenance" || r.Overlap != "skip" || r.CatchUp != "none" || !r.Enabled || compact(t, r.Payload) != `{"older_than_days":30}` {
		t.Errorf("list --json cleanup = %+v", r)
	}
	if r := byID[wfID]; r.Kind != "workflow" || r.WorkflowKey != "nightly_import" || r.Handler != "__queuety_workflow:nightly_import" ||
		r.Queue != "imports" || r.Expression != "0 * * * *" {
		t.Errorf("list --json workflow schedule = %+v", r)
	}

	out := mustRun(t, nil, "--dsn", dsn, "schedule", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("schedule list has %d lines, want a header and 4 rows:\n%s", len(lines), out)
	}
	for _, want := range []string{"ID", "HANDLER", "TYPE", "EXPRESSION", "QUEUE", "OVERLAP", "CATCH-UP", "ENABLED", "LAST RUN", "NEXT RUN"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("header has no %q: %s", want, lines[0])
		}
	}
	rowOf := func(id int64) string {
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.FormatInt(id, 10) {
				return l
			}
		}
		t.Fatalf("no row for schedule %d:\n%s", id, out)
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
			if !strings.Contains(row, w) {
				t.Errorf("row of schedule %d has no %q: %s", id, w, row)
			}
		}
	}
	if strings.Contains(out, "__queuety_workflow") {
		t.Errorf("list shows the internal handler:\n%s", out)
	}
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
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
			t.Errorf("%v: error is %d lines:\n%s", tc.args, n+1, r.stderr)
		}
	}
	// Nothing was written by the failed adds.
	list, err := openClient(t, dsn).Schedules(context.Background())
	if err != nil || len(list) != 0 {
		t.Errorf("failed adds wrote %d schedules (%v)", len(list), err)
	}
}

func TestScheduleOperations(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	sid := func(id int64) string { return strconv.FormatInt(id, 10) }

	// enable / disable.
	report := scheduleID(t, dsn, "report", `{"kind": "weekly"}`, "--cron", "0 6 * * 1", "--queue", "reports")
	if out := mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(report)); !strings.Contains(out, "Schedule "+sid(report)+" disabled") {
		t.Errorf("disable output: %s", out)
	}
	if s := getSchedule(t, c, report); s.Enabled {
		t.Errorf("disabled schedule is enabled: %+v", s)
	}
	out := mustRun(t, nil, "--dsn", dsn, "schedule", "enable", sid(report))
	s := getSchedule(t, c, report)
	if !s.Enabled || !s.NextRun.After(time.Now()) || !strings.Contains(out, "enabled; next run "+rfc3339(s.NextRun)) {
		t.Errorf("enable: %q, schedule %+v", out, s)
	}
	en := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(report), "--json"))
	if en["enabled"] != false || en["id"] != float64(report) {
		t.Errorf("disable --json = %v", en)
	}

	// run-now fires a disabled schedule too, and leaves its next run alone.
	before := getSchedule(t, c, report)
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(report))
	s = getSchedule(t, c, report)
	if s.LastRunRef == 0 || !strings.Contains(out, "Schedule "+sid(report)+" dispatched job "+sid(s.LastRunRef)) {
		t.Fatalf("run-now output %q, schedule %+v", out, s)
	}
	if !s.NextRun.Equal(before.NextRun) || s.LastRun.IsZero() {
		t.Errorf("run-now changed next run %s -> %s (last run %s)", before.NextRun, s.NextRun, s.LastRun)
	}
	reportJob := s.LastRunRef
	j, err := c.Job(ctx, reportJob)
	if err != nil || j.Handler != "report" || j.Queue != "reports" || j.Status != queuety.JobPending || !strings.Contains(string(j.Payload), `"kind":"weekly"`) {
		t.Errorf("dispatched job = %+v (%v)", j, err)
	}

	// Overlap skip: the second run-now is held back while the first job is pending.
	skip := scheduleID(t, dsn, "exclusive", "--every", "1h", "--overlap", "skip")
	first := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip), "--json"))
	if first["held_back"] != false || first["kind"] != "job" || first["dispatched_id"].(float64) == 0 {
		t.Fatalf("first run-now --json = %v", first)
	}
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip))
	if !strings.Contains(out, "held back by its overlap policy (skip)") || !strings.Contains(out, "job "+strconv.FormatFloat(first["dispatched_id"].(float64), 'f', 0, 64)) {
		t.Errorf("held-back run-now output: %s", out)
	}
	held := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(skip), "--json"))
	if held["held_back"] != true || held["dispatched_id"] != 0.0 || held["buffered"] != false || held["active_run_id"] != first["dispatched_id"] {
		t.Errorf("held-back run-now --json = %v", held)
	}
	if jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "exclusive"}); err != nil || len(jobs) != 1 {
		t.Errorf("skip schedule dispatched %d jobs (%v), want 1", len(jobs), err)
	}

	// Overlap buffer: the held-back firing waits for the active run.
	buf := scheduleID(t, dsn, "buffered", "--every", "1h", "--overlap", "buffer")
	mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(buf))
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(buf))
	if !strings.Contains(out, "held back by its overlap policy (buffer)") || !strings.Contains(out, "dispatched when that run ends") {
		t.Errorf("buffered run-now output: %s", out)
	}
	if s := getSchedule(t, c, buf); s.PendingRun.IsZero() {
		t.Errorf("buffered schedule has no pending run: %+v", s)
	}

	// run-now of a workflow schedule dispatches a workflow.
	def := queuety.WorkflowDefinition{Name: "nightly", Steps: []queuety.WorkflowStep{{Type: queuety.StepSingle, Handler: "n.step"}}}
	wfSched, err := c.ScheduleWorkflow(def, queuety.State{"n": 1}).Every(time.Hour).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wr := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "run-now", sid(wfSched), "--json"))
	if wr["kind"] != "workflow" || wr["held_back"] != false {
		t.Fatalf("workflow run-now --json = %v", wr)
	}
	wf, err := c.Workflow(ctx, int64(wr["dispatched_id"].(float64)))
	if err != nil || wf.Name != "nightly" || wf.Status != queuety.WorkflowRunning {
		t.Errorf("dispatched workflow = %+v (%v)", wf, err)
	}
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "disable", sid(wfSched))
	if !strings.Contains(out, "disabled") || getSchedule(t, c, wfSched).Enabled {
		t.Errorf("disable workflow schedule: %s", out)
	}

	// remove.
	out = mustRun(t, nil, "--dsn", dsn, "schedule", "remove", sid(report))
	if !strings.Contains(out, "Schedule "+sid(report)+" removed") {
		t.Errorf("remove output: %s", out)
	}
	if _, err := c.ScheduleByID(ctx, report); err == nil {
		t.Errorf("schedule %d still exists after remove", report)
	}
	if _, err := c.Job(ctx, reportJob); err != nil {
		t.Errorf("remove deleted the dispatched job: %v", err)
	}
	rm := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "remove", sid(wfSched), "--json"))
	if rm["removed"] != true {
		t.Errorf("remove --json = %v", rm)
	}
	if rows := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json")); len(rows) != 2 {
		t.Errorf("after two removes the list has %d rows, want 2", len(rows))
	}

	// Missing schedules are runtime errors (exit 1); bad ids are usage errors.
	for _, cmd := range []string{"remove", "enable", "disable", "run-now"} {
		wantFail(t, 1, "not found", "--dsn", dsn, "schedule", cmd, sid(report))
		wantFail(t, 2, "positive integer", "--dsn", dsn, "schedule", cmd, "abc")
		wantFail(t, 2, "positive integer", "--dsn", dsn, "schedule", cmd, "0")
		wantFail(t, 2, "missing arguments", "--dsn", dsn, "schedule", cmd)
		wantFail(t, 2, "unexpected argument", "--dsn", dsn, "schedule", cmd, "1", "2")
	}
	wantFail(t, 2, "no subcommand given", "--dsn", dsn, "schedule")
	wantFail(t, 2, `unknown command "pause"`, "--dsn", dsn, "schedule", "pause", "1")
}

func TestScheduleHelp(t *testing.T) {
	t.Parallel()
	if out := mustRun(t, nil, "help"); !strings.Contains(out, "schedule") {
		t.Errorf("help does not list schedule:\n%s", out)
	}
	out := mustRun(t, nil, "schedule", "-h")
	for _, want := range []string{"Usage: queuety-worker schedule COMMAND", "list", "add HANDLER [JSON]", "remove ID", "enable ID", "disable ID", "run-now ID", "Examples:"} {
		if !strings.Contains(out, want) {
			t.Errorf("schedule -h has no %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"schedule", "add", "-h"}, {"help", "schedule", "run-now"}, {"schedule", "list", "--help"}} {
		r := run(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: queuety-worker schedule") || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if out := mustRun(t, nil, "schedule", "add", "-h"); !strings.Contains(out, "--cron") || !strings.Contains(out, "--every") || !strings.Contains(out, "--interval") || !strings.Contains(out, "--catch-up") {
		t.Errorf("schedule add -h:\n%s", out)
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
	if s.LastRunRef != 0 || s.NextRun.IsZero() {
		t.Fatalf("fresh schedule = %+v", s)
	}
	// Wait until the next run has passed.
	deadline := time.Now().Add(10 * time.Second)
	for !time.Now().After(s.NextRun) {
		if time.Now().After(deadline) {
			t.Fatalf("next run %s did not pass", s.NextRun)
		}
		time.Sleep(min(time.Until(s.NextRun)+10*time.Millisecond, 200*time.Millisecond))
	}

	out := mustRun(t, reg, "--dsn", dsn, "work", "--once", "--max-time", "10s", "--json")
	sum := decode[map[string]any](t, out)
	if sum["claimed"] != 1.0 || sum["succeeded"] != 1.0 {
		t.Errorf("work --once = %v", sum)
	}
	if ran.Load() != 1 || got.Load() != "cron" {
		t.Errorf("sched.tick ran %d times with who=%v", ran.Load(), got.Load())
	}
	after := getSchedule(t, c, id)
	if after.LastRunRef == 0 || after.LastRun.IsZero() || !after.NextRun.After(s.NextRun) {
		t.Fatalf("schedule after work --once = %+v", after)
	}
	j, err := c.Job(ctx, after.LastRunRef)
	if err != nil || j.Handler != "sched.tick" || j.Status != queuety.JobCompleted || j.Attempts != 1 {
		t.Errorf("fired job = %+v (%v)", j, err)
	}
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Handler: "sched.tick"})
	if err != nil || len(jobs) != 1 {
		t.Errorf("%d sched.tick jobs (%v), want 1", len(jobs), err)
	}

	// The list shows the run.
	row := decode[[]scheduleRow](t, mustRun(t, nil, "--dsn", dsn, "schedule", "list", "--json"))[0]
	if row.LastRun == "" || row.LastRunID != after.LastRunRef {
		t.Errorf("list after firing = %+v", row)
	}
}
