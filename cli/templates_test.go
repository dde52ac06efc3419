package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
)

// TestWorkflowRunFromTemplates: workflow templates lists the bundles in
// --templates, and workflow run starts one by name with the state in the
// order given, idempotently with --idempotency-key.
func TestWorkflowRunFromTemplates(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	c := openClient(t, dsn)
	def, err := builder.Workflow("onboarding").Then("create_account").Then("welcome").Definition()
	require.NoError(t, err)
	require.NoError(t, c.RegisterWorkflowTemplate(def))
	raw, err := c.WorkflowTemplateJSON("onboarding")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "onboarding.json"), raw, 0o600))

	assert.Equal(t, "onboarding\n", mustRun(t, nil, "--dsn", dsn, "workflow", "templates", "--templates", dir))
	assert.Equal(t, []string{"onboarding"}, decode[[]string](t, mustRun(t, nil, "--dsn", dsn, "--json", "workflow", "templates", "--templates", dir)))

	out := mustRun(t, nil, "--dsn", dsn, "workflow", "run", "onboarding", `{"zeta": 1, "alpha": 2}`, "--templates", dir)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "run printed %q", out)
	wf, err := c.Workflow(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "onboarding", wf.Name)
	assert.True(t, strings.HasPrefix(string(wf.State), `{"zeta":1,"alpha":2,"_steps":`), "state in the order given: %s", wf.State)

	first := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "--json", "workflow", "run", "onboarding", "--templates", dir, "--idempotency-key", "k1"))["id"]
	again := decode[map[string]int64](t, mustRun(t, nil, "--dsn", dsn, "--json", "workflow", "run", "onboarding", "--templates", dir, "--idempotency-key", "k1"))["id"]
	assert.Equal(t, first, again, "the idempotency key")
	assert.NotEqual(t, id, first)

	wantFail(t, 2, "--templates is required", "--dsn", dsn, "workflow", "run", "onboarding")
	wantFail(t, 1, `"offboarding" is not registered`, "--dsn", dsn, "workflow", "run", "offboarding", "--templates", dir)
	wantFail(t, 2, "not valid JSON", "--dsn", dsn, "workflow", "run", "onboarding", "{", "--templates", dir)
}
