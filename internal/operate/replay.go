package operate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// This file replays a workflow export in Queuety's format (package
// internal/readview writes one, as WorkflowExporter::export does) into a
// new workflow (WorkflowReplayer::replay), so that an export written by
// either side replays on the other.

// replayArtifact is the row Queuety's WorkflowReplayer writes for one
// exported artifact: JSON content re-encoded with json_encode's defaults,
// other content as text.
func replayArtifact(wfID int64, a *phpjson.Object, now time.Time) *driver.Artifact {
	kind := "json"
	if v, ok := a.Get("kind"); ok && v != nil {
		kind = scalarText(v)
	}
	content, _ := a.Get("content")
	row := &driver.Artifact{WorkflowID: wfID, Key: scalarText(mustGet(a, "key")), Kind: kind, StepIndex: optInt(a, "step_index"),
		CreatedAt: timeField(a, "created_at", now), UpdatedAt: timeField(a, "updated_at", now)}
	if IsJSONKind(kind) {
		row.Content = workflowstate.EncodeJSON(content)
	} else {
		row.Content = []byte(scalarText(content))
	}
	meta, ok := a.Get("metadata")
	if !ok || meta == nil {
		meta = []any{}
	}
	row.Metadata = workflowstate.EncodeJSON(meta)
	return row
}

func mustGet(o *phpjson.Object, k string) any {
	v, _ := o.Get(k)
	return v
}

// scalarText is PHP's (string) cast of a scalar; "" for anything else.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return ""
	case int64, float64:
		return string(workflowstate.EncodeJSON(x))
	}
	return ""
}

// replayStatuses are the statuses a replayed workflow keeps; any other
// becomes running.
var replayStatuses = map[string]bool{"running": true, "completed": true, "failed": true, "paused": true,
	"waiting_for_signal": true, "waiting_for_workflows": true, "cancelled": true}

