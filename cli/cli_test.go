package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers (loggers
// write from worker goroutines).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type result struct {
	stdout, stderr string
	code           int
}

// runCtx runs the CLI in-process.
func runCtx(ctx context.Context, t *testing.T, reg *queuety.Registry, args ...string) result {
	t.Helper()
	var out, errOut lockedBuffer
	code := cli.Run(ctx, args, reg, &out, &errOut)
	return result{out.String(), errOut.String(), code}
}

func run(t *testing.T, reg *queuety.Registry, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCtx(ctx, t, reg, args...)
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, reg *queuety.Registry, args ...string) string {
	t.Helper()
	r := run(t, reg, args...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// wantFail runs the CLI and checks the exit code and that stderr has a
// one-line error containing want.
func wantFail(t *testing.T, code int, want string, args ...string) result {
	t.Helper()
	r := run(t, nil, args...)
	if r.code != code {
		t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, want) {
		t.Fatalf("%v: stderr %q does not contain %q", args, r.stderr, want)
	}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Fatalf("%v: stderr has a stack trace:\n%s", args, r.stderr)
	}
	return r
}

func tempDSN(t *testing.T) string {
	t.Helper()
	return "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
}

func openClient(t *testing.T, dsn string) *queuety.Client {
	t.Helper()
	c, err := queuety.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, s)
	}
	return v
}

func dispatchID(t *testing.T, dsn string, args ...string) int64 {
	t.Helper()
	out := mustRun(t, nil, append([]string{"--dsn", dsn, "dispatch"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("dispatch printed %q, not an id", out)
	}
	return id
}

func TestHelp(t *testing.T) {
	t.Parallel()
	out := mustRun(t, nil, "help")
	for _, cmd := range []string{"work", "migrate", "status", "dispatch", "queue", "job", "workflow", "signal", "demo", "version", "Examples:"} {
		if !strings.Contains(out, cmd) {
			t.Errorf("help does not mention %q:\n%s", cmd, out)
		}
	}
	for _, args := range [][]string{{"dispatch", "-h"}, {"work", "--help"}, {"workflow", "inspect", "-h"}, {"help", "job", "purge"}, {"queue", "-h"}} {
		r := run(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: queuety-worker") || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("%v: exit %d, stdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	r := run(t, nil)
	if r.code != 2 || !strings.Contains(r.stderr, "no command given") {
		t.Errorf("no args: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	wantFail(t, 2, `unknown command "frobnicate"`, "frobnicate")
	wantFail(t, 2, `unknown command "frob"`, "queue", "frob")
	wantFail(t, 2, "no subcommand given", "workflow")
	wantFail(t, 2, "flag provided but not defined", "status", "--bogus")
	wantFail(t, 2, "--log-level", "status", "--log-level", "loud")
	if out := mustRun(t, nil, "version"); !strings.HasPrefix(out, "queuety-worker ") {
		t.Errorf("version: %q", out)
	}
	v := decode[map[string]any](t, mustRun(t, nil, "version", "--json"))
	if version, _ := v["version"].(string); version == "" {
		t.Errorf("version --json has no version: %v", v)
	}
	if goVersion, _ := v["go"].(string); !strings.HasPrefix(goVersion, "go") {
		t.Errorf("version --json has no Go version: %v", v)
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	out := mustRun(t, nil, "migrate", "--dsn", dsn)
	if !strings.Contains(out, "Migrated the sqlite store") || !strings.Contains(out, "SQLite") {
		t.Errorf("migrate output:\n%s", out)
	}
	// Idempotent, and global flags work before the command too.
	info := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "--json", "migrate"))
	if info["driver"] != "sqlite" || info["migrated"] != true {
		t.Errorf("migrate --json: %v", info)
	}
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	id := dispatchID(t, dsn, "send_email", `{"to": "ada@example.com", "n": 7, "ratio": 1.5}`,
		"--queue", "mail", "--priority", "high", "--max-attempts", "5", "--backoff", "10,30,60")
	c := openClient(t, dsn)
	j, err := c.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Queue != "mail" || j.Priority != queuety.PriorityHigh || j.MaxAttempts != 5 || j.Handler != "send_email" {
		t.Errorf("job = %+v", j)
	}
	var payload map[string]any
	if err := json.Unmarshal(j.Payload, &payload); err != nil || payload["to"] != "ada@example.com" || payload["n"] != 7.0 || payload["ratio"] != 1.5 {
		t.Errorf("payload = %s (%v)", j.Payload, err)
	}
	if !strings.Contains(string(j.Payload), `"n":7,`) && !strings.Contains(string(j.Payload), `"n":7}`) {
		t.Errorf("integer stored as float: %s", j.Payload)
	}

	// --json, --delay, priority by number, and --unique returns the same id.
	first := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "dispatch", "report", "--delay", "1h", "--priority", "3", "--unique", "--json"))["id"]
	again := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "dispatch", "report", "--unique", "--json"))["id"]
	if first == 0 || first != again {
		t.Errorf("unique dispatch ids %d and %d", first, again)
	}
	j, err = c.Job(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	if until := time.Until(j.AvailableAt); until < 58*time.Minute || j.Priority != queuety.PriorityUrgent {
		t.Errorf("delayed job due in %s with priority %s", until, j.Priority)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"h", "{bad"}, "not valid JSON"},
		{[]string{"h", `{"a": 1`}, "not valid JSON"},
		{[]string{"h", `{"a": 1} {}`}, "unexpected data after the object"},
		{[]string{"h", `[1, 2]`}, "must be a JSON object"},
		{[]string{"h", `"text"`}, "must be a JSON object"},
		{[]string{"h", `null`}, "must be a JSON object"},
		{[]string{"h", "--priority", "huge"}, `--priority "huge"`},
		{[]string{"h", "--priority", "7"}, `--priority "7"`},
		{[]string{"h", "--delay", "-5s"}, "--delay must not be negative"},
		{[]string{"h", "--delay", "soon"}, "invalid duration"},
		{[]string{"h", "--max-attempts", "0"}, "--max-attempts"},
		{[]string{"h", "--backoff", "10x"}, "--backoff"},
		{[]string{"h", "--backoff", "10,-1"}, "--backoff"},
		{[]string{"h", `{"__queuety_runtime": 1}`}, "reserved"},
		{[]string{}, "missing arguments"},
		{[]string{"h", "{}", "extra"}, "unexpected argument"},
	} {
		wantFail(t, 2, tc.want, append([]string{"--dsn", dsn, "dispatch"}, tc.args...)...)
	}
	// Nothing was written by the failed dispatches.
	jobs, err := c.ListJobs(context.Background(), driver.JobFilter{Handler: "h"})
	if err != nil || len(jobs) != 0 {
		t.Errorf("failed dispatches wrote %d jobs (%v)", len(jobs), err)
	}
}

