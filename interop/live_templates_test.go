package interop_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// sameDispatch checks that two workflows were written alike: the workflow
// row's name, status, steps and state, and each step job's handler, queue,
// priority, attempts and payload.
func sameDispatch(t *testing.T, c *queuety.Client, want, got int64) {
	t.Helper()
	ctx := context.Background()
	ww, err := c.Workflow(ctx, want)
	require.NoError(t, err)
	gw, err := c.Workflow(ctx, got)
	require.NoError(t, err)
	assert.Equal(t, []any{ww.Name, ww.Status, ww.TotalSteps, ww.CurrentStep, string(ww.State)},
		[]any{gw.Name, gw.Status, gw.TotalSteps, gw.CurrentStep, string(gw.State)}, "workflow row, PHP's (expected) and Go's (actual)")
	wj, err := c.ListJobs(ctx, queuetytype.JobFilter{WorkflowID: want})
	require.NoError(t, err)
	gj, err := c.ListJobs(ctx, queuetytype.JobFilter{WorkflowID: got})
	require.NoError(t, err)
	require.Len(t, gj, len(wj), "step jobs")
	for i := range wj {
		w, g := wj[i], gj[i]
		assert.Equal(t, []any{w.Handler, w.Queue, w.Priority, w.MaxAttempts, w.Status, *w.StepIndex, string(w.Payload)},
			[]any{g.Handler, g.Queue, g.Priority, g.MaxAttempts, g.Status, *g.StepIndex, string(g.Payload)}, "step job %d", i)
	}
}

// TestLiveTemplates: a workflow template registered in Queuety PHP and
// exported with the bridge's QueuetyGo\WorkflowTemplates is run by name
// from Go (RunWorkflow) with the rows PHP's run_workflow writes; a template
// registered in Go is loaded by PHP and run by name there, with the rows
// Go writes, its Go steps run by a Go worker; and a PHP workflow whose
// step calls Queuety::run_workflow() on the Go template waits for it and
// completes.
func TestLiveTemplates(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	dir := t.TempDir()
	// A mixed fleet keeps the Go-only steps on a queue PHP workers do not
	// poll: a PHP worker fails a job whose handler is no class there.
	w := interopWorker(c, worker.Queues("default", "go"))
	w.HandleStep("go_triple", func(_ context.Context, s queuety.State) (queuety.State, error) {
		n, _ := s.Int("n")
		return queuety.State{"tripled": n * 3}, nil
	})
	run := func() {
		t.Helper()
		_, err := w.RunOnce(ctx, time.Minute)
		require.NoError(t, err)
	}
	phpID := func(out string) int64 {
		t.Helper()
		id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		require.NoError(t, err, "PHP printed %q", out)
		return id
	}

	t.Run("PHP template run by Go", func(t *testing.T) {
		fromPHP := phpID(php.eval(`use Queuety\Queuety; use Queuety\Enums\Priority;
Queuety::register_workflow_template(Queuety::define_workflow('onboarding')
	->on_queue('default')->with_priority(Priority::High)->max_attempts(5)
	->then('QueuetyGoInterop\Increment')->then('QueuetyGoInterop\Finish')
	->must_complete_within(hours: 1)->version('v2'));
\QueuetyGo\WorkflowTemplates::export('` + dir + `/php');
echo Queuety::run_workflow('onboarding', ['counter' => 1, 'email' => 'ada@example.com']);`))
		n, err := c.LoadWorkflowTemplates(filepath.Join(dir, "php"))
		require.NoError(t, err)
		assert.Equal(t, 1, n, "templates loaded")
		assert.Equal(t, []string{"onboarding"}, c.WorkflowTemplates())
		fromGo, err := c.RunWorkflow(ctx, "onboarding", queuety.State{"email": "ada@example.com", "counter": 1})
		require.NoError(t, err)
		sameDispatch(t, c, fromPHP, fromGo)
		run()
		for _, id := range []int64{fromPHP, fromGo} {
			st, err := c.State(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, queuety.State{"email": "ada@example.com", "counter": int64(2), "finished": true}, st, "workflow %d", id)
		}
		_, err = c.RunWorkflow(ctx, "missing", nil)
		assert.ErrorIs(t, err, queuetytype.ErrNotFound)
	})

	t.Run("Go template run by PHP", func(t *testing.T) {
		def, err := builder.Workflow("triple").MaxAttempts(4).
			Then(`QueuetyGoInterop\Increment`, builder.Name("inc")).
			Then("go_triple", builder.Retry(2), builder.Queue("go")).
			OnQueue("default").Definition()
		require.NoError(t, err)
		require.NoError(t, c.RegisterWorkflowTemplate(def))
		raw, err := c.WorkflowTemplateJSON("triple")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "go"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go", "triple.json"), raw, 0o644))
		php.env = append(php.env, "QUEUETY_INTEROP_TEMPLATES="+filepath.Join(dir, "go"))

		fromPHP := phpID(php.eval(`echo \Queuety\Queuety::run_workflow('triple', ['n' => 5]);`))
		fromGo, err := c.RunWorkflow(ctx, "triple", queuety.State{"n": 5})
		require.NoError(t, err)
		sameDispatch(t, c, fromPHP, fromGo)
		php.run("work") // PHP runs Increment; go_triple is not a class there
		run()
		for _, id := range []int64{fromPHP, fromGo} {
			wf, err := c.Workflow(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d (error %q)", id, wf.ErrorMessage)
			st, err := c.State(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, int64(15), st["tripled"], "workflow %d", id)
		}

		// A PHP workflow's step starts the Go template by name and waits.
		parent := phpID(php.eval(`use Queuety\Queuety;
echo Queuety::workflow('parent')->then('QueuetyGoInterop\StartTemplate')
	->wait_for_workflow('template_workflow_id', 'template')->then('QueuetyGoInterop\Finish')
	->dispatch(['template' => 'triple', 'n' => 2]);`))
		php.run("work") // StartTemplate runs in PHP and parks the parent
		wf, err := c.Workflow(ctx, parent)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowWaitingForWorkflows, wf.Status, "parent (error %q)", wf.ErrorMessage)
		run() // the template's steps, then the parent's Finish
		wf, err = c.Workflow(ctx, parent)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "parent (error %q)", wf.ErrorMessage)
		st, err := c.State(ctx, parent)
		require.NoError(t, err)
		tpl, _ := st["template"].(map[string]any)
		assert.Equal(t, int64(6), tpl["tripled"], "the template's final state under the parent's result key")
	})
}
