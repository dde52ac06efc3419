package readview

import (
	"context"
	"fmt"
	"sort"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Bounds of a trace bundle. A trace reads one page of a workflow's events
// and a bounded number of its jobs and log rows, so tracing a workflow
// with a long history reads a bounded number of rows and bytes.
// ExportWorkflow is the way to read a whole history.
const (
	// traceLogText bounds a listed log row's error message and trace (cut)
	// and context (left out when longer).
	traceLogText = 8 << 10
)

// traceLimit is the page size opts selects, within the limits.
func traceLimit(o queuetytype.TraceOptions) int {
	switch {
	case o.Limit <= 0:
		return queuetytype.DefaultTraceEvents
	case o.Limit > queuetytype.MaxTraceEvents:
		return queuetytype.MaxTraceEvents
	}
	return o.Limit
}

// TraceWorkflow returns the first page of a workflow's trace bundle: see
// TraceWorkflowWith.
func (v *Views) TraceWorkflow(ctx context.Context, id int64) (*phpjson.Object, error) {
	return v.TraceWorkflowWith(ctx, id, queuetytype.TraceOptions{})
}

// TraceWorkflowWith returns a workflow's trace bundle (Queuety's
// workflow_trace) with one page of its events: the workflow, the page's
// events grouped by step (each group with step_index, step_name,
// step_type, handler, its events and the latest of its step_completed,
// step_failed, workflow_waiting and workflow_resumed events), the events,
// up to TraceJobsPerStep jobs of each step, the newest TraceLogs log rows,
// the first TraceArtifacts artifacts by key, the first TraceArtifacts
// streaming chunks (by step and chunk index), the newest
// TraceSignals signals and the wait dependencies, in ExportWorkflow's row
// shapes, and "page", which says what was left out:
//
//	{"events_total": n, "events_offset": n, "events_shown": n,
//	 "events_more": n, "next_offset": n|null, "jobs_total": n,
//	 "jobs_shown": n, "logs_total": n, "logs_shown": n,
//	 "signals_total": n, "signals_shown": n,
//	 "artifacts_total": n, "artifacts_shown": n}
//
// events_more counts the events after the page (next_offset is the
// Offset that reads them). A JSON value longer than TraceValueBytes is
// null, with its length under the event's "omitted" (a job's or signal's
// "payload_omitted_bytes", an artifact's "content_omitted_bytes" or
// "metadata_omitted_bytes"); so are the signal payloads and artifact
// values past TraceSignalBytes and TraceArtifactBytes.
func (v *Views) TraceWorkflowWith(ctx context.Context, id int64, opts queuetytype.TraceOptions) (*phpjson.Object, error) {
	var (
		wf             *driver.Workflow
		jobs           []*driver.Job
		counts         []driver.JobStepCount
		events         []*driver.WorkflowEvent
		logs           []*driver.LogEntry
		signals        []*driver.Signal
		deps           []*driver.WorkflowDependency
		artifacts      []*driver.Artifact
		chunks         []*driver.Chunk
		eventsN, logsN int64
		signalsN       int64
		artifactsN     int64
		offset, limit  = max(opts.Offset, 0), traceLimit(opts)
	)
	err := v.store.InTx(ctx, func(tx driver.Tx) (err error) {
		if wf, err = tx.WorkflowGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		if eventsN, err = tx.EventCount(ctx, id); err != nil {
			return err
		}
		if events, err = eventPage(ctx, tx, id, offset, limit); err != nil {
			return err
		}
		if jobs, err = tx.JobListByStep(ctx, driver.JobStepQuery{WorkflowID: id, PerStep: queuetytype.TraceJobsPerStep, MaxPayloadBytes: queuetytype.TraceValueBytes}); err != nil {
			return err
		}
		if counts, err = tx.JobStepCounts(ctx, id); err != nil {
			return err
		}
		if logsN, err = tx.LogCount(ctx, driver.LogFilter{WorkflowID: id}); err != nil {
			return err
		}
		if logs, err = tx.LogList(ctx, driver.LogFilter{WorkflowID: id, Limit: queuetytype.TraceLogs, Newest: true, MaxTextBytes: traceLogText}); err != nil {
			return err
		}
		if signalsN, err = tx.SignalCount(ctx, id); err != nil {
			return err
		}
		if signals, err = traceSignals(ctx, tx, id); err != nil {
			return err
		}
		if artifactsN, err = tx.ArtifactCount(ctx, id); err != nil {
			return err
		}
		if artifacts, err = traceArtifacts(ctx, tx, id); err != nil {
			return err
		}
		if chunks, err = tx.ChunkListWorkflow(ctx, id, 0, queuetytype.TraceArtifacts); err != nil {
			return err
		}
		deps, err = tx.DependencyList(ctx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: trace workflow %d: %w", id, err)
	}
	state, err := workflowstate.DecodeObject("workflow state", wf.State)
	if err != nil {
		// The row, not the request, is wrong: ErrInvalidState, not an
		// internal error.
		return nil, fmt.Errorf("queuety: trace workflow %d: %w (%w)", id, err, queuetytype.ErrInvalidState)
	}
	sort.Slice(logs, func(a, b int) bool { return logs[a].ID < logs[b].ID })

	eventList := make([]any, 0, len(events))
	groups := map[int64]*phpjson.Object{}
	for _, ev := range events {
		o := eventObject(ev)
		eventList = append(eventList, o)
		idx := int64(ev.StepIndex)
		g := groups[idx]
		if g == nil {
			g = phpjson.NewObject()
			g.Set("step_index", idx)
			for _, k := range []string{"step_name", "step_type", "handler"} {
				v, _ := o.Get(k)
				g.Set(k, v)
			}
			g.Set("events", []any{})
			groups[idx] = g
		}
		list, _ := g.Get("events")
		g.Set("events", append(list.([]any), o))
		switch ev.Event {
		case driver.EventStepCompleted, driver.EventStepFailed, driver.EventWorkflowWaiting, driver.EventWorkflowResumed:
			g.Set("latest", o)
		}
	}
	idxs := make([]int64, 0, len(groups))
	for i := range groups {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	steps := make([]any, len(idxs))
	for i, idx := range idxs {
		steps[i] = groups[idx]
	}
	var jobsN int64
	for _, c := range counts {
		jobsN += c.Count
	}

	out := phpjson.NewObject()
	out.Set("workflow", workflowObject(wf, state))
	out.Set("steps", steps)
	out.Set("events", eventList)
	out.Set("jobs", objects(jobs, jobObject))
	out.Set("logs", objects(logs, logObject))
	out.Set("artifacts", objects(artifacts, artifactObject))
	out.Set("chunks", objects(chunks, chunkObject))
	out.Set("signals", objects(signals, signalObject))
	out.Set("wait_dependencies", objects(deps, dependencyObject))
	page := phpjson.NewObject()
	page.Set("events_total", eventsN)
	page.Set("events_offset", int64(offset))
	page.Set("events_shown", int64(len(events)))
	more := max(eventsN-int64(offset)-int64(len(events)), 0)
	page.Set("events_more", more)
	if more > 0 {
		page.Set("next_offset", int64(offset+len(events)))
	} else {
		page.Set("next_offset", nil)
	}
	page.Set("jobs_total", jobsN)
	page.Set("jobs_shown", int64(len(jobs)))
	page.Set("logs_total", logsN)
	page.Set("logs_shown", int64(len(logs)))
	page.Set("signals_total", signalsN)
	page.Set("signals_shown", int64(len(signals)))
	page.Set("artifacts_total", artifactsN)
	page.Set("artifacts_shown", int64(len(artifacts)))
	out.Set("page", page)
	return out, nil
}

// eventPage reads up to limit of a workflow's events from offset on, in id
// order, with every JSON value up to TraceValueBytes, ending the page
// before the event that would take its JSON past TraceEventBytes (a page
// holds at least one event). It reads the sizes first, then the values of
// the events that fit.
func eventPage(ctx context.Context, tx driver.Tx, id int64, offset, limit int) ([]*driver.WorkflowEvent, error) {
	sizes, err := tx.EventPage(ctx, driver.EventQuery{WorkflowID: id, Offset: offset, Limit: limit, Light: true, MaxColumnBytes: queuetytype.TraceValueBytes})
	if err != nil {
		return nil, err
	}
	var total int64
	n := 0
	for _, ev := range sizes {
		size := int64(len(ev.Error))
		for _, b := range ev.Omitted {
			if b <= queuetytype.TraceValueBytes {
				size += b
			}
		}
		if n > 0 && total+size > queuetytype.TraceEventBytes {
			break
		}
		total += size
		n++
	}
	ids := make([]int64, n)
	for i, ev := range sizes[:n] {
		ids[i] = ev.ID
	}
	return byIDs(ids, func(part []int64) ([]*driver.WorkflowEvent, error) {
		return tx.EventPage(ctx, driver.EventQuery{WorkflowID: id, IDs: part, MaxColumnBytes: queuetytype.TraceValueBytes})
	})
}

// readSize is how many bytes reading a value of n bytes for a trace
// takes: none for one longer than TraceValueBytes, which the read leaves
// out.
func readSize(n int64) int64 {
	if n > queuetytype.TraceValueBytes {
		return 0
	}
	return n
}

// fitValues picks, in list order, the rows of a list whose values (of
// the given read sizes) fit in budget together, and returns their
// indexes.
func fitValues(sizes []int64, budget int64) []int {
	var out []int
	var total int64
	for i, n := range sizes {
		if total+n > budget {
			continue
		}
		total += n
		out = append(out, i)
	}
	return out
}

// fillFitting replaces, in list order, the rows of list whose values (of
// the read sizes sizeOf gives) fit in budget together with the same rows
// read again with their values (read, by id).
func fillFitting[T any](list []T, budget int64, idOf, sizeOf func(T) int64, read func(ids []int64) ([]T, error)) error {
	sizes := make([]int64, len(list))
	for i, row := range list {
		sizes[i] = sizeOf(row)
	}
	fit := fitValues(sizes, budget)
	ids := make([]int64, len(fit))
	for i, k := range fit {
		ids[i] = idOf(list[k])
	}
	full, err := byIDs(ids, read)
	if err != nil {
		return err
	}
	byID := make(map[int64]T, len(full))
	for _, row := range full {
		byID[idOf(row)] = row
	}
	for i, row := range list {
		if f, ok := byID[idOf(row)]; ok {
			list[i] = f
		}
	}
	return nil
}

// idChunk is how many ids one query of byIDs names.
const idChunk = 500

// byIDs reads the rows of ids through read, idChunk ids a query, and
// returns them chunk after chunk, each in the order read returns them.
func byIDs[T any](ids []int64, read func(ids []int64) ([]T, error)) ([]T, error) {
	var out []T
	for len(ids) > 0 {
		part := ids[:min(idChunk, len(ids))]
		ids = ids[len(part):]
		rows, err := read(part)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// traceSignals reads the newest TraceSignals signals of a workflow with
// the payloads that fit TraceSignalBytes: the payloads' lengths first,
// then the payloads that fit.
func traceSignals(ctx context.Context, tx driver.Tx, id int64) ([]*driver.Signal, error) {
	list, err := tx.SignalPage(ctx, driver.SignalQuery{WorkflowID: id, Limit: queuetytype.TraceSignals, MaxPayloadBytes: -1})
	if err != nil {
		return nil, err
	}
	return list, fillFitting(list, queuetytype.TraceSignalBytes,
		func(s *driver.Signal) int64 { return s.ID },
		func(s *driver.Signal) int64 { return readSize(s.OmittedPayloadBytes) },
		func(part []int64) ([]*driver.Signal, error) {
			return tx.SignalPage(ctx, driver.SignalQuery{WorkflowID: id, IDs: part, MaxPayloadBytes: queuetytype.TraceValueBytes})
		})
}

// traceArtifacts reads the first TraceArtifacts artifacts of a workflow
// by key with the contents and metadata that fit TraceArtifactBytes: the
// values' lengths first, then the artifacts whose values fit.
func traceArtifacts(ctx context.Context, tx driver.Tx, id int64) ([]*driver.Artifact, error) {
	list, err := tx.ArtifactPage(ctx, driver.ArtifactQuery{WorkflowID: id, Limit: queuetytype.TraceArtifacts, MaxValueBytes: -1})
	if err != nil {
		return nil, err
	}
	return list, fillFitting(list, queuetytype.TraceArtifactBytes,
		func(a *driver.Artifact) int64 { return a.ID },
		func(a *driver.Artifact) int64 {
			return readSize(a.OmittedContentBytes) + readSize(a.OmittedMetadataBytes)
		},
		func(part []int64) ([]*driver.Artifact, error) {
			return tx.ArtifactPage(ctx, driver.ArtifactQuery{WorkflowID: id, IDs: part, MaxValueBytes: queuetytype.TraceValueBytes})
		})
}
