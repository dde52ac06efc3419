package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/buildinfo"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

type result struct {
	stdout, stderr string
	code           int
}

// runCtx runs the CLI in-process.
func runCtx(ctx context.Context, t *testing.T, reg *queuety.Registry, args ...string) result {
	t.Helper()
	var out, errOut syncbuf.Buffer
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
	require.Equal(t, 0, r.code, "%v: exit code\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	return r.stdout
}

// wantFail runs the CLI and checks the exit code and that stderr has a
// one-line error containing want.
func wantFail(t *testing.T, code int, want string, args ...string) result {
	t.Helper()
	r := run(t, nil, args...)
	require.Equal(t, code, r.code, "%v: exit code\nstdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	assert.Contains(t, last, want, "%v: last line of stderr; stderr:\n%s", args, r.stderr)
	assert.NotContains(t, r.stderr, "goroutine ", "%v: stderr has a stack trace", args)
	assert.NotContains(t, r.stderr, "panic", "%v: stderr has a stack trace", args)
	return r
}

// tempDSN returns the DSN of a new, migrated SQLite database.
func tempDSN(t *testing.T) string {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
	mustRun(t, nil, "--dsn", dsn, "migrate")
	return dsn
}

// TestBenchRejectsNonPositiveCounts: a zero or negative count is a usage
// error, not a silent default run.
func TestBenchRejectsNonPositiveCounts(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "bench.db")
	for _, args := range [][]string{
		{"--jobs", "0"}, {"--jobs", "-1"}, {"--workflows", "0"}, {"--runs", "0"}, {"--concurrency", "-5"},
	} {
		wantFail(t, 2, "must be at least 1", append([]string{"--dsn", dsn, "bench"}, args...)...)
	}
}

// TestOperatorCommandsNeverCreateAStore: a mistyped SQLite path is an
// error for every operator command, and no file appears; only migrate
// and work create the database.
func TestOperatorCommandsNeverCreateAStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.db")
	dsn := "sqlite://" + typo
	for _, args := range [][]string{
		{"status"}, {"queue", "list"}, {"job", "list"}, {"workflow", "list"},
		{"schedule", "list"}, {"dispatch", "h"}, {"queue", "pause", "q"}, {"job", "purge", "--older-than", "1h"},
	} {
		r := wantFail(t, 1, "no database at "+typo, append([]string{"--dsn", dsn}, args...)...)
		assert.Contains(t, r.stderr, "migrate", "%v: the error says how to create the store", args)
		_, err := os.Stat(typo)
		assert.ErrorIs(t, err, fs.ErrNotExist, "%v created %s", args, typo)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "operator commands left files behind")

	mustRun(t, nil, "--dsn", dsn, "migrate")
	_, err = os.Stat(typo)
	assert.NoError(t, err, "migrate creates the store")
}

func openClient(t *testing.T, dsn string) *queuety.Client {
	t.Helper()
	c, err := queuety.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), "decode %T:\n%s", v, s)
	return v
}

func dispatchID(t *testing.T, dsn string, args ...string) int64 {
	t.Helper()
	out := mustRun(t, nil, append([]string{"--dsn", dsn, "dispatch"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "dispatch printed %q, not an id", out)
	return id
}

func TestHelp(t *testing.T) {
	t.Parallel()
	out := mustRun(t, nil, "help")
	for _, cmd := range []string{"work", "migrate", "status", "dispatch", "queue", "job", "workflow", "signal", "demo", "version", "Examples:"} {
		assert.Contains(t, out, cmd, "help")
	}
	for _, args := range [][]string{{"dispatch", "-h"}, {"work", "--help"}, {"workflow", "inspect", "-h"}, {"help", "job", "purge"}, {"queue", "-h"}} {
		r := run(t, nil, args...)
		assert.Equal(t, 0, r.code, "%v: exit code\nstderr:\n%s", args, r.stderr)
		assert.Contains(t, r.stdout, "Usage: queuety-worker", "%v", args)
		assert.Contains(t, r.stdout, "Examples:", "%v", args)
	}
	r := run(t, nil)
	assert.Equal(t, 2, r.code, "no args: exit code\nstderr:\n%s", r.stderr)
	assert.Contains(t, r.stderr, "no command given", "no args")
	wantFail(t, 2, `unknown command "frobnicate"`, "frobnicate")
	wantFail(t, 2, `unknown command "frob"`, "queue", "frob")
	wantFail(t, 2, "no subcommand given", "workflow")
	wantFail(t, 2, "flag provided but not defined", "status", "--bogus")
	wantFail(t, 2, "--log-level", "status", "--log-level", "loud")
	out = mustRun(t, nil, "version")
	assert.True(t, strings.HasPrefix(out, "queuety-worker "), "version: %q", out)
	v := decode[map[string]any](t, mustRun(t, nil, "version", "--json"))
	version, _ := v["version"].(string)
	assert.NotEmpty(t, version, "version --json has no version: %v", v)
	goVersion, _ := v["go"].(string)
	assert.True(t, strings.HasPrefix(goVersion, "go"), "version --json has no Go version: %v", v)
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	out := mustRun(t, nil, "migrate", "--dsn", dsn)
	assert.Contains(t, out, "Migrated the sqlite store", "migrate output")
	assert.Contains(t, out, "SQLite", "migrate output")
	// Idempotent, and global flags work before the command too.
	info := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "--json", "migrate"))
	assert.Equal(t, "sqlite", info["driver"], "migrate --json: %v", info)
	assert.Equal(t, true, info["migrated"], "migrate --json: %v", info)
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	id := dispatchID(t, dsn, "send_email", `{"to": "ada@example.com", "n": 7, "ratio": 1.5}`,
		"--queue", "mail", "--priority", "high", "--max-attempts", "5", "--backoff", "10,30,60")
	c := openClient(t, dsn)
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "mail", j.Queue, "job queue")
	assert.Equal(t, queuetytype.PriorityHigh, j.Priority, "job priority")
	assert.Equal(t, 5, j.MaxAttempts, "job max_attempts")
	assert.Equal(t, "send_email", j.Handler, "job handler")
	var payload map[string]any
	assert.NoError(t, json.Unmarshal(j.Payload, &payload), "payload = %s", j.Payload)
	assert.Equal(t, "ada@example.com", payload["to"], "payload = %s", j.Payload)
	assert.Equal(t, 7.0, payload["n"], "payload = %s", j.Payload)
	assert.Equal(t, 1.5, payload["ratio"], "payload = %s", j.Payload)
	assert.Regexp(t, `"n":7[,}]`, string(j.Payload), "integer stored as float")

	// --json, --delay, priority by number, and --unique returns the same id.
	first := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "dispatch", "report", "--delay", "1h", "--priority", "3", "--unique", "--json"))["id"]
	again := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "dispatch", "report", "--unique", "--json"))["id"]
	assert.NotZero(t, first, "unique dispatch id")
	assert.Equal(t, first, again, "unique dispatch ids")
	j, err = c.Job(context.Background(), first)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Until(j.AvailableAt), 58*time.Minute, "delayed job is due too soon")
	assert.Equal(t, queuetytype.PriorityUrgent, j.Priority, "delayed job priority")

	// The payload keeps the order of its keys, as Queuety PHP stores an
	// array; --unique finds it whatever the order.
	ordered := dispatchID(t, dsn, "reindex", `{"site": "b", "post": {"tags": ["x"], "id": 3}}`, "--unique")
	j, err = c.Job(context.Background(), ordered)
	require.NoError(t, err)
	assert.Equal(t, `{"site":"b","post":{"tags":["x"],"id":3}}`, string(j.Payload), "payload as typed")
	assert.Equal(t, ordered, dispatchID(t, dsn, "reindex", "--payload", `{"post": {"id": 3, "tags": ["x"]}, "site": "b"}`, "--unique"),
		"--unique with the keys in another order")

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
	require.NoError(t, err)
	assert.Empty(t, jobs, "failed dispatches wrote jobs")
}

