package artifact

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Artifact limits, from the columns of Queuety's artifacts table.
const (
	// MaxKeyLength is the longest key, in characters
	// (artifact_key VARCHAR(191)).
	MaxKeyLength = 191
	// MaxKindLength is the longest kind, in characters
	// (kind VARCHAR(32)).
	MaxKindLength = 32
)

// Clock tells the service the time: the created and updated times of the
// rows it writes.
type Clock interface {
	Now() time.Time
}

// Config holds what a Service needs besides its store.
type Config struct {
	// Clock tells the time.
	Clock Clock
	// Stored, when set, hears each artifact Put stored, after its
	// transaction committed, with the caller's ctx: the engine records
	// it on the step attempt running in ctx, if any.
	Stored func(ctx context.Context, a *driver.Artifact)
}

// Service stores and reads the artifacts of workflows on one store.
type Service struct {
	store  driver.Store
	clock  Clock
	stored func(ctx context.Context, a *driver.Artifact)
}

// New returns the artifact service of store.
func New(store driver.Store, cfg Config) *Service {
	return &Service{store: store, clock: cfg.Clock, stored: cfg.Stored}
}

// Input is one artifact to store (Queuety's put_artifact).
type Input struct {
	WorkflowID int64
	Key        string // trimmed; required
	// Content is stored as JSON text when Kind is "json" (any case), the
	// default. For other kinds a string or []byte is stored as is and
	// anything else as JSON text.
	Content   any
	Kind      string         // trimmed; default queuetytype.DefaultArtifactKind
	StepIndex *int           // the step the artifact belongs to, if any
	Metadata  map[string]any // nil for none
}

// isJSONKind reports whether content of this kind is stored as JSON text
// and decoded when read (Queuety compares strtolower($kind) with "json").
func isJSONKind(kind string) bool { return operate.IsJSONKind(kind) }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queuetytype.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func ptr[T any](v T) *T { return &v }