func TestDSNSelection(t *testing.T) {
	// Not parallel: it sets QUEUETY_DSN.
	dsn := tempDSN(t)
	t.Setenv("QUEUETY_DSN", dsn)
	id := dispatchID(t, "", "from_env") // --dsn "" falls back to the environment
	c := openClient(t, dsn)
	if _, err := c.Job(context.Background(), id); err != nil {
		t.Errorf("job dispatched through QUEUETY_DSN not found: %v", err)
	}

	wp := filepath.Join(t.TempDir(), "wp-config.php")
	if err := os.WriteFile(wp, []byte(`<?php
define( 'DB_NAME', 'wordpress' );
define( 'DB_USER', 'wp' );
define( 'DB_PASSWORD', 'supersecret' );
define( 'DB_HOST', '127.0.0.1:1' );
$table_prefix = 'wp_';
`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := wantFail(t, 1, "cannot open the store", "status", "--wp-config", wp)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("unreachable wp-config host took %s", took)
	}
	if !strings.Contains(r.stderr, "--wp-config") || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("error does not say where the DSN came from: %s", r.stderr)
	}
	if strings.Contains(r.stderr, "supersecret") {
		t.Errorf("error leaks the password: %s", r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("error is %d lines:\n%s", n+1, r.stderr)
	}
	wantFail(t, 2, "--dsn and --wp-config", "--dsn", dsn, "status", "--wp-config", wp)
	wantFail(t, 2, "--dsn and --wp-config", "--wp-config", wp, "--dsn", dsn, "job", "list")
	wantFail(t, 1, "wp-config", "status", "--wp-config", filepath.Join(t.TempDir(), "missing.php"))
}

func TestStatusAndQueues(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	for range 3 {
		dispatchID(t, dsn, "a")
	}
	dispatchID(t, dsn, "b", "--queue", "mail")
	mustRun(t, nil, "--dsn", dsn, "queue", "pause", "mail")
	mustRun(t, nil, "--dsn", dsn, "queue", "pause", "idle")

	out := mustRun(t, nil, "--dsn", dsn, "status")
	for _, want := range []string{"QUEUE", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "BURIED", "PAUSED", "WORKFLOWS", "waiting_for_signal"} {
		if !strings.Contains(out, want) {
			t.Errorf("status has no %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 {
			rows[f[0]] = f
		}
	}
	if r := rows["default"]; len(r) < 6 || r[1] != "3" || r[2] != "0" {
		t.Errorf("default row = %v\n%s", r, out)
	}
	if r := rows["mail"]; len(r) < 7 || r[1] != "1" || r[6] != "paused" {
		t.Errorf("mail row = %v\n%s", r, out)
	}
	if r := rows["idle"]; len(r) < 7 || r[6] != "paused" {
		t.Errorf("paused queue without jobs: %v\n%s", r, out)
	}

	type status struct {
		Queues []struct {
			Queue   string `json:"queue"`
			Pending int64  `json:"pending"`
			Paused  bool   `json:"paused"`
		} `json:"queues"`
		Workflows []struct {
			Status string `json:"status"`
			Count  int    `json:"count"`
		} `json:"workflows"`
	}
	st := decode[status](t, mustRun(t, nil, "status", "--json", "--dsn", dsn))
	got := map[string]string{}
	for _, q := range st.Queues {
		got[q.Queue] = strconv.FormatInt(q.Pending, 10) + "/" + strconv.FormatBool(q.Paused)
	}
	if got["default"] != "3/false" || got["mail"] != "1/true" || got["idle"] != "0/true" {
		t.Errorf("status --json queues = %v", got)
	}
	if len(st.Workflows) != 7 {
		t.Errorf("status --json workflows = %v", st.Workflows)
	}

	mustRun(t, nil, "--dsn", dsn, "queue", "resume", "mail")
	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "queue", "list", "--json"))
	paused := map[string]bool{}
	for _, q := range list {
		paused[q["queue"].(string)] = q["paused"].(bool)
	}
	if paused["mail"] || !paused["idle"] {
		t.Errorf("queue list after resume: %v", list)
	}
	if out := mustRun(t, nil, "--dsn", dsn, "queue", "list"); !strings.Contains(out, "idle") || !strings.Contains(out, "paused") {
		t.Errorf("queue list:\n%s", out)
	}
	wantFail(t, 2, "missing arguments", "--dsn", dsn, "queue", "pause")
}

