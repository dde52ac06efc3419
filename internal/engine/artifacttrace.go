package engine

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/artifact"
	"github.com/queuety/queuety-go/store/driver"
)

// Artifacts returns the artifact service of e's store (package
// internal/artifact). An artifact it stores from a step handler's ctx for
// the step's own workflow is also recorded on the step's step_completed
// event (traceStored).
func (e *Engine) Artifacts() *artifact.Service { return e.artifacts }

// newArtifacts builds the artifact service of e's store.
func (e *Engine) newArtifacts() *artifact.Service {
	return artifact.New(e.store, artifact.Config{Clock: e.clock, Stored: traceStored})
}

// traceStored records an artifact stored from ctx on the step attempt
// running in ctx, when the artifact belongs to the attempt's workflow.
func traceStored(ctx context.Context, a *driver.Artifact) {
	if at, ok := ctx.Value(ctxKey{}).(*attemptCtx); ok && at.info.WorkflowID == a.WorkflowID {
		at.hb.cj.traceArtifact(a)
	}
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
	a, err := artifact.Row(artifact.Input{WorkflowID: at.info.WorkflowID, Key: key, Content: content, Kind: kind,
		StepIndex: ptr(at.info.StepIndex), Metadata: metadata})
	if err != nil {
		return fmt.Errorf("queuety: put artifact: %w", err)
	}
	if err := at.hb.e.artifacts.PutRow(ctx, a); err != nil {
		return err
	}
	at.hb.cj.traceArtifact(a)
	return nil
}

// traceArtifact records a stored artifact on the attempt, when the
// attempt is traced (it runs in a worker).
func (cj *Claimed) traceArtifact(a *driver.Artifact) { cj.trace.AddArtifact(a) }
