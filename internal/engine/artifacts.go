package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// Artifact limits, from the columns of Queuety's artifacts table.
const (
	// MaxArtifactKeyLength is the longest key, in characters
	// (artifact_key VARCHAR(191)).
	MaxArtifactKeyLength = 191
	// MaxArtifactKindLength is the longest kind, in characters
	// (kind VARCHAR(32)).
	MaxArtifactKindLength = 32
)

// ArtifactInput is one artifact to store (Queuety's put_artifact).
type ArtifactInput struct {
	WorkflowID int64
	Key        string // trimmed; required
	// Content is stored as JSON text when Kind is "json" (any case), the
	// default. For other kinds a string or []byte is stored as is and
	// anything else as JSON text.
	Content   any
	Kind      string         // trimmed; default DefaultArtifactKind
	StepIndex *int           // the step the artifact belongs to, if any
	Metadata  map[string]any // nil for none
}

// isJSONKind reports whether content of this kind is stored as JSON text
// and decoded when read (Queuety compares strtolower($kind) with "json").
func isJSONKind(kind string) bool { return operate.IsJSONKind(kind) }

// artifactRow validates in and encodes it as a row, as Queuety's
// ArtifactStore::put does: JSON content with JSON_UNESCAPED_SLASHES,
// metadata with json_encode's defaults ("[]" when empty).
func artifactRow(in ArtifactInput) (*driver.Artifact, error) {
	key, kind := strings.TrimSpace(in.Key), strings.TrimSpace(in.Kind)
	if in.Kind == "" {
		kind = DefaultArtifactKind
	}
	switch {
	case in.WorkflowID < 1:
		return nil, invalidf("artifacts require a valid workflow ID, got %d", in.WorkflowID)
	case key == "":
		return nil, invalidf("artifacts require a non-empty key")
	case kind == "":
		return nil, invalidf("artifacts require a non-empty kind")
	case utf8.RuneCountInString(key) > MaxArtifactKeyLength:
		return nil, invalidf("artifact key is longer than %d characters", MaxArtifactKeyLength)
	case utf8.RuneCountInString(kind) > MaxArtifactKindLength:
		return nil, invalidf("artifact kind %q is longer than %d characters", kind, MaxArtifactKindLength)
	case in.StepIndex != nil && (*in.StepIndex < 0 || *in.StepIndex > 255):
		return nil, invalidf("artifact step index %d is out of range 0-255", *in.StepIndex)
	}
	content, err := encodeArtifactContent(in.Content, kind)
	if err != nil {
		return nil, invalidf("artifact %q content does not encode as JSON: %v", key, err)
	}
	meta, err := workflowstate.ToObject("artifact metadata", in.Metadata)
	if err != nil {
		return nil, err
	}
	a := &driver.Artifact{WorkflowID: in.WorkflowID, Key: key, Kind: kind, Content: content, Metadata: workflowstate.EncodeJSON(meta)}
	if in.StepIndex != nil {
		a.StepIndex = ptr(*in.StepIndex)
	}
	return a, nil
}

// encodeArtifactContent is Queuety's ArtifactStore::encode_content.
func encodeArtifactContent(content any, kind string) ([]byte, error) {
	if !isJSONKind(kind) {
		switch c := content.(type) {
		case string:
			return []byte(c), nil
		case []byte:
			return append([]byte{}, c...), nil
		}
	}
	n, err := phpjson.Normalize(content)
	if err != nil {
		return nil, err
	}
	return phpjson.MarshalWith(n, phpjson.UnescapedSlashes)
}

// PutArtifact stores or replaces one artifact of a workflow (by workflow
// and key) in its own transaction. It returns ErrNotFound when the
// workflow does not exist, and an error wrapping ErrInvalidArgument for
// invalid input. Called from a step handler's ctx for the step's own
// workflow, it is also recorded on the step's step_completed event.
func (e *Engine) PutArtifact(ctx context.Context, in ArtifactInput) error {
	a, err := artifactRow(in)
	if err != nil {
		return fmt.Errorf("queuety: put artifact: %w", err)
	}
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		if _, err := tx.WorkflowGet(ctx, a.WorkflowID, driver.LockNone); err != nil {
			return err
		}
		return e.putArtifact(ctx, tx, a)
	})
	if err != nil {
		return fmt.Errorf("queuety: put artifact %q of workflow %d: %w", a.Key, a.WorkflowID, err)
	}
	if at, ok := ctx.Value(ctxKey{}).(*attemptCtx); ok && at.info.WorkflowID == a.WorkflowID {
		at.hb.cj.traceArtifact(a)
	}
	return nil
}

func (e *Engine) putArtifact(ctx context.Context, tx driver.Tx, a *driver.Artifact) error {
	now := floorSecond(e.clock.Now())
	a.CreatedAt, a.UpdatedAt = now, now
	return tx.ArtifactPut(ctx, a)
}

