package readview

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Bounds of a workflow description, so that describing a workflow with a
// long history or many jobs reads a bounded number of rows.
const (
	// describeChildren bounds the started workflows a description names.
	describeChildren = 1000
	// describeValueBytes bounds an event's error document read for the
	// timeline; a longer one is left out.
	describeValueBytes = 64 << 10
	// describeLogText bounds a log row's context (a longer one is left
	// out) and error message read for the timeline.
	describeLogText = 1 << 10
	// describeHistoryText bounds a log row's error message read for a
	// job's attempt history.
	describeHistoryText = 4 << 10
)

// describeBounds are the timeline page and jobs per step opts select,
// within the limits.
func describeBounds(o queuetytype.DescribeOptions) (offset, limit, perStep int) {
	offset = min(max(o.TimelineOffset, 0), queuetytype.MaxTimelineOffset)
	limit, perStep = o.TimelineLimit, o.JobsPerStep
	if limit <= 0 {
		limit = queuetytype.DefaultTimelineEntries
	}
	if perStep <= 0 {
		perStep = queuetytype.DefaultJobsPerStep
	}
	return offset, min(limit, queuetytype.MaxTimelineEntries), min(perStep, queuetytype.MaxJobsPerStep)
}

// DescribeWorkflow reads a workflow with its jobs, logs, events, signals
// and failures, in one transaction, within the default DescribeOptions.
// It lists the newest DescribeFailures failures and DescribeSignals
// signals, and counts them all.
func (v *Views) DescribeWorkflow(ctx context.Context, id int64) (*queuetytype.WorkflowDescription, error) {
	return v.DescribeWorkflowWith(ctx, id, queuetytype.DescribeOptions{})
}