func TestDSNSelection(t *testing.T) {
	// Not parallel: it sets QUEUETY_DSN.
	dsn := tempDSN(t)
	t.Setenv("QUEUETY_DSN", dsn)
	id := dispatchID(t, "", "from_env") // --dsn "" falls back to the environment
	c := openClient(t, dsn)
	_, err := c.Job(context.Background(), id)
	assert.NoError(t, err, "job dispatched through QUEUETY_DSN not found")

	wp := filepath.Join(t.TempDir(), "wp-config.php")
	require.NoError(t, os.WriteFile(wp, []byte(`<?php
define( 'DB_NAME', 'wordpress' );
define( 'DB_USER', 'wp' );
define( 'DB_PASSWORD', 'supersecret' );
define( 'DB_HOST', '127.0.0.1:1' );
$table_prefix = 'wp_';
`), 0o600))
	start := time.Now()
	r := wantFail(t, 1, "cannot open the store", "status", "--wp-config", wp)
	assert.LessOrEqual(t, time.Since(start), 20*time.Second, "unreachable wp-config host took too long")
	assert.Contains(t, r.stderr, "--wp-config", "error does not say where the DSN came from")
	assert.Contains(t, r.stderr, "127.0.0.1:1", "error does not say where the DSN came from")
	assert.NotContains(t, r.stderr, "supersecret", "error leaks the password")
	assert.Zero(t, strings.Count(strings.TrimSpace(r.stderr), "\n"), "error is more than one line:\n%s", r.stderr)
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
	// A queue with no jobs and no state is a typo unless --force says otherwise.
	wantFail(t, 1, `queue "idle": not found: it has no jobs and no paused or resumed state`, "--dsn", dsn, "queue", "pause", "idle")
	wantFail(t, 1, `queue "idle": not found`, "--dsn", dsn, "queue", "resume", "idle")
	mustRun(t, nil, "--dsn", dsn, "queue", "pause", "idle", "--force")

	out := mustRun(t, nil, "--dsn", dsn, "status")
	for _, want := range []string{"QUEUE", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "BURIED", "PAUSED", "WORKFLOWS", "waiting_for_signal"} {
		assert.Contains(t, out, want, "status")
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 {
			rows[f[0]] = f
		}
	}
	if r := rows["default"]; assert.GreaterOrEqual(t, len(r), 6, "default row = %v\n%s", r, out) {
		assert.Equal(t, "3", r[1], "default row pending\n%s", out)
		assert.Equal(t, "0", r[2], "default row processing\n%s", out)
	}
	if r := rows["mail"]; assert.GreaterOrEqual(t, len(r), 7, "mail row = %v\n%s", r, out) {
		assert.Equal(t, "1", r[1], "mail row pending\n%s", out)
		assert.Equal(t, "paused", r[6], "mail row\n%s", out)
	}
	if r := rows["idle"]; assert.GreaterOrEqual(t, len(r), 7, "paused queue without jobs: %v\n%s", r, out) {
		assert.Equal(t, "paused", r[6], "paused queue without jobs\n%s", out)
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
	assert.Equal(t, "3/false", got["default"], "status --json queues = %v", got)
	assert.Equal(t, "1/true", got["mail"], "status --json queues = %v", got)
	assert.Equal(t, "0/true", got["idle"], "status --json queues = %v", got)
	assert.Len(t, st.Workflows, 7, "status --json workflows")

	mustRun(t, nil, "--dsn", dsn, "queue", "resume", "mail")
	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "queue", "list", "--json"))
	paused := map[string]bool{}
	for _, q := range list {
		paused[q["queue"].(string)] = q["paused"].(bool)
	}
	assert.False(t, paused["mail"], "queue list after resume: %v", list)
	assert.True(t, paused["idle"], "queue list after resume: %v", list)
	out = mustRun(t, nil, "--dsn", dsn, "queue", "list")
	assert.Contains(t, out, "idle", "queue list")
	assert.Contains(t, out, "paused", "queue list")
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
	assert.Contains(t, out, "claimed 6, succeeded 5, failed 1", "work --once summary")
	assert.Equal(t, int64(5), ran.Load(), "t.ok runs")

	// The job without a handler is left pending, never buried.
	j := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(unknownID, 10), "--json"))
	job := j["job"].(map[string]any)
	assert.Equal(t, "pending", job["status"], "unknown-handler job = %v", job)
	assert.Equal(t, 0.0, job["attempts"], "unknown-handler job = %v", job)

	// job list filters.
	buried := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "list", "--status", "buried", "--json"))
	if assert.Len(t, buried, 1, "buried jobs") {
		assert.Equal(t, float64(failID), buried[0]["id"], "buried jobs = %v", buried)
		assert.Equal(t, "boom", buried[0]["error_message"], "buried jobs = %v", buried)
	}
	out = mustRun(t, nil, "--dsn", dsn, "job", "list", "--handler", "t.ok", "--limit", "2")
	assert.Equal(t, 2, strings.Count(out, "t.ok"), "job list --limit 2:\n%s", out)
	assert.Contains(t, out, "--after", "job list --limit 2")
	wantFail(t, 2, "--status", "--dsn", dsn, "job", "list", "--status", "weird")

	// job show: the row and its log rows.
	out = mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10))
	for _, want := range []string{"t.fail", "buried", "boom", "Log", "started", "failed", "buried"} {
		assert.Contains(t, out, want, "job show")
	}
	shown := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10), "--json"))
	logs := shown["logs"].([]any)
	assert.GreaterOrEqual(t, len(logs), 2, "job show --json logs = %v", logs)

	// job retry: buried → pending → completed.
	wantFail(t, 1, "only buried or failed jobs can be retried", "--dsn", dsn, "job", "retry", strconv.FormatInt(unknownID, 10))
	// A missing row is named once: the store's "job N" is not repeated.
	for _, args := range [][]string{{"job", "retry", "99999"}, {"job", "bury", "99999"}, {"workflow", "retry", "99999"},
		{"workflow", "inspect", "99999"}, {"signal", "99999", "go"}} {
		r := wantFail(t, 1, "99999: not found", append([]string{"--dsn", dsn}, args...)...)
		assert.Equal(t, 1, strings.Count(r.stderr, "99999"), "%v names the id once: %s", args, r.stderr)
	}
	wantFail(t, 2, "positive integer", "--dsn", dsn, "job", "retry", "abc")
	mustRun(t, nil, "--dsn", dsn, "job", "retry", strconv.FormatInt(failID, 10))
	failing.Store(false)
	out = mustRun(t, reg, "--dsn", dsn, "work", "--once", "--json")
	sum := decode[map[string]any](t, out)
	assert.Equal(t, 1.0, sum["succeeded"], "second work --once = %v", sum)
	assert.Equal(t, 1.0, sum["claimed"], "second work --once = %v", sum)
	shown = decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "job", "show", strconv.FormatInt(failID, 10), "--json"))
	assert.Equal(t, "completed", shown["job"].(map[string]any)["status"], "retried job status")

	// job purge keeps a week without --older-than; 0 purges everything completed.
	out = mustRun(t, nil, "--dsn", dsn, "job", "purge")
	assert.Contains(t, out, "Deleted 0 ", "purge without --older-than")
	out = mustRun(t, nil, "--dsn", dsn, "job", "purge", "--older-than", "7d")
	assert.Contains(t, out, "Deleted 0 ", "purge 7d")
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
	assert.Equal(t, 6.0, deleted, "jobs deleted by purge 0s")

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
		require.FailNow(t, "work --once ended before its handler started", "%+v", r)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "handler did not start")
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case r := <-done:
		assert.Equal(t, 0, r.code, "work --once after SIGTERM: exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "handed back 1", "work --once after SIGTERM\nstderr:\n%s", r.stderr)
	case <-time.After(15 * time.Second):
		require.FailNow(t, "work --once did not stop after SIGTERM")
	}
	// The interrupted job went back to the queue without using its attempt.
	c := openClient(t, dsn)
	jobs, err := c.ListJobs(context.Background(), driver.JobFilter{Handler: "t.block"})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "interrupted jobs")
	assert.Equal(t, queuetytype.JobPending, jobs[0].Status, "interrupted job = %+v", jobs[0])
}

