package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// phpVerbs are the verbs of `wp queuety` that Queuety PHP 0.22's CLI
// reference (docs/cli.md) documents; docs/operations.md maps each of them.
var phpVerbs = []string{
	"work", "flush", "dispatch", "status", "list", "inspect", "retry", "retry-buried", "bury", "delete", "recover",
	"purge", "pause", "resume", "metrics", "discover",
	"workflow status", "workflow list", "workflow retry", "workflow approve", "workflow reject", "workflow input",
	"workflow artifacts", "workflow artifact", "workflow pause", "workflow resume", "workflow cancel",
	"workflow timeline", "workflow state-at", "workflow rewind", "workflow fork", "workflow export", "workflow replay",
	"schedule list", "schedule add", "schedule remove", "schedule run",
	"log", "log purge",
	"webhook add", "webhook list", "webhook remove",
}

// verbsTestedElsewhere are verb-table rows whose commands are tested outside
// verbCases (none today).
var verbsTestedElsewhere []string

// verbRow is one row of the verb table in docs/operations.md.
type verbRow struct {
	verb string // the wp queuety verb, e.g. "workflow status"
	cmd  string // the queuety-worker command path, e.g. "workflow status"
}

// commandPath reads the leading command words of a code span: the words
// before the first argument (<id>), option ([--x]) or flag.
func commandPath(span string) string {
	var words []string
	for _, w := range strings.Fields(span) {
		if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// verbTableRows parses the verb table between the wp-queuety-verbs
// markers of docs/operations.md (the README links to it).
func verbTableRows(t *testing.T) []verbRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "operations.md"))
	require.NoError(t, err)
	defer f.Close()
	var rows []verbRow
	in := false
	code := regexp.MustCompile("`([^`]*)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- BEGIN wp-queuety-verbs"):
			in = true
		case strings.HasPrefix(line, "<!-- END wp-queuety-verbs"):
			in = false
		case in && strings.HasPrefix(line, "| `wp queuety "):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			require.GreaterOrEqual(t, len(cells), 2, "verb-table row %q", line)
			php, gocmd := code.FindStringSubmatch(cells[0]), code.FindStringSubmatch(cells[1])
			require.NotNil(t, php, "verb-table row %q: no code span in the first column", line)
			require.NotNil(t, gocmd, "verb-table row %q: no code span in the second column", line)
			rows = append(rows, verbRow{verb: commandPath(strings.TrimPrefix(php[1], "wp queuety ")), cmd: commandPath(gocmd[1])})
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, rows, "docs/operations.md has no verb table between the wp-queuety-verbs markers")
	return rows
}

// TestVerbTable: docs/operations.md maps every wp queuety verb, every row's
// queuety-worker command exists, and every row has a case in verbCases
// (or is named in verbsTestedElsewhere), so the table and the tests
// cannot drift apart.
func TestVerbTable(t *testing.T) {
	t.Parallel()
	rows := verbTableRows(t)
	var verbs []string
	byVerb := map[string]verbRow{}
	for _, r := range rows {
		assert.NotContains(t, byVerb, r.verb, "docs/operations.md maps %q twice", r.verb)
		byVerb[r.verb] = r
		verbs = append(verbs, r.verb)
	}
	assert.ElementsMatch(t, phpVerbs, verbs, "verb-table rows against the wp queuety verbs")
	cases := map[string]verbCase{}
	for _, c := range verbCases() {
		cases[c.verb] = c
		r, ok := byVerb[c.verb]
		if assert.True(t, ok, "test case %q has no verb-table row", c.verb) {
			assert.Equal(t, r.cmd, c.cmd, "docs/operations.md maps %q to %q, its test runs %q", c.verb, r.cmd, c.cmd)
		}
	}
	for _, r := range rows {
		if slices.Contains(verbsTestedElsewhere, r.verb) {
			assert.NotContains(t, cases, r.verb, "%q is tested here and also listed in verbsTestedElsewhere", r.verb)
			continue
		}
		assert.Contains(t, cases, r.verb, "verb-table row %q (%s) has no case in verbCases", r.verb, r.cmd)
		help := run(t, nil, append([]string{"help"}, strings.Fields(r.cmd)...)...)
		assert.Equal(t, 0, help.code, "verb-table row %q: %s is not a command: %s", r.verb, r.cmd, help.stderr)
	}
	for _, v := range verbsTestedElsewhere {
		assert.Contains(t, byVerb, v, "verbsTestedElsewhere names %q, which the verb table does not map", v)
	}
}

// verbCase tests one verb-table row: it runs the row's queuety-worker
// command against a real store and checks what changed.
type verbCase struct {
	verb string // the wp queuety verb
	cmd  string // the queuety-worker command path the verb table maps it to
	test func(t *testing.T, v *verbEnv)
}