func TestWorkOnceAndJobs(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	var ran atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	reg := queuety.NewRegistry()
	reg.HandleJob("t.ok", func(ctx context.Context, p queuety.Payload) error {
		ran.Add(1)
		return nil
	})
	reg.HandleJob("t.fail", func(ctx context.Context, p queuety.Payload) error {
		if failing.Load() {
			return errors.New("boom")
		}
		return nil
	})
	for range 5 {
		dispatchID(t, dsn, "t.ok", `{"k": "v"}`)
	}
	failID := dispatchID(t, dsn, "t.fail", "--max-attempts", "1")
	unknownID := dispatchID(t, dsn, "t.unknown")

	out := mustRun(t, reg, "--dsn", dsn, "work", "--once", "--max-time", "20s")
	if !strings.Contains(out, "claimed 6, succeeded 5, failed 1") {
		t.Errorf("work --once summary:\n%s", out)
	}
	if ran.Load() != 5 {
		t.Errorf("t.ok ran %d times", ran.Load())
	}

	// The job without a handler is left pending, never buried.
	j := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(unknownID, 10), "--json"))
	if job := j["job"].(map[string]any); job["status"] != "pending" || job["attempts"] != 0.0 {
		t.Errorf("unknown-handler job = %v", job)
	}

	// job list filters.
	buried := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "list", "--status", "buried", "--json"))
	if len(buried) != 1 || buried[0]["id"] != float64(failID) || buried[0]["error_message"] != "boom" {
		t.Errorf("buried jobs = %v", buried)
	}
	out = mustRun(t, nil, "--dsn", dsn, "job", "list", "--handler", "t.ok", "--limit", "2")
	if strings.Count(out, "t.ok") != 2 || !strings.Contains(out, "--after") {
		t.Errorf("job list --limit 2:\n%s", out)
	}
	wantFail(t, 2, "--status", "--dsn", dsn, "job", "list", "--status", "weird")

	// job show: the row and its log rows.
	out = mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10))
	for _, want := range []string{"t.fail", "buried", "boom", "Log", "started", "failed", "buried"} {
		if !strings.Contains(out, want) {
			t.Errorf("job show has no %q:\n%s", want, out)
		}
	}
	shown := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10), "--json"))
	if logs := shown["logs"].([]any); len(logs) < 2 {
		t.Errorf("job show --json logs = %v", logs)
	}

	// job retry: buried → pending → completed.
	wantFail(t, 1, "only buried or failed jobs can be retried", "--dsn", dsn, "job", "retry", strconv.FormatInt(unknownID, 10))
	wantFail(t, 1, "not found", "--dsn", dsn, "job", "retry", "99999")
	wantFail(t, 2, "positive integer", "--dsn", dsn, "job", "retry", "abc")
	mustRun(t, nil, "--dsn", dsn, "job", "retry", strconv.FormatInt(failID, 10))
	failing.Store(false)
	out = mustRun(t, reg, "--dsn", dsn, "work", "--once", "--json")
	if sum := decode[map[string]any](t, out); sum["succeeded"] != 1.0 || sum["claimed"] != 1.0 {
		t.Errorf("second work --once = %v", sum)
	}
	shown = decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10), "--json"))
	if st := shown["job"].(map[string]any)["status"]; st != "completed" {
		t.Errorf("retried job status = %v", st)
	}

	// job purge needs --older-than; 0 purges everything completed.
	wantFail(t, 2, "--older-than is required", "--dsn", dsn, "job", "purge")
	if out := mustRun(t, nil, "--dsn", dsn, "job", "purge", "--older-than", "7d"); !strings.Contains(out, "Deleted 0 ") {
		t.Errorf("purge 7d: %s", out)
	}
	// Completion times have whole seconds: poll until the jobs completed
	// in an earlier second than now.
	deleted := 0.0
	for deadline := time.Now().Add(10 * time.Second); deleted < 6 && time.Now().Before(deadline); {
		p := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "purge", "--older-than", "0s", "--json"))
		deleted += p["deleted"].(float64)
		if deleted < 6 {
			<-time.After(50 * time.Millisecond) // poll interval
		}
	}
	if deleted != 6 {
		t.Errorf("purge 0s deleted %v jobs, want 6", deleted)
	}

	wantFail(t, 2, "--concurrency", "--dsn", dsn, "work", "--once", "--concurrency", "0")
	wantFail(t, 2, "--max-time", "--dsn", dsn, "work", "--once", "--max-time", "0s")
}

