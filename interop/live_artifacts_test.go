package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// hStoreArtifacts is interop/php/handlers.php's step that stores two
// artifacts with put_current_artifact; goArtifactStep is its Go twin.
const hStoreArtifacts = `QueuetyGoInterop\StoreArtifacts`

func goArtifactStep(ctx context.Context, _ queuety.State) (queuety.State, error) {
	err := queuety.PutArtifact(ctx, "plan",
		map[string]any{"steps": []string{"research", "write"}, "title": "Ünïcode", "url": "https://example.com/a/b"},
		queuety.ArtifactMetadata(map[string]any{"model": "m/1", "source": "planner"}))
	if err != nil {
		return nil, err
	}
	return queuety.State{"planned": true}, queuety.PutArtifact(ctx, "draft", "# Pricing\n\nSee https://example.com/x.", queuety.ArtifactKind("markdown"))
}

// TestLiveArtifactsMatchPHP runs the same step in Queuety PHP and in a Go
// worker: each stores a JSON artifact with metadata and a markdown one.
// The artifact rows and the step_completed event's artifacts column are
// byte for byte the same; Go reads PHP's artifacts, and PHP's
// workflow_artifacts reads Go's as it reads its own.
func TestLiveArtifactsMatchPHP(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	var phpRun struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(php.eval(`
$id = \Queuety\Queuety::workflow( 'artifacts' )->then( \QueuetyGoInterop\StoreArtifacts::class )->on_queue( 'art-php' )->dispatch();
\Queuety\Queuety::flush_queue( 'art-php' );
echo json_encode( array( 'id' => $id ) );`)), &phpRun))

	goID, err := builder.Workflow("artifacts").OnQueue("art-go").Then(hStoreArtifacts).Dispatch(ctx, c, nil)
	require.NoError(t, err)
	w := worker.New(c, worker.Queues("art-go"), worker.NoMaintenance(), worker.WithLogger(quietLog()))
	w.HandleStep(hStoreArtifacts, goArtifactStep)
	_, err = w.RunOnce(ctx, 30*time.Second)
	require.NoError(t, err)
	for _, id := range []int64{phpRun.ID, goID} {
		wf, err := c.Workflow(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queuetytype.WorkflowCompleted, wf.Status, "workflow %d", id)
	}

	rows := func(id int64) ([]*driver.Artifact, []byte) {
		var list []*driver.Artifact
		var traced []byte
		require.NoError(t, clientseam.StoreOf(c).InTx(ctx, func(tx driver.Tx) error {
			var err error
			if list, err = tx.ArtifactList(ctx, id, true); err != nil {
				return err
			}
			events, err := tx.EventList(ctx, id)
			for _, ev := range events {
				if ev.Event == driver.EventStepCompleted {
					traced = ev.Artifacts
				}
			}
			return err
		}))
		return list, traced
	}
	phpRows, phpTrace := rows(phpRun.ID)
	goRows, goTrace := rows(goID)
	require.Len(t, phpRows, 2)
	require.Len(t, goRows, 2)
	for i := range phpRows {
		p, g := phpRows[i], goRows[i]
		assert.Equal(t, p.Key, g.Key)
		assert.Equal(t, p.Kind, g.Kind, p.Key)
		assert.Equal(t, string(p.Content), string(g.Content), "%s: content bytes", p.Key)
		assert.Equal(t, string(p.Metadata), string(g.Metadata), "%s: metadata bytes", p.Key)
		assert.Equal(t, p.StepIndex, g.StepIndex, "%s: step index", p.Key)
	}
	assert.Equal(t, `{"steps":["research","write"],"title":"\u00dcn\u00efcode","url":"https://example.com/a/b"}`, string(phpRows[1].Content),
		"PHP's JSON content: unescaped slashes, escaped unicode")
	assert.Equal(t, string(phpTrace), string(goTrace), "the step_completed event's artifacts column")
	assert.JSONEq(t, `[{"key":"plan","kind":"json","step_index":0,"metadata":{"model":"m/1","source":"planner"}},
		{"key":"draft","kind":"markdown","step_index":0,"metadata":[]}]`, string(goTrace))

	// Go reads PHP's artifacts.
	plan, err := c.Artifact(ctx, phpRun.ID, "plan")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"steps": []any{"research", "write"}, "title": "Ünïcode", "url": "https://example.com/a/b"}, plan.Content)
	assert.Equal(t, map[string]any{"model": "m/1", "source": "planner"}, plan.Metadata)
	list, err := c.Artifacts(ctx, phpRun.ID, true)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "# Pricing\n\nSee https://example.com/x.", list[0].Content, "PHP's markdown artifact")

	// PHP reads Go's artifacts exactly as it reads its own.
	phpView := func(id int64) []map[string]any {
		var out []map[string]any
		require.NoError(t, json.Unmarshal([]byte(php.eval(fmt.Sprintf(`echo json_encode( \Queuety\Queuety::workflow_artifacts( %d, true ) );`, id))), &out))
		for _, a := range out {
			assert.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, a["updated_at"], "DATETIME text")
			delete(a, "id")
			delete(a, "workflow_id")
			delete(a, "created_at")
			delete(a, "updated_at")
		}
		return out
	}
	assert.Equal(t, phpView(phpRun.ID), phpView(goID), "workflow_artifacts of Go's workflow, as PHP returns it")
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(php.eval(fmt.Sprintf(`echo json_encode( \Queuety\Queuety::workflow_artifact( %d, 'plan' ) );`, goID))), &one))
	assert.Equal(t, map[string]any{"model": "m/1", "source": "planner"}, one["metadata"], "PHP decodes Go's metadata")
	assert.Equal(t, float64(goID), one["workflow_id"])
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