// TestVerbs runs every case of verbCases on a fresh SQLite file and on a
// fresh table prefix of the MariaDB test server.
func TestVerbs(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) string{
		"sqlite": tempDSN,
		"mysql":  func(t *testing.T) string { dsn, _ := migrated.DSN(t); return dsn },
	}
	for name, newDSN := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range verbCases() {
				t.Run(strings.ReplaceAll(c.verb, " ", "_"), func(t *testing.T) {
					t.Parallel()
					c.test(t, newVerbEnv(t, newDSN(t), c.cmd))
				})
			}
		})
	}
}

// verbEnv is one case's store, a client on it and the registry the CLI
// runs with.
type verbEnv struct {
	t     *testing.T
	ctx   context.Context
	dsn   string
	cmd   []string
	c     *queuety.Client
	reg   *queuety.Registry
	flaky atomic.Bool // verbs.flaky fails while set
}

func newVerbEnv(t *testing.T, dsn, cmd string) *verbEnv {
	v := &verbEnv{t: t, ctx: context.Background(), dsn: dsn, cmd: strings.Fields(cmd), c: openClient(t, dsn)}
	v.reg = verbRegistry(&v.flaky)
	return v
}

// verbRegistry has a job that succeeds, a job that fails for good, and
// the steps of the test workflows.
func verbRegistry(flaky *atomic.Bool) *queuety.Registry {
	reg := queuety.NewRegistry()
	reg.HandleJob("verbs.echo", func(context.Context, queuety.Payload) error { return nil })
	reg.HandleJob("verbs.fail", func(context.Context, queuety.Payload) error { return queuety.NonRetryable(errors.New("always fails")) })
	reg.HandleStep("verbs.a", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"a": true}, nil })
	reg.HandleStep("verbs.b", func(context.Context, queuety.State) (queuety.State, error) { return queuety.State{"b": true}, nil })
	reg.HandleStep("verbs.flaky", func(context.Context, queuety.State) (queuety.State, error) {
		if flaky.Load() {
			return nil, errors.New("flaky step failed")
		}
		return queuety.State{"flaky": "ok"}, nil
	})
	return reg
}

// run runs the case's command with args and returns its standard output;
// the command must succeed.
func (v *verbEnv) run(args ...string) string {
	v.t.Helper()
	return v.runCmd(append(v.cmd[:len(v.cmd):len(v.cmd)], args...)...)
}

// runCmd runs any command on the case's store (setup such as work --once).
func (v *verbEnv) runCmd(args ...string) string {
	v.t.Helper()
	return mustRun(v.t, v.reg, append([]string{"--dsn", v.dsn}, args...)...)
}

// object runs the case's command with --json and decodes a JSON object.
func (v *verbEnv) object(args ...string) map[string]any {
	v.t.Helper()
	return decode[map[string]any](v.t, v.run(append(args, "--json")...))
}

// list runs the case's command with --json and decodes a JSON array.
func (v *verbEnv) list(args ...string) []map[string]any {
	v.t.Helper()
	return decode[[]map[string]any](v.t, v.run(append(args, "--json")...))
}

// fails runs the case's command with args and --json and checks the exit
// code and that stderr is one JSON error whose message contains want.
func (v *verbEnv) fails(code int, want string, args ...string) map[string]any {
	v.t.Helper()
	all := append([]string{"--dsn", v.dsn}, append(v.cmd[:len(v.cmd):len(v.cmd)], append(args, "--json")...)...)
	r := run(v.t, v.reg, all...)
	require.Equal(v.t, code, r.code, "%v: exit code\nstdout:\n%s\nstderr:\n%s", all, r.stdout, r.stderr)
	doc := decode[map[string]map[string]any](v.t, r.stderr)
	assert.Contains(v.t, doc["error"]["message"], want, "%v: error message", all)
	return doc["error"]
}

func (v *verbEnv) dispatch(handler string, opts ...queuety.JobOption) int64 {
	v.t.Helper()
	id, err := v.c.Dispatch(v.ctx, handler, nil, opts...)
	require.NoError(v.t, err)
	return id
}

func (v *verbEnv) job(id int64) *driver.Job {
	v.t.Helper()
	j, err := v.c.Job(v.ctx, id)
	require.NoError(v.t, err, "job %d", id)
	return j
}

func (v *verbEnv) workflow(id int64) *driver.Workflow {
	v.t.Helper()
	wf, err := v.c.Workflow(v.ctx, id)
	require.NoError(v.t, err, "workflow %d", id)
	return wf
}