// TestWorkOnceSIGTERMWithAStubbornHandler: a handler that ignores its
// cancelled context does not hang `work --once`: it exits 1 after the grace
// and hard-stop periods, naming the job, which stays claimed. Not parallel,
// as TestWorkOnceSIGTERM.
func TestWorkOnceSIGTERMWithAStubbornHandler(t *testing.T) {
	dsn := tempDSN(t)
	started := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := queuety.NewRegistry()
	reg.HandleJob("t.stubborn", func(context.Context, queuety.Payload) error {
		close(started)
		<-release // ignores its context
		return nil
	})
	id := dispatchID(t, dsn, "t.stubborn")
	done := make(chan result, 1)
	go func() {
		done <- run(t, reg, "--dsn", dsn, "work", "--once", "--max-time", "50s", "--shutdown-timeout", "200ms", "--hard-stop-timeout", "200ms")
	}()
	select {
	case <-started:
	case r := <-done:
		require.FailNow(t, "work --once ended before its handler started", "%+v", r)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "handler did not start")
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case r := <-done:
		assert.Equal(t, 1, r.code, "exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stderr, fmt.Sprintf("jobs [%d]", id), "the error names the abandoned job")
	case <-time.After(15 * time.Second):
		require.FailNow(t, "work --once hung after SIGTERM with a handler that ignores its context")
	}
	j, err := openClient(t, dsn).Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, queuetytype.JobProcessing, j.Status, "the abandoned job stays claimed until its lease expires")
}

func TestWorkRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	mustRun(t, nil, "--dsn", dsn, "migrate")
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"work", "--dsn", dsn, "--concurrency", "2"}, nil, &bytes.Buffer{}, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "worker started") {
		require.False(t, time.Now().After(deadline), "worker did not start:\n%s", errOut.String())
		select {
		case code := <-done:
			require.FailNow(t, "work exited early", "exit %d:\n%s", code, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "work exit code:\n%s", errOut.String())
		assert.Contains(t, errOut.String(), "worker stopped", "work output")
	case <-time.After(15 * time.Second):
		require.FailNow(t, "work did not stop")
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
		{Type: queuetytype.StepSingle, Name: "first", Handler: "wf.a"},
		{Type: queuetytype.StepWaitForSignal, Name: "wait", Signal: "go"},
		{Type: queuetytype.StepSingle, Name: "second", Handler: "wf.b", Options: queuetytype.JobSpec{Timeouts: queuetytype.ActivityTimeouts{StartToClose: time.Minute}}},
	}, ExecutionTimeout: time.Hour}, queuety.State{"n": 1})
	require.NoError(t, err)
	failing, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "fragile", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Name: "try", Handler: "wf.flaky"},
	}}, nil)
	require.NoError(t, err)
	idle, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "idle", Queue: "elsewhere", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "wf.a"}, {Type: queuetytype.StepSingle, Handler: "wf.b"},
	}}, nil)
	require.NoError(t, err)
	sid, fid, iid := strconv.FormatInt(signalled, 10), strconv.FormatInt(failing, 10), strconv.FormatInt(idle, 10)

	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	statusOf := func(id string) map[string]any {
		return decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "status", id, "--json"))
	}
	st := statusOf(sid)
	require.Equal(t, "waiting_for_signal", st["status"], "workflow %s = %v", sid, st)
	require.Equal(t, 2.0, st["state"].(map[string]any)["a"], "workflow %s = %v", sid, st)
	st = statusOf(fid)
	require.Equal(t, "failed", st["status"], "workflow %s = %v", fid, st)
	require.Contains(t, st["error_message"].(string), "upstream said no", "workflow %s = %v", fid, st)

	// list with filters.
	list := decode[[]map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "list", "--status", "failed", "--json"))
	if assert.Len(t, list, 1, "workflow list --status failed") {
		assert.Equal(t, float64(failing), list[0]["id"], "workflow list --status failed = %v", list)
	}
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "list")
	for _, want := range []string{"approve", "fragile", "idle", "waiting_for_signal", "STEPS DONE"} {
		assert.Contains(t, out, want, "workflow list")
	}
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "list", "--name", "idle")
	assert.NotContains(t, out, "fragile", "workflow list --name idle")
	wantFail(t, 2, "--status", "--dsn", dsn, "workflow", "list", "--status", "sleeping")

	// signal, then the rest of the workflow runs.
	out = mustRun(t, nil, "--dsn", dsn, "signal", sid, "go", `{"by": "ada"}`)
	assert.Contains(t, out, "Signal go sent", "signal output")
	wantFail(t, 2, "must be a JSON object", "--dsn", dsn, "signal", sid, "go", "[]")
	wantFail(t, 1, "not found", "--dsn", dsn, "signal", "99999", "go")
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	st = statusOf(sid)
	state := st["state"].(map[string]any)
	assert.Equal(t, "completed", st["status"], "signalled workflow = %v", st)
	assert.Equal(t, 20.0, state["b"], "signalled workflow = %v", st)
	assert.Equal(t, "ada", state["approved_by"], "signalled workflow = %v", st)
	text := mustRun(t, nil, "--dsn", dsn, "workflow", "status", sid)
	assert.Contains(t, text, "completed", "workflow status")
	assert.Contains(t, text, "3 of 3", "workflow status")

	// inspect: text and JSON.
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid)
	for _, want := range []string{"Workflow " + sid + " (approve): completed", "Deadlines", "execution timeout", "PT1H",
		"Steps", "first", "wait", "second", "start_to_close=PT1M", "Attempts", "Failures", "Signals", "Timeline", "workflow_started", "workflow_completed"} {
		assert.Contains(t, out, want, "inspect")
	}
	desc := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--json"))
	assert.Equal(t, queuetytype.WorkflowCompleted, desc.Status, "inspect --json status")
	assert.Len(t, desc.Steps, 3, "inspect --json steps")
	assert.NotEmpty(t, desc.Timeline, "inspect --json timeline")
	assert.Equal(t, int64(3600), desc.Deadlines.ExecutionTimeoutSeconds, "inspect --json execution timeout")
	_, err = time.Parse(time.RFC3339, desc.Deadlines.ExecutionDeadline)
	assert.NoError(t, err, "execution deadline %q is not RFC 3339", desc.Deadlines.ExecutionDeadline)
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", fid)
	for _, want := range []string{"failed", "application", "true", "upstream said no"} {
		assert.Contains(t, out, want, "inspect of failed workflow")
	}
	fdesc := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", fid, "--json"))
	if assert.NotEmpty(t, fdesc.Failures, "failures") {
		assert.True(t, fdesc.Failures[0].NonRetryable, "failures = %+v", fdesc.Failures)
		assert.Equal(t, driver.FailureApplication, fdesc.Failures[0].Category, "failures = %+v", fdesc.Failures)
	}

	// retry the failed workflow, which then completes.
	wantFail(t, 1, "only a failed workflow can be retried", "--dsn", dsn, "workflow", "retry", sid)
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "retry", fid)
	assert.Contains(t, out, "retried", "retry output")
	assert.Contains(t, out, "running", "retry output")
	fail.Store(false)
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	st = statusOf(fid)
	assert.Equal(t, "completed", st["status"], "retried workflow = %v", st)
	assert.Equal(t, 2.0, st["run"], "retried workflow = %v", st)

	// pause, resume and cancel the idle one (its queue has no worker).
	r := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "pause", iid, "--json"))
	assert.Equal(t, "paused", r["status"], "pause = %v", r)
	wantFail(t, 1, "only a running workflow can be paused", "--dsn", dsn, "workflow", "pause", iid)
	mustRun(t, nil, "--dsn", dsn, "workflow", "resume", iid)
	st = statusOf(iid)
	assert.Equal(t, "running", st["status"], "resumed workflow = %v", st)
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "cancel", iid)
	assert.Contains(t, out, "cancelled", "cancel output")
	st = statusOf(iid)
	assert.Equal(t, "cancelled", st["status"], "cancelled workflow = %v", st)
	wantFail(t, 1, "already cancelled", "--dsn", dsn, "workflow", "cancel", iid)
	wantFail(t, 1, "not found", "--dsn", dsn, "workflow", "inspect", "424242")
	wantFail(t, 2, "positive integer", "--dsn", dsn, "workflow", "status", "0")
}

