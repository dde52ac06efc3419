package queuety

import (
	"context"

	"github.com/queuety/queuety-go/internal/artifact"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuetytype"
)

// ArtifactOption configures a stored artifact.
type ArtifactOption func(*artifactOptions)

// artifactOptions are the settings ArtifactOptions make.
type artifactOptions struct {
	kind      string
	metadata  map[string]any
	stepIndex *int
}

// ArtifactKind sets the artifact's kind, such as "json" (the default),
// "text" or "markdown"; at most 32 characters. Content of kind "json" (any
// case) is stored as JSON text and decoded when read; for other kinds a
// string or []byte is stored as is and anything else as JSON text.
func ArtifactKind(kind string) ArtifactOption {
	return func(o *artifactOptions) { o.kind = kind }
}

// ArtifactMetadata attaches metadata (anything JSON can hold) to the
// artifact.
func ArtifactMetadata(md map[string]any) ArtifactOption {
	return func(o *artifactOptions) { o.metadata = md }
}

// ArtifactStep links an artifact stored with Client.PutArtifact to a step
// of its workflow (PutArtifact inside a step sets it on its own).
func ArtifactStep(index int) ArtifactOption {
	return func(o *artifactOptions) { o.stepIndex = &index }
}

func artifactInput(workflowID int64, key string, content any, opts []ArtifactOption) artifact.Input {
	var o artifactOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return artifact.Input{WorkflowID: workflowID, Key: key, Content: content, Kind: o.kind, Metadata: o.metadata, StepIndex: o.stepIndex}
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
	return c.engine.Artifacts().Put(ctx, artifactInput(workflowID, key, content, opts))
}

// Artifacts lists a workflow's artifacts ordered by key (Queuety's
// workflow_artifacts), with their content when withContent is set. A
// workflow without artifacts, or that does not exist, has none.
func (c *Client) Artifacts(ctx context.Context, workflowID int64, withContent bool) ([]*queuetytype.Artifact, error) {
	return c.engine.Artifacts().List(ctx, workflowID, withContent)
}

// Artifact reads one artifact of a workflow, with its content (Queuety's
// workflow_artifact). It returns ErrNotFound when there is none with that
// key.
func (c *Client) Artifact(ctx context.Context, workflowID int64, key string) (*queuetytype.Artifact, error) {
	return c.engine.Artifacts().Get(ctx, workflowID, key)
}

// DeleteArtifact deletes one artifact of a workflow (Queuety's
// delete_workflow_artifact). It returns ErrNotFound when there is none
// with that key.
func (c *Client) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	return c.engine.Artifacts().Delete(ctx, workflowID, key)
}