// start dispatches a workflow of single steps on queue.
func (v *verbEnv) start(queue string, handlers ...string) int64 {
	v.t.Helper()
	var steps []queuety.WorkflowStep
	for _, h := range handlers {
		steps = append(steps, queuety.WorkflowStep{Type: queuetytype.StepSingle, Handler: h})
	}
	id, err := v.c.DispatchWorkflow(v.ctx, queuety.WorkflowDefinition{Name: "verbs_wf", Queue: queue, MaxAttempts: 1, Steps: steps},
		queuety.State{"n": 1})
	require.NoError(v.t, err)
	return id
}

// work runs work --once on the default queue and the given ones.
//
// Its cleaner is off: the cases plant rows days old for the operator verbs
// to act on.
func (v *verbEnv) work(queues ...string) {
	v.t.Helper()
	v.runCmd("work", "--once", "--max-time", "30s", "--retention", "off", "--queues", strings.Join(append([]string{"default"}, queues...), ","))
}

// stepJob returns the job of a workflow's step.
func (v *verbEnv) stepJob(wf int64, step int) *driver.Job {
	v.t.Helper()
	jobs, err := v.c.ListJobs(v.ctx, driver.JobFilter{WorkflowID: wf})
	require.NoError(v.t, err)
	for _, j := range jobs {
		if j.StepIndex != nil && *j.StepIndex == step {
			return j
		}
	}
	require.FailNow(v.t, "no job for the step", "workflow %d step %d", wf, step)
	return nil
}

// clientAt opens a client whose clock stands at t, to write rows dated in
// the past the way they would have been written then.
func (v *verbEnv) clientAt(t time.Time) *queuety.Client {
	v.t.Helper()
	c, err := queuety.Open(v.ctx, v.dsn, queuety.WithClock(queuety.NewFakeClock(t)), queuety.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(v.t, err)
	v.t.Cleanup(func() { c.Close() })
	return c
}

// insertLogs writes log rows as Queuety's Logger writes them.
func (v *verbEnv) insertLogs(entries ...*driver.LogEntry) {
	v.t.Helper()
	require.NoError(v.t, clientseam.StoreOf(v.c).InTx(v.ctx, func(tx driver.Tx) error { return tx.LogInsert(v.ctx, entries) }))
}

// events lists the log events of a job.
func (v *verbEnv) events(jobID int64) []string {
	v.t.Helper()
	logs, err := v.c.Logs(v.ctx, driver.LogFilter{JobID: jobID})
	require.NoError(v.t, err)
	var out []string
	for _, l := range logs {
		out = append(out, string(l.Event))
	}
	return out
}

func idArg(id int64) string { return strconv.FormatInt(id, 10) }

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// byKey indexes JSON rows by the string value of key.
func byKey(rows []map[string]any, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		s, _ := r[key].(string)
		out[s] = r
	}
	return out
}

// verbCases has one case per verb-table row (but the rows named in
// verbsTestedElsewhere).
func verbCases() []verbCase {
	return append(append(jobVerbCases(), workflowVerbCases()...), append(scheduleAndLogVerbCases(), extraVerbCases()...)...)
}

