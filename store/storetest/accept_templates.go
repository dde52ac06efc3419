package storetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

func init() {
	register("Templates/RegisterAndRun", testTemplatesRun)
	register("Templates/SharedAsBundles", testTemplatesBundles)
	register("Templates/BadInput", testTemplatesBadInput)
}

// testTemplatesRun: a registered template runs by name any number of
// times, each run its own workflow with the private keys Queuety's
// dispatch_workflow_definition writes; an idempotency key returns the
// first run's id.
func testTemplatesRun(t *testing.T, e *Env) {
	def, err := builder.Workflow("onboarding").OnQueue("users").MaxAttempts(5).
		Then("create_account").Then("welcome").
		OnCancel("cleanup").MustCompleteWithin(0, 1, 0, 0).RunTimeout(10 * time.Minute).Version("v3").
		Definition()
	require.NoError(t, err)
	require.NoError(t, e.C.RegisterWorkflowTemplate(def))
	assert.Equal(t, []string{"onboarding"}, e.C.WorkflowTemplates(), "registered names")

	a, err := e.C.RunWorkflow(e.Ctx, "onboarding", queuety.State{"email": "ada@example.com"})
	require.NoError(t, err)
	b, err := e.C.RunWorkflow(e.Ctx, "onboarding", queuety.State{"email": "grace@example.com"}, queuety.IdempotencyKey("grace"))
	require.NoError(t, err)
	again, err := e.C.RunWorkflow(e.Ctx, "onboarding", queuety.State{"email": "other"}, queuety.IdempotencyKey("grace"))
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "two runs, two workflows")
	assert.Equal(t, b, again, "the idempotency key returns the first run")

	raw := e.rawState(a)
	assert.Equal(t, []string{"email", "_steps", "_queue", "_priority", "_max_attempts", "_on_cancel", "_deadline_seconds",
		"_definition_version", "_definition_hash", "_run_timeout_seconds"}, raw.Keys(), "state keys in dispatch_workflow_definition's order")
	onCancel, _ := raw.Get("_on_cancel")
	assert.Equal(t, `{"class":"cleanup","payload":[]}`, string(mustMarshal(t, onCancel)), "callback in its runtime form")
	assert.Equal(t, "grace@example.com", e.State(b)["email"], "the key's first state")
	rb := e.rawState(b)
	key, _ := rb.Get("_idempotency_key")
	assert.Equal(t, "grace", key, "_idempotency_key")

	var (
		mu  sync.Mutex
		saw []string
	)
	w := e.Worker(nil, worker.Queues("users"))
	for _, h := range []string{"create_account", "welcome"} {
		w.HandleStep(h, func(_ context.Context, s queuety.State) (queuety.State, error) {
			mu.Lock()
			defer mu.Unlock()
			saw = append(saw, h+":"+s.String("email"))
			return nil, nil
		})
	}
	e.Drain(w)
	for _, id := range []int64{a, b} {
		wf := e.Workflow(id)
		assert.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "run %d (error %q)", id, wf.ErrorMessage)
		assert.Equal(t, "onboarding", wf.Name, "name")
	}
	assert.ElementsMatch(t, []string{"create_account:ada@example.com", "welcome:ada@example.com",
		"create_account:grace@example.com", "welcome:grace@example.com"}, saw, "steps run")

	_, err = e.C.RunWorkflow(e.Ctx, "offboarding", nil)
	assert.ErrorIs(t, err, queuetytype.ErrNotFound, "unknown template")
	assert.ErrorContains(t, err, `"offboarding" is not registered`)
}

// testTemplatesBundles: a template travels as its runtime definition
// bundle: another client loads the files and runs it with the same rows.
func testTemplatesBundles(t *testing.T, e *Env) {
	def, err := builder.Workflow("report").Then("gather").WaitForSignal("approved").Then("publish").MaxTransitions(20).Definition()
	require.NoError(t, err)
	require.NoError(t, e.C.RegisterWorkflowTemplate(def))
	raw, err := e.C.WorkflowTemplateJSON("report")
	require.NoError(t, err)
	assert.Contains(t, string(raw), `{"name":"report","steps":[{"type":"single","name":"0","class":"gather"}`, "Queuety's bundle shape")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), raw, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a template"), 0o600))

	other := e.Client()
	n, err := other.LoadWorkflowTemplates(dir)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only *.json files load")
	n, err = other.LoadWorkflowTemplates(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one file loads too")
	a, err := e.C.RunWorkflow(e.Ctx, "report", queuety.State{"q": 3})
	require.NoError(t, err)
	b, err := other.RunWorkflow(e.Ctx, "report", queuety.State{"q": 3})
	require.NoError(t, err)
	assert.Equal(t, string(e.Workflow(a).State), string(e.Workflow(b).State), "same state from the bundle")
	assert.Contains(t, string(e.Workflow(a).State), `"_workflow_budget":{"max_transitions":20},"_workflow_counters":{"transitions":0,"cost_units":0,"started_workflows":0}`)
}

// testTemplatesBadInput: bad templates are refused when registered, with
// the reason, and change nothing.
func testTemplatesBadInput(t *testing.T, e *Env) {
	keyed, err := builder.Workflow("k").Then("a").IdempotencyKey("once").Definition()
	require.NoError(t, err)
	assert.ErrorIs(t, e.C.RegisterWorkflowTemplate(keyed), queuetytype.ErrInvalidArgument, "a template with an idempotency key")
	assert.ErrorIs(t, e.C.RegisterWorkflowTemplate(queuety.WorkflowDefinition{Name: "empty"}), queuetytype.ErrInvalidArgument, "no steps")
	for name, bundle := range map[string]string{
		"not JSON":       `{"name":`,
		"a list":         `[1,2]`,
		"no name":        `{"steps":[{"type":"single","name":"0","class":"a"}]}`,
		"no steps":       `{"name":"x","steps":[]}`,
		"bad step":       `{"name":"x","steps":[{"type":"single","name":"0"}]}`,
		"steps a string": `{"name":"x","steps":"a"}`,
	} {
		_, err := e.C.RegisterWorkflowTemplateJSON([]byte(bundle))
		assert.Error(t, err, name)
	}
	_, err = e.C.LoadWorkflowTemplates(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err, "a missing path")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"name":"x"}`), 0o600))
	_, err = e.C.LoadWorkflowTemplates(dir)
	assert.ErrorContains(t, err, "bad.json", "the bad file is named")
	assert.Empty(t, e.C.WorkflowTemplates(), "nothing registered")
	def, err := builder.Workflow("ok").Then("a").Definition()
	require.NoError(t, err)
	require.NoError(t, e.C.RegisterWorkflowTemplate(def))
	_, err = e.C.RunWorkflow(e.Ctx, "ok", queuety.State{"_steps": 1})
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "a private key in the state")
	_, err = e.C.RunWorkflow(e.Ctx, "ok", nil, queuety.IdempotencyKey(string(make([]byte, 192))))
	assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "a long idempotency key")
}