// PutCurrentArtifact stores an artifact for the workflow step running in
// ctx (Queuety's put_current_artifact): the workflow id and step index
// come from the attempt. It returns ErrNoAttempt outside a handler and
// ErrNoWorkflowStep in a plain job's handler.
func PutCurrentArtifact(ctx context.Context, key string, content any, kind string, metadata map[string]any) error {
	at, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return fmt.Errorf("queuety: put artifact %q: %w", key, ErrNoAttempt)
	}
	if at.info.WorkflowID == 0 || at.info.StepIndex < 0 {
		return fmt.Errorf("queuety: put artifact %q: job %d: %w", key, at.info.JobID, ErrNoWorkflowStep)
	}
	a, err := artifactRow(ArtifactInput{WorkflowID: at.info.WorkflowID, Key: key, Content: content, Kind: kind,
		StepIndex: ptr(at.info.StepIndex), Metadata: metadata})
	if err != nil {
		return fmt.Errorf("queuety: put artifact: %w", err)
	}
	e := at.hb.e
	if err := e.store.InTx(ctx, func(tx driver.Tx) error { return e.putArtifact(ctx, tx, a) }); err != nil {
		return fmt.Errorf("queuety: put artifact %q of workflow %d: %w", a.Key, a.WorkflowID, err)
	}
	at.hb.cj.traceArtifact(a)
	return nil
}

// GetArtifact reads one artifact with its content. It returns ErrNotFound
// when the workflow has no artifact with that key.
func (e *Engine) GetArtifact(ctx context.Context, workflowID int64, key string) (*Artifact, error) {
	var row *driver.Artifact
	err := e.store.InTx(ctx, func(tx driver.Tx) (err error) {
		row, err = tx.ArtifactGet(ctx, workflowID, strings.TrimSpace(key))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: read artifact: %w", err)
	}
	return DecodeArtifact(row, true), nil
}

// ListArtifacts lists a workflow's artifacts by key, with their content
// when withContent is set.
func (e *Engine) ListArtifacts(ctx context.Context, workflowID int64, withContent bool) ([]*Artifact, error) {
	var rows []*driver.Artifact
	err := e.store.InTx(ctx, func(tx driver.Tx) (err error) {
		rows, err = tx.ArtifactList(ctx, workflowID, withContent)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: list artifacts: %w", err)
	}
	out := make([]*Artifact, len(rows))
	for i, r := range rows {
		out[i] = DecodeArtifact(r, withContent)
	}
	return out, nil
}

// DeleteArtifact deletes one artifact; it returns ErrNotFound when there
// was none.
func (e *Engine) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	key = strings.TrimSpace(key)
	var found bool
	err := e.store.InTx(ctx, func(tx driver.Tx) (err error) {
		found, err = tx.ArtifactDelete(ctx, workflowID, key)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("artifact %q of workflow %d: %w", key, workflowID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("queuety: delete artifact: %w", err)
	}
	return nil
}

// DecodeArtifact decodes a row as Queuety's ArtifactStore::map_row does,
// with the content when withContent is set.
func DecodeArtifact(r *driver.Artifact, withContent bool) *Artifact {
	a := &Artifact{ID: r.ID, WorkflowID: r.WorkflowID, Key: r.Key, Kind: r.Kind, Metadata: map[string]any{},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.StepIndex != nil {
		a.StepIndex = ptr(*r.StepIndex)
	}
	switch m := JSONColumn(r.Metadata).(type) {
	case *phpjson.Object:
		a.Metadata = m.ToMap()
	case []any:
		for i, v := range m {
			a.Metadata[strconv.Itoa(i)] = workflowstate.Plain(v)
		}
	}
	if withContent {
		a.HasContent = true
		a.Content = workflowstate.Plain(artifactContent(r))
	}
	return a
}

// artifactContent is a row's content as Queuety decodes it: the JSON
// value for kind json (nil when the text is not JSON), else the text.
func artifactContent(r *driver.Artifact) any {
	if !isJSONKind(r.Kind) {
		return string(r.Content)
	}
	v, err := phpjson.Decode(r.Content)
	if err != nil {
		return nil
	}
	return v
}

// artifactTrace collects the artifacts one step attempt stored, for its
// step_completed event (Queuety's ExecutionContext trace artifacts).
type artifactTrace struct {
	mu   sync.Mutex
	refs []any
	// runtimeTrace is the rest of the attempt's trace (runtimetrace.go).
	runtimeTrace
}

// traceArtifact records a stored artifact on the attempt, when the
// attempt is traced (it runs in a worker).
func (cj *Claimed) traceArtifact(a *driver.Artifact) {
	t := cj.artifacts
	if t == nil {
		return
	}
	ref := phpjson.NewObject()
	ref.Set("key", a.Key)
	ref.Set("kind", a.Kind)
	if a.StepIndex != nil {
		ref.Set("step_index", int64(*a.StepIndex))
	} else {
		ref.Set("step_index", nil)
	}
	meta, err := phpjson.Decode(a.Metadata)
	if err != nil {
		meta = []any{}
	}
	ref.Set("metadata", meta)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refs = append(t.refs, ref)
}

// tracedArtifacts returns the JSON list of the artifacts the attempt
// stored, or nil (SQL NULL) when it stored none.
func (cj *Claimed) tracedArtifacts() []byte {
	t := cj.artifacts
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	refs := append(append([]any{}, t.refs...), t.tracedExtraArtifacts()...)
	if len(refs) == 0 {
		return nil
	}
	return workflowstate.EncodeJSON(refs)
}