// TestWorkOnceSIGTERM sends a real SIGTERM to this process while
// `work --once` runs a handler. It is not parallel: every signal.Notify in
// the process would get the signal.
func TestWorkOnceSIGTERM(t *testing.T) {
	dsn := tempDSN(t)
	started := make(chan struct{})
	reg := queuety.NewRegistry()
	reg.HandleJob("t.block", func(ctx context.Context, p queuety.Payload) error {
		close(started)
		<-ctx.Done()
		return context.Cause(ctx)
	})
	dispatchID(t, dsn, "t.block")
	done := make(chan result, 1)
	go func() {
		done <- run(t, reg, "--dsn", dsn, "work", "--once", "--max-time", "50s", "--shutdown-timeout", "500ms")
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("work --once ended before its handler started: %+v", r)
	case <-time.After(30 * time.Second):
		t.Fatal("handler did not start")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.stdout, "handed back 1") {
			t.Errorf("work --once after SIGTERM: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("work --once did not stop after SIGTERM")
	}
	// The interrupted job went back to the queue without using its attempt.
	c := openClient(t, dsn)
	jobs, err := c.ListJobs(context.Background(), driver.JobFilter{Handler: "t.block"})
	if err != nil || len(jobs) != 1 || jobs[0].Status != queuety.JobPending {
		t.Errorf("interrupted job = %+v (%v)", jobs, err)
	}
}

func TestWorkRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	mustRun(t, nil, "--dsn", dsn, "migrate")
	ctx, cancel := context.WithCancel(context.Background())
	var errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"work", "--dsn", dsn, "--concurrency", "2"}, nil, &bytes.Buffer{}, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "worker started") {
		if time.Now().After(deadline) {
			t.Fatalf("worker did not start:\n%s", errOut.String())
		}
		select {
		case code := <-done:
			t.Fatalf("work exited %d early:\n%s", code, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errOut.String(), "worker stopped") {
			t.Errorf("work exit %d:\n%s", code, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("work did not stop")
	}
}

// workflowRegistry has the step handlers of the workflow tests; fail makes
// wf.flaky fail without retries.
func workflowRegistry(fail *atomic.Bool) *queuety.Registry {
	reg := queuety.NewRegistry()
	reg.HandleStep("wf.a", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("n")
		return queuety.State{"a": n + 1}, nil
	})
	reg.HandleStep("wf.b", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		a, _ := s.Int("a")
		return queuety.State{"b": a * 10, "approved_by": s.String("by")}, nil
	})
	reg.HandleStep("wf.flaky", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		if fail.Load() {
			return nil, queuety.NonRetryable(errors.New("upstream said no"))
		}
		return queuety.State{"flaky": "ok"}, nil
	})
	return reg
}

