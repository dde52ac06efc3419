package queuety

import (
	"context"

	"github.com/queuety/queuety-go/internal/engine"
)

// Artifact is a stored workflow artifact: a named output kept outside the
// workflow's state (Queuety's artifacts table). Content is set only when
// it was read (HasContent): for kind "json" the decoded JSON value, for
// other kinds the stored text.
type Artifact = engine.Artifact

// DefaultArtifactKind is the kind of an artifact stored without
// ArtifactKind.
const DefaultArtifactKind = engine.DefaultArtifactKind

// ErrNoWorkflowStep is returned by PutArtifact when ctx belongs to a plain
// job's handler, not a workflow step's.
var ErrNoWorkflowStep = engine.ErrNoWorkflowStep

// ArtifactOption configures a stored artifact.
type ArtifactOption func(*engine.ArtifactInput)

// ArtifactKind sets the artifact's kind, such as "json" (the default),
// "text" or "markdown"; at most 32 characters. Content of kind "json" (any
// case) is stored as JSON text and decoded when read; for other kinds a
// string or []byte is stored as is and anything else as JSON text.
func ArtifactKind(kind string) ArtifactOption {
	return func(in *engine.ArtifactInput) { in.Kind = kind }
}

// ArtifactMetadata attaches metadata (anything JSON can hold) to the
// artifact.
func ArtifactMetadata(md map[string]any) ArtifactOption {
	return func(in *engine.ArtifactInput) { in.Metadata = md }
}

// ArtifactStep links an artifact stored with Client.PutArtifact to a step
// of its workflow (PutArtifact inside a step sets it on its own).
func ArtifactStep(index int) ArtifactOption {
	return func(in *engine.ArtifactInput) { in.StepIndex = &index }
}

func artifactInput(workflowID int64, key string, content any, opts []ArtifactOption) engine.ArtifactInput {
	in := engine.ArtifactInput{WorkflowID: workflowID, Key: key, Content: content}
	for _, o := range opts {
		if o != nil {
			o(&in)
		}
	}
	return in
}

// PutArtifact stores an artifact for the workflow step running in ctx
// (Queuety's put_current_artifact): call it from a StepFunc or ForEachFunc
// with the ctx it was given. The workflow id and step index come from the
// attempt, and the artifact is listed on the step's step_completed event.
// Storing a key again replaces the artifact (its content, kind, metadata
// and step), keeping its id and creation time. The artifact is written at
// once, in its own transaction: a step attempt that fails afterwards
// leaves it in place, and a retry may replace it.
//
// It returns ErrNoAttempt outside a handler, ErrNoWorkflowStep in a plain
// job's handler, and an error wrapping ErrInvalidArgument for an empty or
// too long key or kind, or content or metadata that do not encode as JSON.
func PutArtifact(ctx context.Context, key string, content any, opts ...ArtifactOption) error {
	in := artifactInput(0, key, content, opts)
	return engine.PutCurrentArtifact(ctx, in.Key, in.Content, in.Kind, in.Metadata)
}

// PutArtifact stores or replaces an artifact of any workflow (Queuety's
// put_artifact), for code outside the workflow's steps. It returns
// ErrNotFound when the workflow does not exist.
func (c *Client) PutArtifact(ctx context.Context, workflowID int64, key string, content any, opts ...ArtifactOption) error {
	return c.engine.PutArtifact(ctx, artifactInput(workflowID, key, content, opts))
}

// Artifacts lists a workflow's artifacts ordered by key (Queuety's
// workflow_artifacts), with their content when withContent is set. A
// workflow without artifacts, or that does not exist, has none.
func (c *Client) Artifacts(ctx context.Context, workflowID int64, withContent bool) ([]*Artifact, error) {
	return c.engine.ListArtifacts(ctx, workflowID, withContent)
}

// Artifact reads one artifact of a workflow, with its content (Queuety's
// workflow_artifact). It returns ErrNotFound when there is none with that
// key.
func (c *Client) Artifact(ctx context.Context, workflowID int64, key string) (*Artifact, error) {
	return c.engine.GetArtifact(ctx, workflowID, key)
}

// DeleteArtifact deletes one artifact of a workflow (Queuety's
// delete_workflow_artifact). It returns ErrNotFound when there is none
// with that key.
func (c *Client) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	return c.engine.DeleteArtifact(ctx, workflowID, key)
}