func TestDemo(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	start := time.Now()
	r := run(t, nil, "demo", "--jobs", "20", "--workflows", "3", "--dsn", dsn)
	require.Equal(t, 0, r.code, "demo exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.LessOrEqual(t, time.Since(start), 30*time.Second, "demo took too long")
	for _, want := range []string{
		"20 of 20 done", "2 completed, 1 failed", "Deadline exceeded", "jobs/s", "steps/s",
		"on-deadline callback", `waiting for signal "approved"`, "--dsn " + dsn + " status",
	} {
		assert.Contains(t, r.stdout, want, "demo output")
	}
	c := openClient(t, dsn)
	wfs, err := c.ListWorkflows(context.Background(), driver.WorkflowFilter{Status: queuetytype.WorkflowCompleted})
	require.NoError(t, err)
	assert.Len(t, wfs, 2, "completed workflows")
	wantFail(t, 2, "--jobs", "demo", "--jobs", "-1", "--dsn", dsn)
}

// TestInspectFanOut: `workflow inspect` shows a for_each step's branches,
// a repeat's loop count and a run_workflow step's child, and caps the job
// rows of a large step in the text view.
func TestInspectFanOut(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	items := make([]any, 25)
	for i := range items {
		items[i] = i
	}
	child := queuety.WorkflowDefinition{Name: "kid", Steps: []queuety.WorkflowStep{{Type: queuetytype.StepSingle, Handler: "fan.kid"}}}
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "fan", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepForEach, Name: "each", ItemsKey: "items", Handler: "fan.item"},
		{Type: queuetytype.StepSingle, Name: "tick", Handler: "fan.tick"},
		{Type: queuetytype.StepRepeat, RepeatMode: queuety.RepeatUntil, Target: "tick", StateKey: "ticks", Expected: 2},
		{Type: queuetytype.StepRunWorkflow, Name: "child", Child: &child},
	}}, queuety.State{"items": items})
	require.NoError(t, err)
	reg := queuety.NewRegistry()
	reg.HandleForEach("fan.item", func(_ context.Context, _ queuety.State, item any, _ int) (queuety.State, error) {
		return queuety.State{"seen": item}, nil
	})
	reg.HandleStep("fan.tick", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("ticks")
		return queuety.State{"ticks": n + 1}, nil
	})
	reg.HandleStep("fan.kid", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"kid": true}, nil })
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	sid := strconv.FormatInt(id, 10)
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid)
	for _, want := range []string{"Workflow " + sid + " (fan): completed", "Progress",
		"for_each (all)", "25 items: 25 succeeded, 0 failed, 0 open, settled true",
		"jumped back 1 times", "run_workflow", "kid (completed)", "… 6 more jobs (--json lists all)"} {
		assert.Contains(t, out, want, "inspect")
	}
	desc := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--json"))
	require.Len(t, desc.Steps, 4, "steps")
	assert.Len(t, desc.Steps[0].Jobs, 26, "placeholder and 25 branch jobs in --json")
	if assert.Len(t, desc.Steps[3].Children, 1, "children") {
		kid := desc.Steps[3].Children[0]
		kdesc := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", strconv.FormatInt(kid.ID, 10), "--json"))
		assert.Equal(t, id, kdesc.ParentID, "child's parent")
	}

	// Pages: --jobs, --limit and --offset bound what is read, and the
	// output says what it left out.
	total := desc.TimelineTotal
	require.Greater(t, total, 100, "timeline entries")
	assert.Len(t, desc.Timeline, total, "the whole timeline under the default page")
	assert.Contains(t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--jobs", "3", "--limit", "4"),
		fmt.Sprintf("… %d more entries not shown (of %d); --offset 4 shows the next ones", total-4, total), "inspect --limit")
	few := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--jobs", "3", "--json"))
	assert.Len(t, few.Steps[0].Jobs, 3, "--jobs 3")
	assert.Equal(t, 23, few.Steps[0].JobsMore, "jobs_more")
	page := mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid)
	assert.Len(t, strings.Split(strings.TrimSpace(page), "\n"), 1+100+1, "timeline: a header, 100 entries and the note")
	assert.Contains(t, page, fmt.Sprintf("… %d more entries not shown (of %d); --offset 100 shows the next ones", total-100, total), "timeline")
	tail := mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid, "--offset", strconv.Itoa(total-2))
	assert.Len(t, strings.Split(strings.TrimSpace(tail), "\n"), 1+2, "timeline --offset: the last two, no note")
	r := run(t, nil, "--dsn", dsn, "--json", "workflow", "timeline", sid, "--limit", "5")
	require.Equal(t, 0, r.code, "timeline --json: %s", r.stderr)
	assert.Len(t, decode[[]map[string]any](t, r.stdout), 5, "timeline --json --limit 5")
	assert.Contains(t, r.stderr, fmt.Sprintf("… %d more entries not shown", total-5), "the note goes to stderr with --json")
	trace := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "trace", sid, "--limit", "7", "--offset", "2"))
	assert.Len(t, trace["events"], 7, "trace --limit 7")
	tp, _ := trace["page"].(map[string]any)
	assert.Equal(t, float64(2), tp["events_offset"], "trace page offset")
	assert.Equal(t, float64(9), tp["next_offset"], "trace next_offset")
	wantFail(t, 2, "--limit must be at least 1", "--dsn", dsn, "workflow", "timeline", sid, "--limit", "0")
	wantFail(t, 2, "--offset must not be negative", "--dsn", dsn, "workflow", "trace", sid, "--offset", "-1")
	wantFail(t, 2, "--jobs must be at least 1", "--dsn", dsn, "workflow", "inspect", sid, "--jobs", "0")
	// A bad page flag is a usage error before any store is opened, so it
	// is reported as such even when the store cannot be reached.
	missing := "sqlite://" + filepath.Join(t.TempDir(), "missing", "queuety.db")
	for _, verb := range []string{"inspect", "timeline", "trace"} {
		wantFail(t, 2, "--limit must be at least 1", "--dsn", missing, "workflow", verb, sid, "--limit", "0")
	}
	wantFail(t, 2, "--jobs must be at least 1", "--dsn", missing, "workflow", "inspect", sid, "--jobs", "0")
}