func TestWorkflows(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	var fail atomic.Bool
	fail.Store(true)
	reg := workflowRegistry(&fail)

	signalled, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "approve", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Name: "first", Handler: "wf.a"},
		{Type: queuety.StepWaitForSignal, Name: "wait", Signal: "go"},
		{Type: queuety.StepSingle, Name: "second", Handler: "wf.b", Options: queuety.JobSpec{Timeouts: queuety.ActivityTimeouts{StartToClose: time.Minute}}},
	}, ExecutionTimeout: time.Hour}, queuety.State{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	failing, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "fragile", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Name: "try", Handler: "wf.flaky"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "idle", Queue: "elsewhere", Steps: []queuety.WorkflowStep{
		{Type: queuety.StepSingle, Handler: "wf.a"}, {Type: queuety.StepSingle, Handler: "wf.b"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sid, fid, iid := strconv.FormatInt(signalled, 10), strconv.FormatInt(failing, 10), strconv.FormatInt(idle, 10)

	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	statusOf := func(id string) map[string]any {
		return decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "status", id, "--json"))
	}
	if st := statusOf(sid); st["status"] != "waiting_for_signal" || st["state"].(map[string]any)["a"] != 2.0 {
		t.Fatalf("workflow %s = %v", sid, st)
	}
	if st := statusOf(fid); st["status"] != "failed" || !strings.Contains(st["error_message"].(string), "upstream said no") {
		t.Fatalf("workflow %s = %v", fid, st)
	}

	// list with filters.
	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "list", "--status", "failed", "--json"))
	if len(list) != 1 || list[0]["id"] != float64(failing) {
		t.Errorf("workflow list --status failed = %v", list)
	}
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "list")
	for _, want := range []string{"approve", "fragile", "idle", "waiting_for_signal", "STEPS DONE"} {
		if !strings.Contains(out, want) {
			t.Errorf("workflow list has no %q:\n%s", want, out)
		}
	}
	if out := mustRun(t, nil, "--dsn", dsn, "workflow", "list", "--name", "idle"); strings.Contains(out, "fragile") {
		t.Errorf("workflow list --name idle:\n%s", out)
	}
	wantFail(t, 2, "--status", "--dsn", dsn, "workflow", "list", "--status", "sleeping")

	// signal, then the rest of the workflow runs.
	out = mustRun(t, nil, "--dsn", dsn, "signal", sid, "go", `{"by": "ada"}`)
	if !strings.Contains(out, "Signal go sent") {
		t.Errorf("signal output: %s", out)
	}
	wantFail(t, 2, "must be a JSON object", "--dsn", dsn, "signal", sid, "go", "[]")
	wantFail(t, 1, "not found", "--dsn", dsn, "signal", "99999", "go")
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	st := statusOf(sid)
	state := st["state"].(map[string]any)
	if st["status"] != "completed" || state["b"] != 20.0 || state["approved_by"] != "ada" {
		t.Errorf("signalled workflow = %v", st)
	}
	if text := mustRun(t, nil, "--dsn", dsn, "workflow", "status", sid); !strings.Contains(text, "completed") || !strings.Contains(text, "3 of 3") {
		t.Errorf("workflow status:\n%s", text)
	}

	// inspect: text and JSON.
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid)
	for _, want := range []string{"Workflow " + sid + " (approve): completed", "Deadlines", "execution timeout", "PT1H",
		"Steps", "first", "wait", "second", "start_to_close=PT1M", "Attempts", "Failures", "Signals", "Timeline", "workflow_started", "workflow_completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect has no %q:\n%s", want, out)
		}
	}
	desc := decode[queuety.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--json"))
	if desc.Status != queuety.WorkflowCompleted || len(desc.Steps) != 3 || len(desc.Timeline) == 0 || desc.Deadlines.ExecutionTimeoutSeconds != 3600 {
		t.Errorf("inspect --json = %+v", desc)
	}
	if _, err := time.Parse(time.RFC3339, desc.Deadlines.ExecutionDeadline); err != nil {
		t.Errorf("execution deadline %q is not RFC 3339", desc.Deadlines.ExecutionDeadline)
	}
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", fid)
	for _, want := range []string{"failed", "application", "true", "upstream said no"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of failed workflow has no %q:\n%s", want, out)
		}
	}
	fdesc := decode[queuety.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", fid, "--json"))
	if len(fdesc.Failures) == 0 || !fdesc.Failures[0].NonRetryable || fdesc.Failures[0].Category != driver.FailureApplication {
		t.Errorf("failures = %+v", fdesc.Failures)
	}

	// retry the failed workflow, which then completes.
	wantFail(t, 1, "only a failed workflow can be retried", "--dsn", dsn, "workflow", "retry", sid)
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "retry", fid)
	if !strings.Contains(out, "retried") || !strings.Contains(out, "running") {
		t.Errorf("retry output: %s", out)
	}
	fail.Store(false)
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	if st := statusOf(fid); st["status"] != "completed" || st["run"] != 2.0 {
		t.Errorf("retried workflow = %v", st)
	}

	// pause, resume and cancel the idle one (its queue has no worker).
	r := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "pause", iid, "--json"))
	if r["status"] != "paused" {
		t.Errorf("pause = %v", r)
	}
	wantFail(t, 1, "only a running workflow can be paused", "--dsn", dsn, "workflow", "pause", iid)
	mustRun(t, nil, "--dsn", dsn, "workflow", "resume", iid)
	if st := statusOf(iid); st["status"] != "running" {
		t.Errorf("resumed workflow = %v", st)
	}
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "cancel", iid)
	if !strings.Contains(out, "cancelled") {
		t.Errorf("cancel output: %s", out)
	}
	if st := statusOf(iid); st["status"] != "cancelled" {
		t.Errorf("cancelled workflow = %v", st)
	}
	wantFail(t, 1, "already cancelled", "--dsn", dsn, "workflow", "cancel", iid)
	wantFail(t, 1, "not found", "--dsn", dsn, "workflow", "inspect", "424242")
	wantFail(t, 2, "positive integer", "--dsn", dsn, "workflow", "status", "0")
}

func TestDemo(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	start := time.Now()
	r := run(t, nil, "demo", "--jobs", "20", "--workflows", "3", "--dsn", dsn)
	if r.code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("demo took %s", took)
	}
	for _, want := range []string{
		"20 of 20 done", "2 completed, 1 failed", "Deadline exceeded", "jobs/s", "steps/s",
		"on-deadline callback", `waiting for signal "approved"`, "--dsn " + dsn + " status",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output has no %q:\n%s", want, r.stdout)
		}
	}
	c := openClient(t, dsn)
	wfs, err := c.ListWorkflows(context.Background(), driver.WorkflowFilter{Status: queuety.WorkflowCompleted})
	if err != nil || len(wfs) != 2 {
		t.Errorf("completed workflows = %d (%v)", len(wfs), err)
	}
	wantFail(t, 2, "--jobs", "demo", "--jobs", "-1", "--dsn", dsn)
}