// DescribeWorkflowWith reads a workflow with its jobs, logs, events,
// signals and failures, in one transaction: one page of its timeline and
// a bounded number of jobs per step, as opts says.
func (v *Views) DescribeWorkflowWith(ctx context.Context, id int64, opts queuetytype.DescribeOptions) (*queuetytype.WorkflowDescription, error) {
	offset, limit, perStep := describeBounds(opts)
	var (
		wf             *driver.Workflow
		jobs           []*driver.Job
		counts         []driver.JobStepCount
		jobLogs, logs  []*driver.LogEntry
		events         []*driver.WorkflowEvent
		eventsN, logsN int64
		reached        []int
		fails          []*driver.Failure
		jobFails       []*driver.Failure
		failCounts     []driver.FailureCount
		signals        []*driver.Signal
		signalsN       int64
		kids           []*driver.Workflow
		view           *StateView
	)
	err := v.store.InTx(ctx, func(tx driver.Tx) (err error) {
		if wf, err = tx.WorkflowGet(ctx, id, driver.LockNone); err != nil {
			return err
		}
		view = ViewState(wf.State, wf.TotalSteps)
		if jobs, err = tx.JobListByStep(ctx, driver.JobStepQuery{WorkflowID: id, PerStep: perStep, MaxPayloadBytes: -1}); err != nil {
			return err
		}
		if counts, err = tx.JobStepCounts(ctx, id); err != nil {
			return err
		}
		if jobLogs, err = jobHistoryLogs(ctx, tx, jobs); err != nil {
			return err
		}
		if jobFails, err = jobTimeouts(ctx, tx, id, jobs); err != nil {
			return err
		}
		// The first offset+limit entries of the timeline are among the
		// first offset+limit rows of each source in time order.
		window := offset + limit
		if eventsN, err = tx.EventCount(ctx, id); err != nil {
			return err
		}
		if reached, err = tx.EventSteps(ctx, id); err != nil {
			return err
		}
		if events, err = tx.EventPage(ctx, driver.EventQuery{WorkflowID: id, Order: driver.EventsByTime, Limit: window,
			Light: true, MaxColumnBytes: describeValueBytes}); err != nil {
			return err
		}
		if logsN, err = tx.LogCount(ctx, driver.LogFilter{WorkflowID: id}); err != nil {
			return err
		}
		if logs, err = tx.LogList(ctx, driver.LogFilter{WorkflowID: id, ByTime: true, Limit: window, MaxTextBytes: describeLogText}); err != nil {
			return err
		}
		if signalsN, err = tx.SignalCount(ctx, id); err != nil {
			return err
		}
		if signals, err = tx.SignalPage(ctx, driver.SignalQuery{WorkflowID: id, Limit: queuetytype.DescribeSignals, MaxPayloadBytes: queuetytype.DescribePayloadBytes}); err != nil {
			return err
		}
		if kids, err = tx.WorkflowList(ctx, driver.WorkflowFilter{Parent: id, Limit: describeChildren}); err != nil {
			return err
		}
		if started := startedIDs(view); len(started) > 0 {
			more, err := tx.WorkflowGetMany(ctx, started[:min(len(started), describeChildren)], driver.LockNone)
			if err != nil {
				return err
			}
			kids = append(kids, more...)
		}
		if failCounts, err = tx.FailureCountByCategory(ctx, id); err != nil {
			return err
		}
		fails, err = tx.FailurePage(ctx, driver.FailureQuery{WorkflowID: id, Limit: queuetytype.DescribeFailures, MaxMessageChars: queuetytype.DescribeTextChars})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: describe workflow %d: %w", id, err)
	}
	// A state that does not decode is described, not refused: the
	// workflow's page is where a person finds out what is wrong with it.
	state := view.State
	d := &queuetytype.WorkflowDescription{
		ID: wf.ID, Name: wf.Name, Status: wf.Status, CurrentStep: wf.CurrentStep, TotalSteps: wf.TotalSteps,
		Queue: view.Queue, Priority: view.Priority, MaxAttempts: view.MaxAttempts,
		State: workflowstate.PublicMap(state), StartedAt: iso(wf.StartedAt), CompletedAt: iso(wf.CompletedAt),
		FailedAt: iso(wf.FailedAt), Error: wf.ErrorMessage, DefinitionHash: view.DefinitionHash,
		IdempotencyKey: view.IdempotencyKey,
		Steps:          []queuetytype.StepInfo{}, Failures: []queuetytype.FailureInfo{}, Timeline: []queuetytype.TimelineEntry{},
		TimelineTotal: int(eventsN + logsN),
	}
	if view.Err != nil {
		d.StateError = strings.TrimPrefix(view.Err.Error(), "queuety: ")
	}
	d.ParentID, d.ParentStep = wf.ParentWorkflowID, wf.ParentStepIndex
	d.StartedBy = view.StartedBy
	d.OnDeadline, d.OnCancel = view.OnDeadline, view.OnCancel
	d.Deadlines = queuetytype.DeadlineInfo{
		ExecutionTimeoutSeconds: view.ExecutionTimeoutSeconds, ExecutionDeadline: iso(wf.DeadlineAt),
		RunTimeoutSeconds: view.RunTimeoutSeconds, Run: max(wf.RunNumber, 1),
		RunStartedAt: iso(wf.RunStartedAt), RunDeadline: iso(wf.RunDeadlineAt),
	}
	if w := view.Wait; w != nil {
		d.Wait = &queuetytype.WaitInfo{Type: w.Type, WaitingFor: w.WaitingFor, Mode: w.Mode, TimeoutAt: iso(wf.WaitDeadlineAt)}
		if view.StepsOK && wf.Status == driver.WorkflowWaitingForSignal && wf.CurrentStep < len(view.Steps) {
			d.Wait.Answers = view.Steps[wf.CurrentStep].WaitAnswers
		}
	}

	byStep := map[int][]*driver.Job{}
	for _, j := range jobs {
		if j.StepIndex != nil {
			byStep[*j.StepIndex] = append(byStep[*j.StepIndex], j)
		}
	}
	statuses := map[int]map[driver.JobStatus]int64{}
	for _, c := range counts {
		if statuses[c.StepIndex] == nil {
			statuses[c.StepIndex] = map[driver.JobStatus]int64{}
		}
		statuses[c.StepIndex][c.Status] += c.Count
	}
	for _, c := range failCounts {
		if d.FailureCounts == nil {
			d.FailureCounts = map[driver.FailureCategory]int{}
		}
		d.FailureCounts[c.Category] += int(c.Count)
		d.FailuresTotal += int(c.Count)
	}
	for _, f := range fails {
		d.Failures = append(d.Failures, queuetytype.FailureInfo{At: iso(f.CreatedAt), Category: f.Category, TimeoutKind: f.TimeoutKind,
			NonRetryable: f.NonRetryable, JobID: f.JobID, StepIndex: f.StepIndex, Attempt: f.Attempt, Run: f.RunNumber,
			Message: f.Message, MessageCut: f.MessageCut, Deadline: iso(f.DeadlineAt)})
	}
	d.FailuresMore = max(d.FailuresTotal-len(d.Failures), 0)
	failsByJob := map[int64][]*driver.Failure{}
	for _, f := range jobFails {
		failsByJob[f.JobID] = append(failsByJob[f.JobID], f)
	}
	logsByJob := map[int64][]*driver.LogEntry{}
	for _, l := range jobLogs {
		if l.JobID != nil && *l.JobID != 0 {
			logsByJob[*l.JobID] = append(logsByJob[*l.JobID], l)
		}
	}
	if view.StepsOK {
		ran := map[int]bool{}
		for _, i := range reached {
			ran[i] = true
		}
		for i, s := range view.Steps {
			si := queuetytype.StepInfo{Index: i, Name: s.Name, Type: s.Type, Handlers: s.Handlers, Status: stepStatus(wf, i, statuses[i], ran[i])}
			var total int64
			for _, n := range statuses[i] {
				total += n
			}
			si.JobsMore = max(int(total)-len(byStep[i]), 0)
			if t := s.Timeouts; t != (queuetytype.Timeouts{}) {
				si.Timeouts = &t
			}
			for _, j := range byStep[i] {
				si.Jobs = append(si.Jobs, describeJob(j, logsByJob[j.ID], failsByJob[j.ID]))
			}
			if i == wf.CurrentStep {
				d.CurrentStepName = s.Name
			}
			describeStepRuntime(&si, s, wf, kids)
			d.Steps = append(d.Steps, si)
		}
	}

	var rows []timelineRow
	for _, e := range events {
		te := timelineRow{TimelineEntry: queuetytype.TimelineEntry{At: iso(e.CreatedAt), Source: "event", Event: string(e.Event), StepIndex: ptr(e.StepIndex),
			JobID: e.JobID, Attempt: e.Attempt}, id: e.ID, at: e.CreatedAt}
		if len(e.Error) > 0 {
			if eo, err := workflowstate.DecodeObject("event error", e.Error); err == nil {
				te.Detail = strField(eo, "message")
			}
		}
		rows = append(rows, te)
	}
	for _, l := range logs {
		te := timelineRow{TimelineEntry: queuetytype.TimelineEntry{At: iso(l.CreatedAt), Source: "log", Event: string(l.Event), StepIndex: l.StepIndex,
			Attempt: l.Attempt, Detail: l.ErrorMessage}, id: l.ID, at: l.CreatedAt}
		if l.JobID != nil {
			te.JobID = *l.JobID
		}
		if len(l.Context) > 0 && json.Valid(l.Context) {
			te.Context = json.RawMessage(l.Context)
		}
		rows = append(rows, te)
	}
	d.Timeline = orderTimeline(rows)
	d.Timeline = d.Timeline[min(offset, len(d.Timeline)):]
	d.Timeline = d.Timeline[:min(limit, len(d.Timeline))]
	d.TimelineMore = max(d.TimelineTotal-offset-len(d.Timeline), 0)
	for _, s := range signals {
		si := queuetytype.SignalInfo{Name: s.Name, ReceivedAt: iso(s.ReceivedAt), PayloadOmittedBytes: s.OmittedPayloadBytes}
		switch {
		case s.Payload == nil:
		case json.Valid(s.Payload):
			si.Payload = json.RawMessage(s.Payload)
		default: // a row written by hand: shown as the text it holds
			si.Payload, _ = json.Marshal(string(s.Payload))
		}
		d.Signals = append(d.Signals, si)
	}
	d.SignalsTotal = int(signalsN)
	d.SignalsMore = max(d.SignalsTotal-len(d.Signals), 0)
	return d, nil
}

// jobHistoryLogs reads the log rows of the listed jobs, for their attempt
// histories: up to 64 rows a job.
func jobHistoryLogs(ctx context.Context, tx driver.Tx, jobs []*driver.Job) ([]*driver.LogEntry, error) {
	return byIDs(jobIDs(jobs), func(ids []int64) ([]*driver.LogEntry, error) {
		return tx.LogList(ctx, driver.LogFilter{JobIDs: ids, Limit: 64 * len(ids), MaxTextBytes: describeHistoryText})
	})
}

// jobTimeouts reads the timeout failures of the listed jobs, for their
// attempt histories: up to 64 a job, their messages cut.
func jobTimeouts(ctx context.Context, tx driver.Tx, wfID int64, jobs []*driver.Job) ([]*driver.Failure, error) {
	return byIDs(jobIDs(jobs), func(ids []int64) ([]*driver.Failure, error) {
		return tx.FailurePage(ctx, driver.FailureQuery{WorkflowID: wfID, JobIDs: ids, TimedOut: true, Limit: 64 * len(ids),
			MaxMessageChars: describeHistoryText})
	})
}

// jobIDs lists the ids of jobs.
func jobIDs(jobs []*driver.Job) []int64 {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// stepStatus derives a step's status from the workflow, whether its events
// show the step was reached, and the number of the step's jobs in each
// status. A step before the current one was completed when it was
// reached, and skipped (a _next_step jump passed over it) when nothing
// shows it ran: its events say so even after its completed jobs were
// purged.
func stepStatus(wf *driver.Workflow, i int, jobs map[driver.JobStatus]int64, reached bool) string {
	has := func(s driver.JobStatus) bool { return jobs[s] > 0 }
	switch {
	case i < wf.CurrentStep:
		if !reached && len(jobs) == 0 {
			return "skipped"
		}
		return "completed"
	case i > wf.CurrentStep:
		return "not_started"
	}
	switch wf.Status {
	case driver.WorkflowCompleted:
		return "completed"
	case driver.WorkflowFailed:
		return "failed"
	case driver.WorkflowCancelled:
		return "cancelled"
	case driver.WorkflowWaitingForSignal, driver.WorkflowWaitingForWorkflows:
		return "waiting"
	}
	switch {
	case has(driver.JobProcessing):
		return "running"
	case has(driver.JobPending):
		return "pending"
	case has(driver.JobCompleted):
		return "completed"
	}
	return "not_started"
}

// describeJob builds a job's attempt history from its log rows and failures.
func describeJob(j *driver.Job, logs []*driver.LogEntry, fails []*driver.Failure) queuetytype.JobInfoRow {
	row := queuetytype.JobInfoRow{ID: j.ID, Handler: j.Handler, Status: j.Status, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		AvailableAt: iso(j.AvailableAt), Error: j.ErrorMessage, History: []queuetytype.AttemptInfo{},
		Deadlines: queuetytype.JobDeadlines{ScheduleToStart: iso(j.ScheduleToStartAt), StartToClose: iso(j.StartToCloseAt),
			ScheduleToClose: iso(j.ScheduleToCloseAt), Heartbeat: iso(j.HeartbeatDeadline), LastHeartbeat: iso(j.LastHeartbeatAt)}}
	byAttempt := map[int]*queuetytype.AttemptInfo{}
	get := func(n int) *queuetytype.AttemptInfo {
		if a, ok := byAttempt[n]; ok {
			return a
		}
		a := &queuetytype.AttemptInfo{Attempt: n, Outcome: "running"}
		byAttempt[n] = a
		return a
	}
	for _, l := range logs {
		n := 0
		if l.Attempt != nil {
			n = *l.Attempt
		}
		switch l.Event {
		case driver.LogStarted:
			get(n).StartedAt = iso(l.CreatedAt)
		case driver.LogCompleted:
			if n == 0 { // step completions carry no attempt (Queuety)
				n = j.Attempts
			}
			a := get(n)
			a.Outcome, a.EndedAt, a.DurationMS = "completed", iso(l.CreatedAt), l.DurationMS
		case driver.LogFailed:
			a := get(n)
			a.Error, a.EndedAt, a.DurationMS = l.ErrorMessage, iso(l.CreatedAt), l.DurationMS
		case driver.LogRetried:
			a := get(n)
			a.Outcome = "retried"
			if a.EndedAt == "" {
				a.EndedAt = iso(l.CreatedAt)
			}
		case driver.LogBuried:
			a := get(n)
			a.Outcome, a.Error, a.EndedAt = "buried", l.ErrorMessage, iso(l.CreatedAt)
			if l.DurationMS != nil {
				a.DurationMS = l.DurationMS
			}
		}
	}
	for _, f := range fails {
		if f.TimeoutKind != "" {
			a := get(f.Attempt)
			a.TimeoutKind = f.TimeoutKind
			if a.Error == "" {
				a.Error = f.Message
			}
			if a.Outcome == "running" {
				a.Outcome = "timed_out"
			}
		}
	}
	keys := make([]int, 0, len(byAttempt))
	for k := range byAttempt {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		a := byAttempt[k]
		if a.Outcome == "running" && (j.Status != driver.JobProcessing || k != j.Attempts) {
			a.Outcome = "unknown"
		}
		row.History = append(row.History, *a)
	}
	return row
}

// startedIDs are the workflows a workflow's start_workflows steps started,
// read from the result keys in its state.
func startedIDs(view *StateView) []int64 {
	var out []int64
	for _, s := range view.Steps {
		out = append(out, s.StartedIDs...)
	}
	return out
}

// describeStepRuntime adds what a step's runtime state says: for-each
// progress, repeat iterations, children.
func describeStepRuntime(si *queuetytype.StepInfo, s StepView, wf *driver.Workflow, kids []*driver.Workflow) {
	switch queuetytype.StepType(s.Type) {
	case queuetytype.StepForEach:
		si.ForEach = s.ForEach
	case queuetytype.StepRepeat:
		n := s.Iterations
		si.Iterations = &n
	case queuetytype.StepRunWorkflow:
		if si.Index == wf.CurrentStep && si.Status == "completed" && !wf.Status.Terminal() {
			si.Status = "waiting" // for the child
		}
		for _, k := range kids {
			if k.ParentWorkflowID == wf.ID && k.ParentStepIndex != nil && *k.ParentStepIndex == si.Index {
				si.Children = append(si.Children, queuetytype.ChildInfo{ID: k.ID, Name: k.Name, Status: k.Status})
			}
		}
	case queuetytype.StepStartWorkflows:
		byID := map[int64]*driver.Workflow{}
		for _, k := range kids {
			byID[k.ID] = k
		}
		for _, id := range s.StartedIDs {
			if k := byID[id]; k != nil {
				si.Children = append(si.Children, queuetytype.ChildInfo{ID: k.ID, Name: k.Name, Status: k.Status})
			}
		}
	}
}