// Row validates in and encodes it as a row, as Queuety's
// ArtifactStore::put does: JSON content with JSON_UNESCAPED_SLASHES,
// metadata with json_encode's defaults ("[]" when empty).
func Row(in Input) (*driver.Artifact, error) {
	key, kind := strings.TrimSpace(in.Key), strings.TrimSpace(in.Kind)
	if in.Kind == "" {
		kind = queuetytype.DefaultArtifactKind
	}
	switch {
	case in.WorkflowID < 1:
		return nil, invalidf("artifacts require a valid workflow ID, got %d", in.WorkflowID)
	case key == "":
		return nil, invalidf("artifacts require a non-empty key")
	case kind == "":
		return nil, invalidf("artifacts require a non-empty kind")
	case utf8.RuneCountInString(key) > MaxKeyLength:
		return nil, invalidf("artifact key is longer than %d characters", MaxKeyLength)
	case utf8.RuneCountInString(kind) > MaxKindLength:
		return nil, invalidf("artifact kind %q is longer than %d characters", kind, MaxKindLength)
	case in.StepIndex != nil && (*in.StepIndex < 0 || *in.StepIndex > 255):
		return nil, invalidf("artifact step index %d is out of range 0-255", *in.StepIndex)
	}
	content, err := encodeContent(in.Content, kind)
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

// encodeContent is Queuety's ArtifactStore::encode_content.
func encodeContent(content any, kind string) ([]byte, error) {
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

// Put stores or replaces one artifact of a workflow (by workflow and key)
// in its own transaction. It returns ErrNotFound when the workflow does
// not exist, and an error wrapping ErrInvalidArgument for invalid input.
// The stored row is then handed to Config.Stored.
func (s *Service) Put(ctx context.Context, in Input) error {
	a, err := Row(in)
	if err != nil {
		return fmt.Errorf("queuety: put artifact: %w", err)
	}
	err = s.store.InTx(ctx, func(tx driver.Tx) error {
		if _, err := tx.WorkflowGet(ctx, a.WorkflowID, driver.LockNone); err != nil {
			return err
		}
		return s.put(ctx, tx, a)
	})
	if err != nil {
		return fmt.Errorf("queuety: put artifact %q of workflow %d: %w", a.Key, a.WorkflowID, err)
	}
	if s.stored != nil {
		s.stored(ctx, a)
	}
	return nil
}

// PutRow stores or replaces a row built by Row in its own transaction,
// without checking that its workflow exists (the caller knows it does)
// and without calling Config.Stored.
func (s *Service) PutRow(ctx context.Context, a *driver.Artifact) error {
	if err := s.store.InTx(ctx, func(tx driver.Tx) error { return s.put(ctx, tx, a) }); err != nil {
		return fmt.Errorf("queuety: put artifact %q of workflow %d: %w", a.Key, a.WorkflowID, err)
	}
	return nil
}

func (s *Service) put(ctx context.Context, tx driver.Tx, a *driver.Artifact) error {
	now := s.clock.Now().UTC().Truncate(time.Second)
	a.CreatedAt, a.UpdatedAt = now, now
	return tx.ArtifactPut(ctx, a)
}

// Get reads one artifact with its content. It returns ErrNotFound
// when the workflow has no artifact with that key.
func (s *Service) Get(ctx context.Context, workflowID int64, key string) (*queuetytype.Artifact, error) {
	var row *driver.Artifact
	err := s.store.InTx(ctx, func(tx driver.Tx) (err error) {
		row, err = tx.ArtifactGet(ctx, workflowID, strings.TrimSpace(key))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: read artifact: %w", err)
	}
	return Decode(row, true), nil
}

// List lists a workflow's artifacts by key, with their content
// when withContent is set.
func (s *Service) List(ctx context.Context, workflowID int64, withContent bool) ([]*queuetytype.Artifact, error) {
	var rows []*driver.Artifact
	err := s.store.InTx(ctx, func(tx driver.Tx) (err error) {
		rows, err = tx.ArtifactList(ctx, workflowID, withContent)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: list artifacts: %w", err)
	}
	out := make([]*queuetytype.Artifact, len(rows))
	for i, r := range rows {
		out[i] = Decode(r, withContent)
	}
	return out, nil
}

// Delete deletes one artifact; it returns ErrNotFound when there
// was none.
func (s *Service) Delete(ctx context.Context, workflowID int64, key string) error {
	key = strings.TrimSpace(key)
	var found bool
	err := s.store.InTx(ctx, func(tx driver.Tx) (err error) {
		found, err = tx.ArtifactDelete(ctx, workflowID, key)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("artifact %q of workflow %d: %w", key, workflowID, queuetytype.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("queuety: delete artifact: %w", err)
	}
	return nil
}

// Decode decodes a row as Queuety's ArtifactStore::map_row does,
// with the content when withContent is set.
func Decode(r *driver.Artifact, withContent bool) *queuetytype.Artifact {
	a := &queuetytype.Artifact{ID: r.ID, WorkflowID: r.WorkflowID, Key: r.Key, Kind: r.Kind, Metadata: map[string]any{},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.StepIndex != nil {
		a.StepIndex = ptr(*r.StepIndex)
	}
	switch m := workflowstate.JSONColumn(r.Metadata).(type) {
	case *phpjson.Object:
		a.Metadata = m.ToMap()
	case []any:
		for i, v := range m {
			a.Metadata[strconv.Itoa(i)] = workflowstate.Plain(v)
		}
	}
	if withContent {
		a.HasContent = true
		a.Content = workflowstate.Plain(content(r))
	}
	return a
}

// content is a row's content as Queuety decodes it: the JSON
// value for kind json (nil when the text is not JSON), else the text.
func content(r *driver.Artifact) any {
	if !isJSONKind(r.Kind) {
		return string(r.Content)
	}
	v, err := phpjson.Decode(r.Content)
	if err != nil {
		return nil
	}
	return v
}