// TestWorkflowAnswers: `workflow approve|reject|input` answer a workflow's
// human waits with the signal each wait listens for, with --json.
func TestWorkflowAnswers(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	one := func(s queuety.WorkflowStep) int64 {
		id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "ask", Steps: []queuety.WorkflowStep{s}}, nil)
		require.NoError(t, err)
		return id
	}
	approval := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"approval"}, HumanWait: "approval", ResultKey: "approval"})
	decision := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"approved", "rejected"}, Mode: queuetytype.WaitAny,
		HumanWait: "decision", ResultKey: "decision"})
	input := one(queuety.WorkflowStep{Type: queuetytype.StepWaitForSignal, Signals: []string{"input"}, HumanWait: "input", ResultKey: "input"})
	mustRun(t, nil, "--dsn", dsn, "work", "--once")
	wantFail(t, 1, "only a decision wait can be rejected", "--dsn", dsn, "workflow", "reject", strconv.FormatInt(approval, 10))
	wantFail(t, 1, "which takes no approve answer", "--dsn", dsn, "workflow", "approve", strconv.FormatInt(input, 10))
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "approve", strconv.FormatInt(approval, 10), `{"by": "ada"}`)
	assert.Contains(t, out, "approve sent as signal approval (status completed)", "approve output")
	wantFail(t, 1, "is not waiting for an answer (it is completed)", "--dsn", dsn, "workflow", "approve", strconv.FormatInt(approval, 10))
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "reject", strconv.FormatInt(decision, 10), "--json"))
	assert.Equal(t, "rejected", res["signal"], "reject --json: %v", res)
	assert.Equal(t, "completed", res["status"], "reject --json: %v", res)
	mustRun(t, nil, "--dsn", dsn, "workflow", "input", strconv.FormatInt(input, 10), `{"title": "Q3"}`)
	st, err := c.State(ctx, input)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"title": "Q3"}, st["input"], "input stored")
	st, err = c.State(ctx, decision)
	require.NoError(t, err)
	assert.Equal(t, "rejected", st["decision"].(map[string]any)["outcome"], "decision outcome")
	wantFail(t, 2, "must be a JSON object", "--dsn", dsn, "workflow", "input", strconv.FormatInt(input, 10), "[1]")
}

// TestWorkflowHistoryVerbs: `workflow state-at`, `timeline`, `rewind` and
// `fork`, in text and JSON.
func TestWorkflowHistoryVerbs(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "hist", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "h.a"}, {Type: queuetytype.StepSingle, Handler: "h.b"},
	}}, queuety.State{"n": 1})
	require.NoError(t, err)
	reg := queuety.NewRegistry()
	var bRuns atomic.Int64
	reg.HandleStep("h.a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": true}, nil })
	reg.HandleStep("h.b", func(context.Context, queuety.State) (queuety.State, error) {
		bRuns.Add(1)
		return queuety.State{"b": true}, nil
	})
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	sid := strconv.FormatInt(id, 10)
	assert.Equal(t, `{"a":true,"n":1}`, strings.TrimSpace(mustRun(t, nil, "--dsn", dsn, "workflow", "state-at", sid, "0")), "state-at")
	st := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "state-at", sid, "1", "--json"))
	assert.Equal(t, true, st["b"], "state-at --json: %v", st)
	wantFail(t, 1, "no recorded state", "--dsn", dsn, "workflow", "state-at", sid, "9")
	wantFail(t, 2, "STEP must be a step index", "--dsn", dsn, "workflow", "rewind", sid, "x")
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "timeline", sid)
	for _, want := range []string{"workflow_started", "step_completed", "workflow_completed"} {
		assert.Contains(t, out, want, "timeline")
	}
	out = mustRun(t, nil, "--dsn", dsn, "workflow", "rewind", sid, "0")
	assert.Contains(t, out, "rewound to after step 0; step 1 runs next", "rewind")
	fork := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "fork", sid, "--json"))
	forkID, ok := fork["forked_workflow_id"].(float64)
	require.True(t, ok, "fork --json: %v", fork)
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	assert.Equal(t, int64(3), bRuns.Load(), "b ran for the run, the rewind and the fork")
	for _, w := range []int64{id, int64(forkID)} {
		wf, err := c.Workflow(ctx, w)
		require.NoError(t, err)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", w)
	}
	wantFail(t, 1, "no step left to run", "--dsn", dsn, "workflow", "fork", sid)
}