func jobVerbCases() []verbCase {
	return []verbCase{
		{"work", "work", func(t *testing.T, v *verbEnv) {
			a, b := v.dispatch("verbs.echo", queuety.OnQueue("q1")), v.dispatch("verbs.echo", queuety.OnQueue("q1"))
			out := v.object("--once", "--queue", "q1", "--max-time", "30s")
			assert.Equal(t, int64(2), num(out["succeeded"]), "work --once --json: %v", out)
			for _, id := range []int64{a, b} {
				assert.Equal(t, queuetytype.JobCompleted, v.job(id).Status, "job %d", id)
			}
			v.fails(2, "give --queues or --queue", "--once", "--queue", "a", "--queues", "b")
		}},
		{"flush", "flush", func(t *testing.T, v *verbEnv) {
			a, b := v.dispatch("verbs.echo", queuety.OnQueue("a")), v.dispatch("verbs.fail", queuety.OnQueue("b"), queuety.MaxAttempts(1))
			other := v.dispatch("verbs.echo", queuety.OnQueue("c"))
			out := v.object("--queue", "a,b")
			assert.Equal(t, int64(2), num(out["processed"]), "flush --json: %v", out)
			assert.Equal(t, int64(1), num(out["failed"]), "flush --json: %v", out)
			assert.Equal(t, queuetytype.JobCompleted, v.job(a).Status, "job on a")
			assert.Equal(t, queuetytype.JobBuried, v.job(b).Status, "failing job on b")
			assert.Equal(t, queuetytype.JobPending, v.job(other).Status, "job on a queue not flushed")
			assert.Contains(t, v.run("--queue", "c"), "Flushed 1 job from c", "text output")
		}},
		{"dispatch", "dispatch", func(t *testing.T, v *verbEnv) {
			before := time.Now()
			out := v.object("verbs.echo", "--payload", `{"to":"ada"}`, "--queue", "mail", "--priority", "2", "--delay", "60")
			j := v.job(num(out["id"]))
			assert.Equal(t, "mail", j.Queue, "queue")
			assert.Equal(t, queuetytype.PriorityHigh, j.Priority, "priority")
			assert.JSONEq(t, `{"to":"ada"}`, string(j.Payload), "payload")
			assert.True(t, j.AvailableAt.After(before.Add(58*time.Second)), "available_at %s is not a minute away", j.AvailableAt)
			v.fails(2, "must be a JSON object", "verbs.echo", "--payload", "[1]")
		}},
		{"status", "status", func(t *testing.T, v *verbEnv) {
			v.dispatch("verbs.echo", queuety.OnQueue("mail"))
			v.dispatch("verbs.echo", queuety.OnQueue("mail"))
			v.dispatch("verbs.echo")
			require.NoError(t, v.c.PauseQueue(v.ctx, "mail"))
			out := v.object("--queue", "mail")
			assert.NotContains(t, out, "workflows", "status --queue has no workflow counts")
			queues, _ := out["queues"].([]any)
			require.Len(t, queues, 1, "status --queue mail: %v", out)
			q := queues[0].(map[string]any)
			assert.Equal(t, "mail", q["queue"], "queue")
			assert.Equal(t, int64(2), num(q["pending"]), "pending")
			assert.Equal(t, true, q["paused"], "paused")
			empty := v.object("--queue", "nothing")["queues"].([]any)[0].(map[string]any)
			assert.Equal(t, int64(0), num(empty["total"]), "a queue without jobs")
			text := v.run("--queue", "mail")
			assert.Contains(t, text, "paused since", "text")
			assert.NotContains(t, text, "default", "text shows only mail")
		}},
		{"list", "job list", func(t *testing.T, v *verbEnv) {
			mail := v.dispatch("verbs.echo", queuety.OnQueue("mail"))
			v.dispatch("verbs.echo")
			rows := v.list("--queue", "mail", "--status", "pending")
			require.Len(t, rows, 1, "job list --queue mail")
			assert.Equal(t, mail, num(rows[0]["id"]), "job list row")
			v.fails(2, "--status", "--status", "sleeping")
		}},
		{"inspect", "job show", func(t *testing.T, v *verbEnv) {
			id := v.dispatch("verbs.echo")
			v.work()
			out := v.object(idArg(id))
			assert.Equal(t, "completed", out["job"].(map[string]any)["status"], "job show --json: %v", out)
			var events []string
			for _, l := range out["logs"].([]any) {
				events = append(events, l.(map[string]any)["event"].(string))
			}
			assert.Equal(t, []string{"started", "completed"}, events, "log rows")
			v.fails(1, "not found", "999999")
		}},
		{"retry", "job retry", func(t *testing.T, v *verbEnv) {
			id := v.dispatch("verbs.fail", queuety.MaxAttempts(1))
			v.work()
			require.Equal(t, queuetytype.JobBuried, v.job(id).Status, "buried by its failure")
			out := v.object(idArg(id))
			assert.Equal(t, "pending", out["status"], "job retry --json: %v", out)
			j := v.job(id)
			assert.Equal(t, queuetytype.JobPending, j.Status, "status")
			assert.Equal(t, 0, j.Attempts, "attempts reset")
			assert.Empty(t, j.ErrorMessage, "error cleared")
			v.fails(1, "only buried or failed", idArg(id))
		}},
		{"retry-buried", "job retry-buried", func(t *testing.T, v *verbEnv) {
			mail := v.dispatch("verbs.fail", queuety.OnQueue("mail"), queuety.MaxAttempts(1))
			def := v.dispatch("verbs.fail", queuety.MaxAttempts(1))
			v.work("mail")
			wf := v.start("idle", "verbs.a")
			require.NoError(t, v.c.BuryJob(v.ctx, v.stepJob(wf, 0).ID, ""))
			out := v.object("--queue", "mail", "--handler", "verbs.fail")
			assert.Equal(t, int64(1), num(out["retried"]), "retry-buried --queue mail: %v", out)
			assert.Equal(t, queuetytype.JobPending, v.job(mail).Status, "job on mail")
			assert.Equal(t, 0, v.job(mail).Attempts, "attempts reset")
			assert.Equal(t, queuetytype.JobBuried, v.job(def).Status, "job on default")
			out = v.object()
			assert.Equal(t, int64(1), num(out["retried"]), "retry-buried: %v", out)
			assert.Equal(t, int64(1), num(out["workflow_steps_left"]), "retry-buried: %v", out)
			assert.Equal(t, queuetytype.JobPending, v.job(def).Status, "job on default")
			assert.Contains(t, v.run(), "1 step job of workflows left buried", "text")
		}},
		{"bury", "job bury", func(t *testing.T, v *verbEnv) {
			id := v.dispatch("verbs.echo")
			out := v.object(idArg(id))
			assert.Equal(t, "buried", out["status"], "bury --json: %v", out)
			j := v.job(id)
			assert.Equal(t, queuetytype.JobBuried, j.Status, "status")
			assert.Equal(t, "Manually buried via CLI.", j.ErrorMessage, "error_message, as wp queuety bury writes it")
			assert.False(t, j.FailedAt.IsZero(), "failed_at")
			assert.Empty(t, v.events(id), "log rows")
			wf := v.start("idle", "verbs.a", "verbs.b")
			out = v.object(idArg(v.stepJob(wf, 0).ID), "--message", "stuck")
			assert.Equal(t, "failed", out["workflow_status"], "bury a step --json: %v", out)
			assert.Equal(t, "stuck", v.workflow(wf).ErrorMessage, "workflow error")
			v.fails(1, "only pending, processing or failed", idArg(id))
			assert.Equal(t, "not_found", v.fails(1, "not found", "999999")["kind"], "error kind")
			assert.Equal(t, "usage", v.fails(2, "positive integer", "x")["kind"], "error kind")
		}},
		{"delete", "job delete", func(t *testing.T, v *verbEnv) {
			id := v.dispatch("verbs.echo")
			v.work()
			out := v.object(idArg(id))
			assert.Equal(t, true, out["deleted"], "delete --json: %v", out)
			_, err := v.c.Job(v.ctx, id)
			require.ErrorIs(t, err, queuetytype.ErrNotFound, "deleted job")
			assert.Equal(t, []string{"started", "completed"}, v.events(id), "log rows kept")
			v.fails(1, "not found", idArg(id))
			wf := v.start("idle", "verbs.a")
			v.fails(1, "cancel or rewind the workflow", idArg(v.stepJob(wf, 0).ID))
		}},
		{"recover", "job recover", func(t *testing.T, v *verbEnv) {
			past := v.clientAt(time.Now().Add(-time.Hour))
			id, err := past.Dispatch(v.ctx, "verbs.echo", nil)
			require.NoError(t, err)
			claimed, err := clientseam.Engine(past).Claim(v.ctx, engine.ClaimRequest{Queues: []string{"default"}, Handlers: []string{"verbs.echo"}, Limit: 1})
			require.NoError(t, err)
			require.Len(t, claimed, 1, "claimed an hour ago")
			fresh := v.dispatch("verbs.echo", queuety.OnQueue("live"))
			_, err = clientseam.Engine(v.c).Claim(v.ctx, engine.ClaimRequest{Queues: []string{"live"}, Handlers: []string{"verbs.echo"}, Limit: 1})
			require.NoError(t, err)
			out := v.object()
			assert.Equal(t, int64(1), num(out["recovered"]), "recover --json: %v", out)
			assert.Equal(t, queuetytype.JobPending, v.job(id).Status, "the stale job")
			assert.Equal(t, []string{"retried"}, v.events(id), "log rows, as Queuety's recover_stale writes them")
			assert.Equal(t, queuetytype.JobProcessing, v.job(fresh).Status, "a fresh claim")
			v.fails(2, "--stale-timeout", "--stale-timeout", "0s")
		}},
		{"purge", "job purge", func(t *testing.T, v *verbEnv) {
			past := v.clientAt(time.Now().Add(-10 * 24 * time.Hour))
			old, err := past.Dispatch(v.ctx, "verbs.echo", nil)
			require.NoError(t, err)
			w := worker.New(past, worker.WithRegistry(v.reg), worker.NoMaintenance(), worker.WithLogger(slog.New(slog.DiscardHandler)))
			_, err = w.RunOnce(v.ctx, 30*time.Second)
			require.NoError(t, err)
			require.Equal(t, queuetytype.JobCompleted, v.job(old).Status, "completed ten days ago")
			recent := v.dispatch("verbs.echo")
			v.work()
			out := v.object("--older-than", "7")
			assert.Equal(t, int64(1), num(out["deleted"]), "purge --older-than 7 (days): %v", out)
			_, err = v.c.Job(v.ctx, old)
			require.ErrorIs(t, err, queuetytype.ErrNotFound, "the old job")
			assert.Equal(t, queuetytype.JobCompleted, v.job(recent).Status, "the recent job")
			out = v.object() // 7 days without --older-than, as PHP
			assert.Equal(t, int64(0), num(out["deleted"]), "purge: %v", out)
			assert.Equal(t, queuetytype.JobCompleted, v.job(recent).Status, "the recent job after purge without --older-than")
			v.fails(2, "--older-than must not be negative", "--older-than", "-1h")
		}},
		{"pause", "queue pause", func(t *testing.T, v *verbEnv) {
			v.fails(1, "--force pauses it ahead of its first job", "mail")
			out := v.object("mail", "--force")
			assert.Equal(t, true, out["paused"], "pause --json: %v", out)
			states, err := v.c.QueueStates(v.ctx)
			require.NoError(t, err)
			require.Len(t, states, 1, "queue_states rows")
			assert.Equal(t, "mail", states[0].Queue, "paused queue")
			v.fails(2, "missing arguments")
		}},
		{"resume", "queue resume", func(t *testing.T, v *verbEnv) {
			require.NoError(t, v.c.PauseQueue(v.ctx, "mail"))
			out := v.object("mail")
			assert.Equal(t, false, out["paused"], "resume --json: %v", out)
			states, err := v.c.QueueStates(v.ctx)
			require.NoError(t, err)
			assert.Empty(t, states, "queue_states rows after resume")
		}},
		{"metrics", "metrics", func(t *testing.T, v *verbEnv) {
			v.dispatch("verbs.echo")
			v.dispatch("verbs.echo")
			v.dispatch("verbs.fail", queuety.MaxAttempts(1))
			v.work()
			rows := byKey(v.list("--minutes", "60"), "handler")
			require.Len(t, rows, 2, "metrics --json: %v", rows)
			echo := rows["verbs.echo"]
			assert.Equal(t, int64(2), num(echo["completed"]), "verbs.echo: %v", echo)
			assert.Equal(t, int64(0), num(echo["failed"]), "verbs.echo: %v", echo)
			for _, k := range []string{"avg_ms", "p95_ms", "error_rate"} {
				assert.Contains(t, echo, k, "verbs.echo: %v", echo)
			}
			fail := rows["verbs.fail"]
			assert.Equal(t, int64(0), num(fail["completed"]), "verbs.fail: %v", fail)
			assert.GreaterOrEqual(t, num(fail["failed"]), int64(1), "verbs.fail: %v", fail)
			assert.Equal(t, 1.0, fail["error_rate"], "verbs.fail: %v", fail)
			assert.Contains(t, v.run(), "ERROR RATE", "text")
			v.fails(2, "--minutes must be at least 1", "--minutes", "0")
		}},
		{"discover", "discover", func(t *testing.T, v *verbEnv) {
			rows := byKey(v.list(), "name")
			assert.Equal(t, "job", rows["verbs.echo"]["kind"], "discover --json: %v", rows)
			assert.Equal(t, "step", rows["verbs.a"]["kind"], "discover --json: %v", rows)
			v.fails(2, "takes no directory or namespace", "src/Handlers", `App\Handlers`)
		}},
	}
}