// ReplayWorkflow writes an export (readview's ExportWorkflow's, or
// Queuety PHP's export_workflow) into a new workflow named
// "<name>_replay_<unix time>":
// its state, status and position, events, logs (without job ids), signals
// and wait dependencies, plus a workflow_replayed event naming the source.
// A running replay gets its current step's job, and runs on. It returns
// the new workflow's id.
func (e *Service) ReplayWorkflow(ctx context.Context, export *phpjson.Object) (int64, error) {
	wfV, _ := export.Get("workflow")
	src, ok := wfV.(*phpjson.Object)
	if !ok {
		return 0, fmt.Errorf("queuety: replay workflow: %w", invalidf("invalid export: missing workflow key"))
	}
	stateV, _ := src.Get("state")
	state, ok := stateV.(*phpjson.Object)
	if !ok {
		state = phpjson.NewObject()
	}
	state = state.Clone()
	current, total := int(workflowdef.Int(src, "current_step")), int(workflowdef.Int(src, "total_steps"))
	status := workflowdef.String(src, "status")
	if !replayStatuses[status] {
		status = "running"
	}
	steps, err := workflowdef.Parse(state)
	if err != nil && status == "running" {
		return 0, fmt.Errorf("queuety: replay workflow: %w", invalidf("invalid export: %v", err))
	}
	list := func(k string) []*phpjson.Object {
		v, _ := export.Get(k)
		items, _ := workflowstate.ListOf(v)
		var out []*phpjson.Object
		for _, it := range items {
			if o, ok := it.(*phpjson.Object); ok {
				out = append(out, o)
			}
		}
		return out
	}
	var id int64
	err = e.store.InTx(ctx, func(tx driver.Tx) error {
		now := e.cfg.Clock.Now()
		step := current
		if status == "completed" {
			step = total
		}
		wf := &driver.Workflow{Name: workflowdef.String(src, "name") + "_replay_" + strconv.FormatInt(now.Unix(), 10),
			Status: driver.WorkflowStatus(status), State: workflowstate.EncodeJSON(state), CurrentStep: step, TotalSteps: total,
			StartedAt: rowtime.Floor(now), RunNumber: 1, RunStartedAt: now}
		switch status {
		case "completed":
			wf.CompletedAt = rowtime.Floor(now)
		case "failed":
			wf.FailedAt = rowtime.Floor(now)
			wf.ErrorMessage = workflowdef.String(src, "error_message")
		}
		if err := tx.WorkflowInsert(ctx, wf); err != nil {
			return err
		}
		id = wf.ID
		var events []*driver.WorkflowEvent
		for _, ev := range list("events") {
			events = append(events, &driver.WorkflowEvent{WorkflowID: id, StepIndex: int(workflowdef.Int(ev, "step_index")),
				StepName: workflowdef.String(ev, "step_name"), StepType: workflowdef.String(ev, "step_type"), Handler: workflowdef.String(ev, "handler"),
				Event: driver.EventType(orDefault(workflowdef.String(ev, "event"), string(driver.EventStepCompleted))), Queue: workflowdef.String(ev, "queue"),
				Attempt: optInt(ev, "attempt"), Input: jsonField(ev, "input"), Output: jsonField(ev, "output"),
				StateBefore: jsonField(ev, "state_before"), StateAfter: jsonField(ev, "state_after"),
				Context: jsonField(ev, "context"), Artifacts: jsonField(ev, "artifacts"), Chunks: jsonField(ev, "chunks"), Error: jsonField(ev, "error"), DurationMS: optInt64(ev, "duration_ms"),
				CreatedAt: timeField(ev, "created_at", now)})
		}
		source := phpjson.NewObject()
		source.Set("source_workflow_id", workflowdef.Int(src, "id"))
		source.Set("source_status", workflowdef.String(src, "status"))
		v, _ := src.Get("definition_version")
		source.Set("definition_version", v)
		v, _ = src.Get("definition_hash")
		source.Set("definition_hash", v)
		events = append(events, &driver.WorkflowEvent{WorkflowID: id, StepIndex: step, Handler: "__queuety_replay",
			Event: driver.EventWorkflowReplayed, Output: workflowstate.EncodeJSON(source), StateAfter: workflowstate.EncodePublicJSON(state),
			Context: workflowstate.EncodeJSON(source), CreatedAt: now})
		if err := tx.EventInsert(ctx, events); err != nil {
			return err
		}
		var logs []*driver.LogEntry
		for _, l := range list("logs") {
			logs = append(logs, &driver.LogEntry{WorkflowID: id, StepIndex: optInt(l, "step_index"), Handler: workflowdef.String(l, "handler"),
				Queue: orDefault(workflowdef.String(l, "queue"), queuetytype.DefaultQueue), Event: driver.LogEvent(orDefault(workflowdef.String(l, "event"), string(driver.LogDebug))),
				Attempt: optInt(l, "attempt"), DurationMS: optInt64(l, "duration_ms"), ErrorMessage: workflowdef.String(l, "error_message"),
				Context: jsonField(l, "context"), CreatedAt: timeField(l, "created_at", now)})
		}
		if err := tx.LogInsert(ctx, logs); err != nil {
			return err
		}
		for _, s := range list("signals") {
			p, _ := s.Get("payload")
			if p == nil {
				p = []any{}
			}
			if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: id, Name: workflowdef.String(s, "signal_name"), Payload: workflowstate.EncodeJSON(p),
				ReceivedAt: timeField(s, "received_at", now)}); err != nil {
				return err
			}
		}
		var deps []*driver.WorkflowDependency
		for _, d := range list("wait_dependencies") {
			if dep := workflowdef.Int(d, "dependency_workflow_id"); dep > 0 {
				deps = append(deps, &driver.WorkflowDependency{WaitingWorkflowID: id, StepIndex: int(workflowdef.Int(d, "step_index")),
					DependencyWorkflowID: dep, SatisfiedAt: timeField(d, "satisfied_at", time.Time{}), CreatedAt: timeField(d, "created_at", now)})
			}
		}
		if err := tx.DependencyInsert(ctx, deps); err != nil {
			return err
		}
		for _, a := range list("artifacts") {
			if err := tx.ArtifactPut(ctx, replayArtifact(id, a, now)); err != nil {
				return err
			}
		}
		for _, c := range list("chunks") {
			content, _ := c.Get("content")
			if err := tx.ChunkInsert(ctx, &driver.Chunk{JobID: workflowdef.Int(c, "job_id"), WorkflowID: id, StepIndex: optInt(c, "step_index"),
				ChunkIndex: int(workflowdef.Int(c, "chunk_index")), Content: scalarText(content), CreatedAt: timeField(c, "created_at", now)}); err != nil {
				return err
			}
		}
		if status == "running" && step < len(steps) {
			return e.cfg.EnqueueStep(ctx, tx, wf, state, steps, step, now)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: replay workflow: %w", err)
	}
	return id, nil
}

// jsonField re-encodes an export's JSON value, or nil for null.
func jsonField(o *phpjson.Object, k string) []byte {
	v, ok := o.Get(k)
	if !ok || v == nil {
		return nil
	}
	return workflowstate.EncodeJSON(v)
}

func optInt(o *phpjson.Object, k string) *int {
	v, _ := o.Get(k)
	if v == nil {
		return nil
	}
	n := int(workflowstate.ToInt(v))
	return &n
}

func optInt64(o *phpjson.Object, k string) *int64 {
	v, _ := o.Get(k)
	if v == nil {
		return nil
	}
	n := workflowstate.ToInt(v)
	return &n
}

// timeField reads an export's DATETIME string (or RFC 3339), or def.
func timeField(o *phpjson.Object, k string, def time.Time) time.Time {
	s := workflowdef.String(o, k)
	if s == "" {
		return def
	}
	for _, layout := range []string{time.DateTime, time.RFC3339} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t
		}
	}
	return def
}