// TestWorkflowExportReplay: `workflow export` writes Queuety's export
// format and `workflow replay` starts a workflow from it that runs on.
func TestWorkflowExportReplay(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "ex", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "x.a"},
		{Type: queuetytype.StepWaitForSignal, Signal: "go"},
		{Type: queuetytype.StepSingle, Handler: "x.b"},
	}}, queuety.State{"n": 1})
	require.NoError(t, err)
	reg := queuety.NewRegistry()
	reg.HandleStep("x.a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": true}, nil })
	reg.HandleStep("x.b", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"b": true}, nil })
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	sid := strconv.FormatInt(id, 10)
	doc := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "export", sid))
	for _, k := range []string{"workflow", "jobs", "events", "logs", "signals", "artifacts", "chunks", "wait_dependencies", "exported_at", "queuety_version"} {
		assert.Contains(t, doc, k, "export key")
	}
	file := filepath.Join(t.TempDir(), "ex.json")
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "export", sid, "--output", file)
	assert.Contains(t, out, "exported to "+file, "export --output")
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "replay", file, "--json"))
	rid, ok := res["id"].(float64)
	require.True(t, ok, "replay --json: %v", res)
	wf, err := c.Workflow(ctx, int64(rid))
	require.NoError(t, err)
	assert.Equal(t, queuetytype.WorkflowWaitingForSignal, wf.Status, "replayed status")
	assert.True(t, strings.HasPrefix(wf.Name, "ex_replay_"), "replayed name %q", wf.Name)
	require.NoError(t, c.Signal(ctx, int64(rid), "go", nil))
	mustRun(t, reg, "--dsn", dsn, "work", "--once")
	st, err := c.State(ctx, int64(rid))
	require.NoError(t, err)
	assert.Equal(t, queuety.State{"n": int64(1), "a": true, "b": true}, st, "the replay ran on")
	wantFail(t, 1, "read export", "--dsn", dsn, "workflow", "replay", filepath.Join(t.TempDir(), "missing.json"))
	trace := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "workflow", "trace", sid))
	steps, ok := trace["steps"].([]any)
	require.True(t, ok, "trace steps: %v", trace["steps"])
	require.Len(t, steps, 2, "steps with events (the third has not started)")
	first := steps[0].(map[string]any)
	assert.Equal(t, "step_completed", first["latest"].(map[string]any)["event"], "step 0's latest outcome")
	assert.Equal(t, "workflow_waiting", steps[1].(map[string]any)["latest"].(map[string]any)["event"], "step 1's latest outcome")
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"nope": 1}`), 0o600))
	// A bad export is a data error (exit 1), not a usage error.
	wantFail(t, 1, "missing workflow key", "--dsn", dsn, "workflow", "replay", bad)
	require.NoError(t, os.WriteFile(bad, []byte(`{"workflow": {}}`), 0o600))
	r := wantFail(t, 1, "state has no _steps", "--dsn", dsn, "workflow", "replay", bad, "--json")
	var errDoc struct {
		Error struct {
			Kind     string `json:"kind"`
			ExitCode int    `json:"exit_code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &errDoc), "stderr: %s", r.stderr)
	assert.Equal(t, "invalid_data", errDoc.Error.Kind, "--json error kind")
	assert.Equal(t, 1, errDoc.Error.ExitCode, "--json exit code")
	require.NoError(t, os.WriteFile(bad, []byte(`{bad`), 0o600))
	wantFail(t, 1, "malformed workflow export JSON", "--dsn", dsn, "workflow", "replay", bad)
}

