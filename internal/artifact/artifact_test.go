package artifact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/artifact"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	_ "github.com/queuety/queuety-go/store/mysql"
)

// fixedClock is a clock that always says the same time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var now = time.Date(2031, 4, 5, 6, 7, 8, 900_000_000, time.UTC)

// Rows are encoded as Queuety's ArtifactStore::put encodes them, and
// input the table cannot hold is refused.
func TestRow(t *testing.T) {
	a, err := artifact.Row(artifact.Input{WorkflowID: 7, Key: " plan ", Content: map[string]any{"url": "https://a/b"}, Metadata: map[string]any{"v": 1}})
	require.NoError(t, err)
	assert.Equal(t, "plan", a.Key, "the key is trimmed")
	assert.Equal(t, queuetytype.DefaultArtifactKind, a.Kind, "the default kind")
	assert.Equal(t, `{"url":"https://a/b"}`, string(a.Content), "JSON content, slashes unescaped")
	assert.Equal(t, `{"v":1}`, string(a.Metadata))

	a, err = artifact.Row(artifact.Input{WorkflowID: 7, Key: "draft", Kind: "markdown", Content: "# Draft"})
	require.NoError(t, err)
	assert.Equal(t, "# Draft", string(a.Content), "text content is stored as is")
	assert.Equal(t, `[]`, string(a.Metadata), "no metadata encodes as PHP's empty array")

	for name, in := range map[string]artifact.Input{
		"no workflow":   {Key: "k"},
		"empty key":     {WorkflowID: 1, Key: " "},
		"long key":      {WorkflowID: 1, Key: strings.Repeat("k", artifact.MaxKeyLength+1)},
		"long kind":     {WorkflowID: 1, Key: "k", Kind: strings.Repeat("x", artifact.MaxKindLength+1)},
		"step too high": {WorkflowID: 1, Key: "k", StepIndex: new(256)},
		"not JSON":      {WorkflowID: 1, Key: "k", Content: func() {}},
	} {
		_, err := artifact.Row(in)
		assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, name)
	}
}

// Put, Get, List and Delete work on one store; Put tells Config.Stored
// what it stored, and refuses a workflow that does not exist.
func TestService(t *testing.T) {
	ctx := context.Background()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	var stored []string
	svc := artifact.New(s, artifact.Config{Clock: fixedClock{now}, Stored: func(_ context.Context, a *driver.Artifact) { stored = append(stored, a.Key) }})

	var wf int64
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		w := &driver.Workflow{Name: "wf", Status: driver.WorkflowRunning, State: []byte(`{}`), TotalSteps: 1, StartedAt: now, RunNumber: 1, RunStartedAt: now}
		err := tx.WorkflowInsert(ctx, w)
		wf = w.ID
		return err
	}))
	require.NoError(t, svc.Put(ctx, artifact.Input{WorkflowID: wf, Key: "plan", Content: []any{"a", "b"}, StepIndex: new(0)}))
	require.NoError(t, svc.Put(ctx, artifact.Input{WorkflowID: wf, Key: "draft", Kind: "text", Content: "hello"}))
	assert.ErrorIs(t, svc.Put(ctx, artifact.Input{WorkflowID: wf + 1000, Key: "x"}), queuetytype.ErrNotFound, "no such workflow")
	assert.Equal(t, []string{"plan", "draft"}, stored, "Stored hears what Put stored")

	got, err := svc.Get(ctx, wf, " plan ")
	require.NoError(t, err)
	assert.Equal(t, []any{"a", "b"}, got.Content)
	assert.Equal(t, now.Truncate(time.Second), got.CreatedAt.UTC(), "times at second precision")
	require.NotNil(t, got.StepIndex)
	assert.Equal(t, 0, *got.StepIndex)

	list, err := svc.List(ctx, wf, false)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.False(t, list[0].HasContent, "listed without content")

	require.NoError(t, svc.Delete(ctx, wf, "draft"))
	assert.ErrorIs(t, svc.Delete(ctx, wf, "draft"), queuetytype.ErrNotFound, "deleted twice")
}