func workflowVerbCases() []verbCase {
	waitFor := func(v *verbEnv, human string, signals ...string) int64 {
		id, err := v.c.DispatchWorkflow(v.ctx, queuety.WorkflowDefinition{Name: "ask", Steps: []queuety.WorkflowStep{
			{Type: queuetytype.StepWaitForSignal, Signals: signals, Mode: queuetytype.WaitAny, HumanWait: human, ResultKey: human},
		}}, nil)
		require.NoError(v.t, err)
		v.work()
		require.Equal(v.t, queuetytype.WorkflowWaitingForSignal, v.workflow(id).Status, "waiting")
		return id
	}
	answer := func(verb, human, signal string, signals ...string) verbCase {
		return verbCase{"workflow " + verb, "workflow " + verb, func(t *testing.T, v *verbEnv) {
			id := waitFor(v, human, signals...)
			out := v.object(idArg(id), `{"by":"ada"}`)
			assert.Equal(t, signal, out["signal"], "%s --json: %v", verb, out)
			assert.Equal(t, "completed", out["status"], "%s --json: %v", verb, out)
			v.fails(2, "must be a JSON object", idArg(id), "[1]")
			v.fails(1, "is not waiting for an answer (it is completed)", idArg(id))
		}}
	}
	// done runs a two-step workflow to completion.
	done := func(v *verbEnv) int64 {
		id := v.start("", "verbs.a", "verbs.b")
		v.work()
		require.Equal(v.t, queuetytype.WorkflowCompleted, v.workflow(id).Status, "workflow")
		return id
	}
	return []verbCase{
		{"workflow status", "workflow status", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a")
			out := v.object(idArg(id))
			assert.Equal(t, "running", out["status"], "status --json: %v", out)
			assert.Equal(t, "verbs_wf", out["name"], "status --json: %v", out)
			v.fails(1, "not found", "999999")
		}},
		{"workflow list", "workflow list", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a")
			rows := v.list("--status", "running", "--limit", "10")
			require.Len(t, rows, 1, "workflow list")
			assert.Equal(t, id, num(rows[0]["id"]), "workflow list")
			assert.Empty(t, v.list("--status", "failed"), "failed workflows")
		}},
		{"workflow retry", "workflow retry", func(t *testing.T, v *verbEnv) {
			v.flaky.Store(true)
			id := v.start("", "verbs.flaky")
			v.work()
			require.Equal(t, queuetytype.WorkflowFailed, v.workflow(id).Status, "failed workflow")
			out := v.object(idArg(id))
			assert.Equal(t, "running", out["status"], "retry --json: %v", out)
			v.flaky.Store(false)
			v.work()
			assert.Equal(t, queuetytype.WorkflowCompleted, v.workflow(id).Status, "after retry")
			v.fails(1, "only a failed workflow", idArg(id))
		}},
		answer("approve", "approval", "approval", "approval"),
		answer("reject", "decision", "rejected", "approved", "rejected"),
		answer("input", "input", "input", "input"),
		{"workflow pause", "workflow pause", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a", "verbs.b")
			assert.Equal(t, "paused", v.object(idArg(id))["status"], "pause --json")
			assert.Equal(t, queuetytype.WorkflowPaused, v.workflow(id).Status, "row")
			v.fails(1, "only a running workflow", idArg(id))
		}},
		{"workflow resume", "workflow resume", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a", "verbs.b")
			require.NoError(t, v.c.PauseWorkflow(v.ctx, id))
			assert.Equal(t, "running", v.object(idArg(id))["status"], "resume --json")
			assert.Equal(t, queuetytype.WorkflowRunning, v.workflow(id).Status, "row")
		}},
		{"workflow cancel", "workflow cancel", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a", "verbs.b")
			assert.Equal(t, "cancelled", v.object(idArg(id))["status"], "cancel --json")
			assert.Equal(t, queuetytype.JobBuried, v.stepJob(id, 0).Status, "the open step job")
			v.fails(1, "already cancelled", idArg(id))
		}},
		{"workflow timeline", "workflow timeline", func(t *testing.T, v *verbEnv) {
			id := done(v)
			var events []string
			for _, e := range v.list(idArg(id)) {
				events = append(events, e["event"].(string))
			}
			for _, want := range []string{"workflow_started", "step_completed", "workflow_completed"} {
				assert.Contains(t, events, want, "timeline --json")
			}
		}},
		{"workflow state-at", "workflow state-at", func(t *testing.T, v *verbEnv) {
			id := done(v)
			assert.Equal(t, map[string]any{"a": true, "n": 1.0}, v.object(idArg(id), "0"), "state after step 0")
			v.fails(2, "STEP must be a step index", idArg(id), "x")
		}},
		{"workflow rewind", "workflow rewind", func(t *testing.T, v *verbEnv) {
			id := done(v)
			out := v.object(idArg(id), "0")
			assert.Equal(t, int64(1), num(out["current_step"]), "rewind --json: %v", out)
			wf := v.workflow(id)
			assert.Equal(t, queuetytype.WorkflowRunning, wf.Status, "rewound workflow")
			assert.Equal(t, 1, wf.CurrentStep, "current step")
			v.work()
			assert.Equal(t, queuetytype.WorkflowCompleted, v.workflow(id).Status, "ran on")
		}},
		{"workflow fork", "workflow fork", func(t *testing.T, v *verbEnv) {
			id := v.start("idle", "verbs.a", "verbs.b")
			out := v.object(idArg(id))
			fork := v.workflow(num(out["forked_workflow_id"]))
			assert.NotEqual(t, id, fork.ID, "a new workflow")
			assert.Equal(t, queuetytype.WorkflowRunning, fork.Status, "fork status")
		}},
		{"workflow export", "workflow export", func(t *testing.T, v *verbEnv) {
			id := done(v)
			file := filepath.Join(t.TempDir(), "wf.json")
			out := v.object(idArg(id), "--output", file)
			assert.Positive(t, num(out["bytes"]), "export --json: %v", out)
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b, &doc))
			for _, k := range []string{"workflow", "jobs", "events", "logs"} {
				assert.Contains(t, doc, k, "export key")
			}
		}},
		{"workflow replay", "workflow replay", func(t *testing.T, v *verbEnv) {
			id := done(v)
			doc, err := v.c.ExportWorkflow(v.ctx, id)
			require.NoError(t, err)
			file := filepath.Join(t.TempDir(), "wf.json")
			require.NoError(t, os.WriteFile(file, doc, 0o600))
			wf := v.workflow(num(v.object(file)["id"]))
			assert.True(t, strings.HasPrefix(wf.Name, "verbs_wf_replay_"), "replayed name %q", wf.Name)
			assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "replayed status")
			v.fails(1, "read export", filepath.Join(t.TempDir(), "missing.json"))
		}},
	}
}