// TestJSONErrors: with --json, an error is one JSON object on stderr with
// a stable shape, and the exit code is the usual one.
func TestJSONErrors(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	mustRun(t, nil, "--dsn", dsn, "migrate")
	for _, tc := range []struct {
		args []string
		code int
		kind string
	}{
		{[]string{"--dsn", dsn, "--json", "workflow", "status", "999"}, 1, "not_found"},
		{[]string{"--dsn", dsn, "--json", "workflow", "rewind", "1", "x"}, 2, "usage"},
		{[]string{"--dsn", dsn, "--json", "signal", "1", "go", "[1]"}, 2, "usage"},
	} {
		r := run(t, nil, tc.args...)
		assert.Equal(t, tc.code, r.code, "%v: exit code", tc.args)
		var doc struct {
			Error struct {
				Message  string `json:"message"`
				Kind     string `json:"kind"`
				ExitCode int    `json:"exit_code"`
				Command  string `json:"command"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stderr), &doc), "%v: stderr is not JSON: %q", tc.args, r.stderr)
		assert.Equal(t, tc.kind, doc.Error.Kind, "%v: kind", tc.args)
		assert.Equal(t, tc.code, doc.Error.ExitCode, "%v: exit_code", tc.args)
		assert.NotEmpty(t, doc.Error.Message, "%v: message", tc.args)
		assert.True(t, strings.HasPrefix(doc.Error.Command, "queuety-worker"), "%v: command %q", tc.args, doc.Error.Command)
	}
	r := run(t, nil, "--dsn", dsn, "workflow", "status", "999")
	assert.True(t, strings.HasPrefix(r.stderr, "queuety-worker"), "without --json the error stays one text line: %q", r.stderr)
}

// TestWorkWarnsWithoutHandlers: `work` with no handlers of its own says so
// when jobs wait in its queues, and stays quiet with handlers.
func TestWorkWarnsWithoutHandlers(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	c := openClient(t, dsn)
	_, err := c.Dispatch(context.Background(), "app.mail", queuety.State{"to": "a@example.com"})
	require.NoError(t, err)
	r := run(t, nil, "--dsn", dsn, "work", "--once")
	require.Equal(t, 0, r.code, "exit code; stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "no handlers registered", "warning")
	assert.Contains(t, r.stderr, "pending_jobs=1", "pending count")
	reg := queuety.NewRegistry()
	reg.HandleJob("app.mail", func(context.Context, queuety.Payload) error { return nil })
	r = run(t, reg, "--dsn", dsn, "work", "--once")
	require.Equal(t, 0, r.code, "exit code; stderr: %s", r.stderr)
	assert.NotContains(t, r.stderr, "no handlers registered", "warning with a handler")
}

// TestDispatchPHPStyleFlags: dispatch takes wp queuety's --payload=JSON and
// a --delay in bare seconds.
func TestDispatchPHPStyleFlags(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "dispatch", "app.mail", `--payload={"to": "ada@example.com"}`, "--delay=30", "--json"))
	id, ok := res["id"].(float64)
	require.True(t, ok, "dispatch --json: %v", res)
	c := openClient(t, dsn)
	j, err := c.Job(context.Background(), int64(id))
	require.NoError(t, err)
	assert.JSONEq(t, `{"to": "ada@example.com"}`, string(j.Payload), "payload from --payload")
	due := j.AvailableAt.Sub(j.CreatedAt) // both are whole seconds: created_at rounds down, available_at up
	assert.True(t, due >= 30*time.Second && due <= 31*time.Second, "--delay=30 is 30 seconds, got %s", due)
	wantFail(t, 2, "give the payload once", "--dsn", dsn, "dispatch", "app.mail", "{}", "--payload={}")
	wantFail(t, 2, "--payload", "--dsn", dsn, "dispatch", "app.mail", "--payload=[1]")
}

// TestScheduleWithTimeZone: a cron schedule with a CRON_TZ= prefix is
// stored as given and its next run is the zone's wall-clock time in UTC.
func TestScheduleWithTimeZone(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	res := decode[map[string]any](t, mustRun(t, nil, "--dsn", dsn, "schedule", "add", "app.report", "--cron", "CRON_TZ=Asia/Tokyo 0 9 * * *", "--json"))
	id, ok := res["id"].(float64)
	require.True(t, ok, "schedule add --json: %v", res)
	c := openClient(t, dsn)
	s, err := c.ScheduleByID(context.Background(), int64(id))
	require.NoError(t, err)
	assert.Equal(t, "CRON_TZ=Asia/Tokyo 0 9 * * *", s.Expression, "stored expression")
	assert.Equal(t, 0, s.NextRun.UTC().Hour(), "09:00 in Tokyo is 00:00 UTC, next run %s", s.NextRun)
	wantFail(t, 2, "unknown time zone", "--dsn", dsn, "schedule", "add", "app.x", "--cron", "CRON_TZ=Nowhere/Land 0 9 * * *")
}

// TestInspectBoundsFailuresAndSignals: `workflow inspect` lists the
// newest failures and signals of a workflow with more than a description
// holds, counts them all (by category too) and says how many it left out;
// a large signal payload shows as its length.
func TestInspectBoundsFailuresAndSignals(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	ctx := context.Background()
	c := openClient(t, dsn)
	id, err := c.DispatchWorkflow(ctx, queuety.WorkflowDefinition{Name: "noisy", Steps: []queuety.WorkflowStep{
		{Type: queuetytype.StepSingle, Handler: "noisy.a"}}}, nil)
	require.NoError(t, err)
	const failures, signals = queuetytype.DescribeFailures + 50, queuetytype.DescribeSignals + 30
	require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
		for i := range failures {
			cat := driver.FailureApplication
			if i%5 == 0 {
				cat = driver.FailureTimeout
			}
			if err := tx.FailureInsert(ctx, &driver.Failure{WorkflowID: id, Category: cat, Message: fmt.Sprintf("fail-%03d", i),
				CreatedAt: time.Now().UTC()}); err != nil {
				return err
			}
		}
		for i := range signals {
			payload := fmt.Sprintf(`{"i":%d}`, i)
			if i == signals-1 {
				payload = `{"b":"` + strings.Repeat("x", queuetytype.DescribePayloadBytes) + `"}`
			}
			if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: id, Name: fmt.Sprintf("sig-%03d", i), Payload: []byte(payload),
				ReceivedAt: time.Now().UTC()}); err != nil {
				return err
			}
		}
		return nil
	}))
	sid := strconv.FormatInt(id, 10)
	out := mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid)
	for _, want := range []string{
		fmt.Sprintf("%d in all: application %d, timeout %d", failures, failures*4/5, failures/5),
		fmt.Sprintf("… 50 older failures not listed (the newest %d of %d are)", queuetytype.DescribeFailures, failures),
		fmt.Sprintf("… 30 older signals not listed (the newest %d of %d are)", queuetytype.DescribeSignals, signals),
		fmt.Sprintf("(%d bytes, not shown)", queuetytype.DescribePayloadBytes+8),
		fmt.Sprintf("fail-%03d", failures-1), fmt.Sprintf("sig-%03d", signals-1),
	} {
		assert.Contains(t, out, want, "inspect")
	}
	assert.NotContains(t, out, "fail-049", "an older failure")
	assert.NotContains(t, out, "sig-029", "an older signal")
	desc := decode[queuetytype.WorkflowDescription](t, mustRun(t, nil, "--dsn", dsn, "workflow", "inspect", sid, "--json"))
	assert.Len(t, desc.Failures, queuetytype.DescribeFailures, "failures in --json")
	assert.Equal(t, failures, desc.FailuresTotal, "failures_total")
	assert.Equal(t, 50, desc.FailuresMore, "failures_more")
	assert.Len(t, desc.Signals, queuetytype.DescribeSignals, "signals in --json")
	assert.Equal(t, 30, desc.SignalsMore, "signals_more")
}

// TestVersionFlag checks --version on the program and the link-time
// Version: both `version` and `--version` print it, and workers report it
// (queuety.Version).
func TestVersionFlag(t *testing.T) {
	old := cli.Version
	t.Cleanup(func() { cli.Version = old; buildinfo.SetVersion("") })
	cli.Version = "v0.1.0-linked"
	out := mustRun(t, nil, "--version")
	assert.True(t, strings.HasPrefix(out, "queuety-worker v0.1.0-linked ("), "--version: %q", out)
	assert.Equal(t, out, mustRun(t, nil, "version"))
	v := decode[map[string]any](t, mustRun(t, nil, "--version", "--json"))
	assert.Equal(t, "v0.1.0-linked", v["version"])
	assert.Equal(t, "v0.1.0-linked", queuety.Version())
	assert.Contains(t, mustRun(t, nil, "--help"), "--version")
}
