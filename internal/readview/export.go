package readview

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/operate"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file exports a workflow's history in Queuety's export format
// (WorkflowExporter::export), which internal/operate's ReplayWorkflow and
// Queuety PHP's replay read, and writes the rows of a trace in the same
// shapes.

// dbTime formats a time as Queuety's exports show DATETIME columns.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.DateTime)
}

// jsonObjectColumn is Queuety's row_json_array: a stored JSON array or
// object, or an empty array.
func jsonObjectColumn(b []byte) any {
	if v := workflowstate.JSONColumn(b); v != nil {
		return v
	}
	return []any{}
}

func idOrNil(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func intPtrOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func int64PtrOrNil(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func strOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// objects converts rows with object, for a list of an export or a trace.
func objects[T any](rows []T, object func(T) *phpjson.Object) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, object(r))
	}
	return out
}

// ExportWorkflow returns a workflow's history in Queuety's export format:
// the workflow row with its state, its jobs, events, logs, signals,
// artifacts, streaming chunks and wait dependencies. It reads the whole history; TraceWorkflowWith
// reads it a bounded page at a time.
func (v *Views) ExportWorkflow(ctx context.Context, id int64) (*phpjson.Object, error) {
	var (
		wf        *driver.Workflow
		jobs      []*driver.Job
		events    []*driver.WorkflowEvent
		logs      []*driver.LogEntry
		signals   []*driver.Signal
		deps      []*driver.WorkflowDependency
		artifacts []*driver.Artifact
		chunks    []*driver.Chunk
	)
	err := v.store.InTx(ctx, func(tx driver.Tx) (err error) {
		if wf, err = tx.WorkflowGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		if jobs, err = tx.JobListByWorkflow(ctx, id, nil, driver.LockNone); err != nil {
			return err
		}
		if events, err = tx.EventList(ctx, id); err != nil {
			return err
		}
		if logs, err = tx.LogList(ctx, driver.LogFilter{WorkflowID: id, Limit: 1 << 30}); err != nil {
			return err
		}
		if signals, err = tx.SignalList(ctx, id, nil); err != nil {
			return err
		}
		if artifacts, err = tx.ArtifactList(ctx, id, true); err != nil {
			return err
		}
		if chunks, err = tx.ChunkListWorkflow(ctx, id, 0, 1<<30); err != nil {
			return err
		}
		deps, err = tx.DependencyList(ctx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: export workflow %d: %w", id, err)
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		// The row, not the request, is wrong: ErrInvalidState, not an
		// internal error.
		return nil, fmt.Errorf("queuety: export workflow %d: %w (%w)", id, err, queuetytype.ErrInvalidState)
	}
	out := phpjson.NewObject()
	out.Set("workflow", workflowObject(wf, state))
	out.Set("jobs", objects(jobs, jobObject))
	out.Set("events", objects(events, eventObject))
	out.Set("logs", objects(logs, logObject))
	out.Set("signals", objects(signals, signalObject))
	out.Set("artifacts", objects(artifacts, artifactObject))
	out.Set("chunks", objects(chunks, chunkObject))
	out.Set("wait_dependencies", objects(deps, dependencyObject))
	out.Set("exported_at", v.clock.Now().UTC().Format("2006-01-02T15:04:05-07:00"))
	out.Set("queuety_version", "queuety-go")
	return out, nil
}

// workflowObject is the workflow of an export or a trace.
func workflowObject(wf *driver.Workflow, state *phpjson.Object) *phpjson.Object {
	w := phpjson.NewObject()
	w.Set("id", wf.ID)
	w.Set("name", wf.Name)
	w.Set("status", string(wf.Status))
	w.Set("state", state)
	w.Set("current_step", int64(wf.CurrentStep))
	w.Set("total_steps", int64(wf.TotalSteps))
	w.Set("parent_workflow_id", idOrNil(wf.ParentWorkflowID))
	w.Set("parent_step_index", intPtrOrNil(wf.ParentStepIndex))
	w.Set("started_at", dbTime(wf.StartedAt))
	w.Set("completed_at", dbTime(wf.CompletedAt))
	w.Set("failed_at", dbTime(wf.FailedAt))
	w.Set("error_message", strOrNil(wf.ErrorMessage))
	w.Set("deadline_at", dbTime(wf.DeadlineAt))
	for _, k := range []string{"definition_version", "definition_hash", "idempotency_key"} {
		v, _ := state.Get("_" + k)
		w.Set(k, v)
	}
	return w
}

// jobObject is one job of an export or a trace. A payload a bounded read
// left out is null, with its length under payload_omitted_bytes.
func jobObject(j *driver.Job) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", j.ID)
	o.Set("queue", j.Queue)
	o.Set("handler", j.Handler)
	if j.OmittedPayloadBytes > 0 {
		o.Set("payload", nil)
	} else {
		o.Set("payload", jsonObjectColumn(j.Payload))
	}
	o.Set("priority", int64(j.Priority))
	o.Set("status", string(j.Status))
	o.Set("attempts", int64(j.Attempts))
	o.Set("max_attempts", int64(j.MaxAttempts))
	o.Set("step_index", intPtrOrNil(j.StepIndex))
	o.Set("available_at", dbTime(j.AvailableAt))
	o.Set("reserved_at", dbTime(j.ReservedAt))
	o.Set("completed_at", dbTime(j.CompletedAt))
	o.Set("failed_at", dbTime(j.FailedAt))
	o.Set("error_message", strOrNil(j.ErrorMessage))
	o.Set("created_at", dbTime(j.CreatedAt))
	if j.OmittedPayloadBytes > 0 {
		o.Set("payload_omitted_bytes", j.OmittedPayloadBytes)
	}
	return o
}

// eventObject is one event of an export or a trace. The JSON columns a
// bounded read left out are null, with their lengths under "omitted".
func eventObject(ev *driver.WorkflowEvent) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", ev.ID)
	o.Set("job_id", idOrNil(ev.JobID))
	o.Set("parent_event_id", nil)
	o.Set("step_index", int64(ev.StepIndex))
	o.Set("step_name", strOrNil(ev.StepName))
	o.Set("step_type", strOrNil(ev.StepType))
	o.Set("handler", ev.Handler)
	o.Set("event", string(ev.Event))
	o.Set("queue", strOrNil(ev.Queue))
	o.Set("attempt", intPtrOrNil(ev.Attempt))
	o.Set("input", workflowstate.JSONColumn(ev.Input))
	o.Set("output", workflowstate.JSONColumn(ev.Output))
	o.Set("state_before", workflowstate.JSONColumn(ev.StateBefore))
	o.Set("state_after", workflowstate.JSONColumn(ev.StateAfter))
	o.Set("context", workflowstate.JSONColumn(ev.Context))
	o.Set("artifacts", workflowstate.JSONColumn(ev.Artifacts))
	o.Set("chunks", workflowstate.JSONColumn(ev.Chunks))
	o.Set("error", workflowstate.JSONColumn(ev.Error))
	o.Set("duration_ms", int64PtrOrNil(ev.DurationMS))
	o.Set("created_at", dbTime(ev.CreatedAt))
	if len(ev.Omitted) > 0 {
		om := phpjson.NewObject()
		for _, c := range driver.EventColumns {
			if n, ok := ev.Omitted[c]; ok {
				om.Set(c, n)
			}
		}
		o.Set("omitted", om)
	}
	return o
}

