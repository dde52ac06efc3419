package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// This file exports a workflow's history in Queuety's export format
// (WorkflowExporter::export) and replays an export into a new workflow
// (WorkflowReplayer::replay), so that an export written by either side
// replays on the other.

// dbTime formats a time as Queuety's exports show DATETIME columns.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.DateTime)
}

// jsonColumn is Queuety's row_nullable_json_array: a stored JSON array or
// object, or nil.
func jsonColumn(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	v, err := phpjson.Decode(b)
	if err != nil {
		return nil
	}
	switch v.(type) {
	case *phpjson.Object, []any:
		return v
	}
	return nil
}

// jsonObjectColumn is Queuety's row_json_array: a stored JSON array or
// object, or an empty array.
func jsonObjectColumn(b []byte) any {
	if v := jsonColumn(b); v != nil {
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

// ExportWorkflow returns a workflow's history in Queuety's export format:
// the workflow row with its state, its jobs, events, logs, signals,
// artifacts and wait dependencies (chunks, which the Go engine does not
// write, are an empty list). It reads the whole history; TraceWorkflowWith
// reads it a bounded page at a time.
func (e *Engine) ExportWorkflow(ctx context.Context, id int64) (*phpjson.Object, error) {
	var (
		wf        *driver.Workflow
		jobs      []*driver.Job
		events    []*driver.WorkflowEvent
		logs      []*driver.LogEntry
		signals   []*driver.Signal
		deps      []*driver.WorkflowDependency
		artifacts []*driver.Artifact
	)
	err := e.store.InTx(ctx, func(tx driver.Tx) (err error) {
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
		deps, err = tx.DependencyList(ctx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: export workflow %d: %w", id, err)
	}
	state, err := DecodeObject("workflow state", wf.State)
	if err != nil {
		// The row, not the request, is wrong: ErrInvalidState, not an
		// internal error.
		return nil, fmt.Errorf("queuety: export workflow %d: %w (%w)", id, err, ErrInvalidState)
	}
	out := phpjson.NewObject()
	out.Set("workflow", workflowObject(wf, state))
	jl := make([]any, 0, len(jobs))
	for _, j := range jobs {
		jl = append(jl, jobObject(j))
	}
	out.Set("jobs", jl)
	el := make([]any, 0, len(events))
	for _, ev := range events {
		el = append(el, eventObject(ev))
	}
	out.Set("events", el)
	out.Set("logs", logObjects(logs))
	out.Set("signals", signalObjects(signals))
	out.Set("artifacts", exportArtifacts(artifacts))
	out.Set("chunks", []any{})
	out.Set("wait_dependencies", dependencyObjects(deps))
	out.Set("exported_at", e.clock.Now().UTC().Format("2006-01-02T15:04:05-07:00"))
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
	o.Set("input", jsonColumn(ev.Input))
	o.Set("output", jsonColumn(ev.Output))
	o.Set("state_before", jsonColumn(ev.StateBefore))
	o.Set("state_after", jsonColumn(ev.StateAfter))
	o.Set("context", jsonColumn(ev.Context))
	o.Set("artifacts", jsonColumn(ev.Artifacts))
	o.Set("chunks", nil)
	o.Set("error", jsonColumn(ev.Error))
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

// logObjects are the logs of an export or a trace.
func logObjects(logs []*driver.LogEntry) []any {
	ll := make([]any, 0, len(logs))
	for _, l := range logs {
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
		o.Set("context", jsonColumn(l.Context))
		o.Set("created_at", dbTime(l.CreatedAt))
		ll = append(ll, o)
	}
	return ll
}

// signalObjects are the signals of an export or a trace. A payload a
// bounded read left out is null, with its length under
// payload_omitted_bytes.
func signalObjects(signals []*driver.Signal) []any {
	sl := make([]any, 0, len(signals))
	for _, s := range signals {
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
		sl = append(sl, o)
	}
	return sl
}

// dependencyObjects are the wait dependencies of an export or a trace.
func dependencyObjects(deps []*driver.WorkflowDependency) []any {
	dl := make([]any, 0, len(deps))
	for _, d := range deps {
		o := phpjson.NewObject()
		o.Set("id", d.ID)
		o.Set("waiting_workflow_id", d.WaitingWorkflowID)
		o.Set("step_index", int64(d.StepIndex))
		o.Set("dependency_workflow_id", d.DependencyWorkflowID)
		o.Set("satisfied_at", dbTime(d.SatisfiedAt))
		o.Set("created_at", dbTime(d.CreatedAt))
		dl = append(dl, o)
	}
	return dl
}

// exportArtifacts is the artifacts list of an export (Queuety's
// WorkflowExporter): content decoded for kind json, metadata decoded. A
// content or metadata a bounded read left out (a trace's) is null, with
// its length under content_omitted_bytes or metadata_omitted_bytes.
func exportArtifacts(rows []*driver.Artifact) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		o := phpjson.NewObject()
		o.Set("id", r.ID)
		o.Set("workflow_id", r.WorkflowID)
		o.Set("key", r.Key)
		o.Set("kind", r.Kind)
		switch {
		case r.OmittedContentBytes > 0:
			o.Set("content", nil)
		case isJSONKind(r.Kind):
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
		out = append(out, o)
	}
	return out
}

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
	if isJSONKind(kind) {
		row.Content = EncodeJSON(content)
	} else {
		row.Content = []byte(scalarText(content))
	}
	meta, ok := a.Get("metadata")
	if !ok || meta == nil {
		meta = []any{}
	}
	row.Metadata = EncodeJSON(meta)
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
		return string(EncodeJSON(x))
	}
	return ""
}

// replayStatuses are the statuses a replayed workflow keeps; any other
// becomes running.
var replayStatuses = map[string]bool{"running": true, "completed": true, "failed": true, "paused": true,
	"waiting_for_signal": true, "waiting_for_workflows": true, "cancelled": true}

// ReplayWorkflow writes an export (ExportWorkflow's, or Queuety PHP's
// export_workflow) into a new workflow named "<name>_replay_<unix time>":
// its state, status and position, events, logs (without job ids), signals
// and wait dependencies, plus a workflow_replayed event naming the source.
// A running replay gets its current step's job, and runs on. It returns
// the new workflow's id.
func (e *Engine) ReplayWorkflow(ctx context.Context, export *phpjson.Object) (int64, error) {
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
	current, total := int(intValue(src, "current_step")), int(intValue(src, "total_steps"))
	status := strField(src, "status")
	if !replayStatuses[status] {
		status = "running"
	}
	steps, err := parseSteps(state)
	if err != nil && status == "running" {
		return 0, fmt.Errorf("queuety: replay workflow: %w", invalidf("invalid export: %v", err))
	}
	list := func(k string) []*phpjson.Object {
		v, _ := export.Get(k)
		items, _ := listOf(v)
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
		now := e.clock.Now()
		step := current
		if status == "completed" {
			step = total
		}
		wf := &driver.Workflow{Name: strField(src, "name") + "_replay_" + strconv.FormatInt(now.Unix(), 10),
			Status: driver.WorkflowStatus(status), State: EncodeJSON(state), CurrentStep: step, TotalSteps: total,
			StartedAt: floorSecond(now), RunNumber: 1, RunStartedAt: now}
		switch status {
		case "completed":
			wf.CompletedAt = floorSecond(now)
		case "failed":
			wf.FailedAt = floorSecond(now)
			wf.ErrorMessage = strField(src, "error_message")
		}
		if err := tx.WorkflowInsert(ctx, wf); err != nil {
			return err
		}
		id = wf.ID
		var events []*driver.WorkflowEvent
		for _, ev := range list("events") {
			events = append(events, &driver.WorkflowEvent{WorkflowID: id, StepIndex: int(intValue(ev, "step_index")),
				StepName: strField(ev, "step_name"), StepType: strField(ev, "step_type"), Handler: strField(ev, "handler"),
				Event: driver.EventType(orDefault(strField(ev, "event"), string(driver.EventStepCompleted))), Queue: strField(ev, "queue"),
				Attempt: optInt(ev, "attempt"), Input: jsonField(ev, "input"), Output: jsonField(ev, "output"),
				StateBefore: jsonField(ev, "state_before"), StateAfter: jsonField(ev, "state_after"),
				Context: jsonField(ev, "context"), Artifacts: jsonField(ev, "artifacts"), Error: jsonField(ev, "error"), DurationMS: optInt64(ev, "duration_ms"),
				CreatedAt: timeField(ev, "created_at", now)})
		}
		source := phpjson.NewObject()
		source.Set("source_workflow_id", intValue(src, "id"))
		source.Set("source_status", strField(src, "status"))
		v, _ := src.Get("definition_version")
		source.Set("definition_version", v)
		v, _ = src.Get("definition_hash")
		source.Set("definition_hash", v)
		events = append(events, &driver.WorkflowEvent{WorkflowID: id, StepIndex: step, Handler: "__queuety_replay",
			Event: driver.EventWorkflowReplayed, Output: EncodeJSON(source), StateAfter: EncodeJSON(PublicState(state)),
			Context: EncodeJSON(source), CreatedAt: now})
		if err := tx.EventInsert(ctx, events); err != nil {
			return err
		}
		var logs []*driver.LogEntry
		for _, l := range list("logs") {
			logs = append(logs, &driver.LogEntry{WorkflowID: id, StepIndex: optInt(l, "step_index"), Handler: strField(l, "handler"),
				Queue: orDefault(strField(l, "queue"), DefaultQueue), Event: driver.LogEvent(orDefault(strField(l, "event"), string(driver.LogDebug))),
				Attempt: optInt(l, "attempt"), DurationMS: optInt64(l, "duration_ms"), ErrorMessage: strField(l, "error_message"),
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
			if err := tx.SignalInsert(ctx, &driver.Signal{WorkflowID: id, Name: strField(s, "signal_name"), Payload: EncodeJSON(p),
				ReceivedAt: timeField(s, "received_at", now)}); err != nil {
				return err
			}
		}
		var deps []*driver.WorkflowDependency
		for _, d := range list("wait_dependencies") {
			if dep := intValue(d, "dependency_workflow_id"); dep > 0 {
				deps = append(deps, &driver.WorkflowDependency{WaitingWorkflowID: id, StepIndex: int(intValue(d, "step_index")),
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
		if status == "running" && step < len(steps) {
			return e.enqueueStep(ctx, tx, wf, state, steps, step, now)
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
	return EncodeJSON(v)
}

func optInt(o *phpjson.Object, k string) *int {
	v, _ := o.Get(k)
	if v == nil {
		return nil
	}
	n := int(toInt(v))
	return &n
}

func optInt64(o *phpjson.Object, k string) *int64 {
	v, _ := o.Get(k)
	if v == nil {
		return nil
	}
	n := toInt(v)
	return &n
}

// timeField reads an export's DATETIME string (or RFC 3339), or def.
func timeField(o *phpjson.Object, k string, def time.Time) time.Time {
	s := strField(o, k)
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