func scheduleAndLogVerbCases() []verbCase {
	return []verbCase{
		{"schedule list", "schedule list", func(t *testing.T, v *verbEnv) {
			_, err := v.c.Schedule("verbs.echo", nil).Every(time.Hour).Save(v.ctx)
			require.NoError(t, err)
			rows := v.list()
			require.Len(t, rows, 1, "schedule list --json")
			assert.Equal(t, "verbs.echo", rows[0]["handler"], "schedule list --json")
		}},
		{"schedule add", "schedule add", func(t *testing.T, v *verbEnv) {
			out := v.object("verbs.echo", "--every", "1 hour", "--payload", `{"a":1}`, "--queue", "mail")
			s, err := v.c.ScheduleByID(v.ctx, num(out["id"]))
			require.NoError(t, err)
			assert.Equal(t, "1 hour", s.Expression, "--every as wp queuety takes it")
			assert.Equal(t, driver.ScheduleInterval, s.ExpressionType, "type")
			assert.Equal(t, "mail", s.Queue, "queue")
			assert.JSONEq(t, `{"a":1}`, string(s.Payload), "payload")
			s, err = v.c.ScheduleByID(v.ctx, num(v.object("verbs.report", "--cron", "0 3 * * *")["id"]))
			require.NoError(t, err)
			assert.Equal(t, driver.ScheduleCron, s.ExpressionType, "cron type")
			v.fails(2, "give one of --cron, --every or --interval", "verbs.none")
		}},
		{"schedule remove", "schedule remove", func(t *testing.T, v *verbEnv) {
			byName, err := v.c.Schedule("verbs.echo", nil).Every(time.Hour).Save(v.ctx)
			require.NoError(t, err)
			byID, err := v.c.Schedule("verbs.report", nil).Every(time.Hour).Save(v.ctx)
			require.NoError(t, err)
			out := v.object("verbs.echo")
			assert.Equal(t, byName, num(out["id"]), "remove by handler --json: %v", out)
			assert.Equal(t, byID, num(v.object(idArg(byID))["id"]), "remove by id")
			list, err := v.c.Schedules(v.ctx)
			require.NoError(t, err)
			assert.Empty(t, list, "schedules left")
			v.fails(1, "not found", "verbs.echo")
		}},
		{"schedule run", "schedule run", func(t *testing.T, v *verbEnv) {
			past := v.clientAt(time.Now().Add(-2 * time.Hour))
			_, err := past.Schedule("verbs.echo", nil).Every(time.Hour).Save(v.ctx)
			require.NoError(t, err)
			_, err = v.c.Schedule("verbs.report", nil).Every(time.Hour).Save(v.ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(1), num(v.object()["dispatched"]), "first tick: the due schedule fires once")
			assert.Equal(t, int64(0), num(v.object()["dispatched"]), "second tick: that slot has fired")
			jobs, err := v.c.ListJobs(v.ctx, driver.JobFilter{})
			require.NoError(t, err)
			require.Len(t, jobs, 1, "jobs dispatched")
			assert.Equal(t, "verbs.echo", jobs[0].Handler, "the due schedule's job")
		}},
		{"log", "log list", func(t *testing.T, v *verbEnv) {
			id := v.dispatch("verbs.echo")
			v.work()
			v.insertLogs(&driver.LogEntry{Handler: "verbs.old", Event: driver.LogCompleted, CreatedAt: time.Now().Add(-48 * time.Hour)})
			var events []string
			for _, l := range v.list("--job", idArg(id)) {
				events = append(events, l["event"].(string))
			}
			assert.Equal(t, []string{"started", "completed"}, events, "log list --job")
			rows := v.list("--handler", "verbs.echo", "--event", "completed", "--since", "1h")
			require.Len(t, rows, 1, "filters combine")
			assert.Equal(t, id, num(rows[0]["job_id"]), "the completed row")
			assert.NotContains(t, byKey(v.list(), "handler"), "verbs.old", "no filter: the last 24 hours")
			assert.Len(t, v.list("--handler", "verbs.old"), 1, "a handler filter reaches further back")
			v.fails(2, "--event", "--event", "exploded")
			v.fails(2, "--since", "--since", "yesterday-ish")
		}},
		{"log purge", "log purge", func(t *testing.T, v *verbEnv) {
			old := time.Now().Add(-10 * 24 * time.Hour)
			v.insertLogs(&driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: old},
				&driver.LogEntry{Handler: "h", Event: driver.LogFailed, CreatedAt: old},
				&driver.LogEntry{Handler: "h", Event: driver.LogCompleted, CreatedAt: time.Now()})
			out := v.object("--older-than", "7")
			assert.Equal(t, int64(2), num(out["deleted"]), "log purge --older-than 7: %v", out)
			left, err := v.c.Logs(v.ctx, driver.LogFilter{})
			require.NoError(t, err)
			assert.Len(t, left, 1, "log rows left")
			v.fails(2, "--older-than is required")
		}},
	}
}