// logObject is a log row of an export or a trace.
func logObject(l *driver.LogEntry) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", l.ID)
	o.Set("job_id", int64PtrOrNil(l.JobID))
	o.Set("step_index", intPtrOrNil(l.StepIndex))
	o.Set("handler", l.Handler)
	o.Set("queue", l.Queue)
	o.Set("event", string(l.Event))
	o.Set("attempt", intPtrOrNil(l.Attempt))
	o.Set("duration_ms", int64PtrOrNil(l.DurationMS))
	o.Set("error_message", strOrNil(l.ErrorMessage))
	o.Set("context", workflowstate.JSONColumn(l.Context))
	o.Set("created_at", dbTime(l.CreatedAt))
	return o
}

// signalObject is a signal of an export or a trace. A payload a bounded
// read left out is null, with its length under payload_omitted_bytes.
func signalObject(s *driver.Signal) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", s.ID)
	o.Set("workflow_id", s.WorkflowID)
	o.Set("signal_name", s.Name)
	if s.OmittedPayloadBytes > 0 {
		o.Set("payload", nil)
	} else {
		o.Set("payload", jsonObjectColumn(s.Payload))
	}
	o.Set("received_at", dbTime(s.ReceivedAt))
	if s.OmittedPayloadBytes > 0 {
		o.Set("payload_omitted_bytes", s.OmittedPayloadBytes)
	}
	return o
}

// dependencyObject is a wait dependency of an export or a trace.
func dependencyObject(d *driver.WorkflowDependency) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", d.ID)
	o.Set("waiting_workflow_id", d.WaitingWorkflowID)
	o.Set("step_index", int64(d.StepIndex))
	o.Set("dependency_workflow_id", d.DependencyWorkflowID)
	o.Set("satisfied_at", dbTime(d.SatisfiedAt))
	o.Set("created_at", dbTime(d.CreatedAt))
	return o
}

// artifactObject is an artifact of an export (Queuety's
// WorkflowExporter) or a trace: content decoded for kind json, metadata
// decoded. A content or metadata a bounded read left out (a trace's) is
// null, with its length under content_omitted_bytes or
// metadata_omitted_bytes.
func artifactObject(r *driver.Artifact) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", r.ID)
	o.Set("workflow_id", r.WorkflowID)
	o.Set("key", r.Key)
	o.Set("kind", r.Kind)
	switch {
	case r.OmittedContentBytes > 0:
		o.Set("content", nil)
	case operate.IsJSONKind(r.Kind):
		o.Set("content", jsonObjectColumn(r.Content)) // a JSON scalar exports as [], as in Queuety
	default:
		o.Set("content", string(r.Content))
	}
	if r.OmittedMetadataBytes > 0 {
		o.Set("metadata", nil)
	} else {
		o.Set("metadata", jsonObjectColumn(r.Metadata))
	}
	o.Set("step_index", intPtrOrNil(r.StepIndex))
	o.Set("created_at", dbTime(r.CreatedAt))
	o.Set("updated_at", dbTime(r.UpdatedAt))
	if r.OmittedContentBytes > 0 {
		o.Set("content_omitted_bytes", r.OmittedContentBytes)
	}
	if r.OmittedMetadataBytes > 0 {
		o.Set("metadata_omitted_bytes", r.OmittedMetadataBytes)
	}
	return o
}

// chunkObject is a streaming chunk of an export or a trace, as Queuety's
// exporter writes it.
func chunkObject(c *driver.Chunk) *phpjson.Object {
	o := phpjson.NewObject()
	o.Set("id", c.ID)
	o.Set("job_id", c.JobID)
	o.Set("workflow_id", c.WorkflowID)
	o.Set("step_index", intPtrOrNil(c.StepIndex))
	o.Set("chunk_index", int64(c.ChunkIndex))
	o.Set("content", c.Content)
	o.Set("created_at", dbTime(c.CreatedAt))
	return o
}
