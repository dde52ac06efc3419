package ui

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Page sizes.
const (
	jobsPerPage         = 50
	workflowsPerPage    = 100
	maxWorkflowsPerPage = 1000
	jobLogRows          = 500
	// jobText bounds a log row's error message and context, and a
	// failure's message, on a job's page (cut, or left out for a
	// context).
	jobText = 2 << 10
)

// pathID parses the {id} path value; it writes a 400 page and returns
// false when it is not a positive integer.
func (s *server) pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusBadRequest, "%q is not a %s id: ids are positive whole numbers.", raw, what)
		return 0, false
	}
	return id, true
}

// queryID parses an optional id from the query string (0 when absent).
func queryID(r *http.Request, name string) (int64, error) {
	raw := strings.TrimSpace(r.URL.Query().Get(name))
	if raw == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%s=%q is not an id", name, raw)
	}
	return id, nil
}

func (s *server) overviewPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.overview(r.Context())
	if err == nil {
		d.Charts, err = s.overviewCharts(r.Context())
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.page(w, r, "overview", "Overview", "overview", true, d)
}

// statusTab is one status filter with its count.
type statusTab struct {
	Status string
	Count  int64
}

// jobData is what the job page shows.
type jobData struct {
	Job *queuetytype.Job
	// Payload and Heartbeat show the job's payload and heartbeat data,
	// cut to previewChars characters (Heartbeat is nil without any).
	Payload, Heartbeat *valueView
	Logs               []*queuetytype.LogEntry
	Failures           []*queuetytype.Failure
	CanBury            bool
	CanDelete          bool
	Now                time.Time
	// HeldBy is the id of the worker running the job (processing jobs
	// only; "" when no live worker reports it).
	HeldBy string
}

func (s *server) jobPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "job")
	if !ok {
		return
	}
	ctx := r.Context()
	p, err := s.c.JobPreview(ctx, id, previewChars)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	j := p.Job
	base := fmt.Sprintf("%s/jobs/%d/", s.opts.BasePath, id)
	d := &jobData{Job: j, Now: s.opts.Clock.Now(),
		Payload:   newValueView(j.Payload, p.PayloadLen, base+"payload"),
		Heartbeat: newValueView(j.HeartbeatData, p.HeartbeatLen, base+"heartbeat"),
		CanBury:   s.ops.bury != nil && j.Status != queuetytype.JobBuried && j.Status != queuetytype.JobCompleted,
		CanDelete: s.ops.del != nil}
	if d.HeldBy, err = s.holder(ctx, j); err != nil {
		s.failErr(w, r, err)
		return
	}
	if d.Logs, err = s.c.Logs(ctx, queuetytype.LogFilter{JobID: id, Limit: jobLogRows, MaxTextBytes: jobText}); err != nil {
		s.failErr(w, r, err)
		return
	}
	if d.Failures, err = s.c.FailurePage(ctx, queuetytype.FailureQuery{JobIDs: []int64{id}, Limit: jobLogRows, MaxMessageChars: jobText}); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.page(w, r, "job", fmt.Sprintf("Job %d", id), "jobs", false, d)
}

// workflowData is what the workflow page shows.
type workflowData struct {
	D          *queuetytype.WorkflowDescription
	Categories []statusCount // every failure, counted by category
	CanPause   bool
	CanResume  bool
	CanCancel  bool
	CanRetry   bool
	CanSignal  bool
	// CanApprove and CanReject are set when the workflow waits at a wait
	// that takes that answer (an approval or decision wait).
	CanApprove bool
	CanReject  bool
	Waiting    string     // the signal names a wait listens for, comma-separated
	State      *valueView // the state, cut to previewChars characters
	// The timeline page: entries TimelineFrom to TimelineTo (1-based) of
	// D.TimelineTotal, and the offsets of the pages before and after it
	// (-1 when there is none).
	TimelineFrom, TimelineTo   int
	TimelinePrev, TimelineNext int
	// Visual draws the steps on a time axis (timeline.go); nil when
	// nothing has started.
	Visual *timelineChart
	// Artifacts lists the workflow's artifacts (artifacts.go).
	Artifacts *artifactList
}

func (s *server) workflowPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "workflow")
	if !ok {
		return
	}
	offset, err := queryCount(r, "timeline_offset", queuetytype.MaxTimelineOffset)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	desc, err := s.c.DescribeWorkflowWith(r.Context(), id, queuetytype.DescribeOptions{TimelineOffset: offset})
	if err != nil {
		s.undescribedWorkflow(w, r, id, err)
		return
	}
	st := desc.Status
	d := &workflowData{D: desc, TimelineFrom: offset + 1, TimelineTo: offset + len(desc.Timeline),
		TimelinePrev: -1, TimelineNext: -1, State: newJSONView(desc.State, fmt.Sprintf("%s/workflows/%d/state", s.opts.BasePath, id)),
		CanPause:  st == queuetytype.WorkflowRunning,
		CanResume: st == queuetytype.WorkflowPaused,
		CanCancel: !st.Terminal(),
		CanRetry:  st == queuetytype.WorkflowFailed,
		CanSignal: !st.Terminal(),
	}
	steps, spansLeft, err := s.stepSpans(r.Context(), desc)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Visual = newTimelineChart(desc, steps, spansLeft, s.opts.Clock.Now(), s.opts.BasePath)
	if d.Artifacts, err = s.workflowArtifacts(r.Context(), id); err != nil {
		s.failErr(w, r, err)
		return
	}
	if offset > 0 {
		d.TimelinePrev = max(offset-queuetytype.DefaultTimelineEntries, 0)
	}
	if desc.TimelineMore > 0 && offset+len(desc.Timeline) <= queuetytype.MaxTimelineOffset {
		d.TimelineNext = offset + len(desc.Timeline)
	}
	if desc.StateError != "" {
		// The description has no state to show: show the row's as stored.
		if wf, err := s.c.Workflow(r.Context(), id); err == nil {
			if v := newValueView(firstChars(wf.State, previewChars), int64(utf8.RuneCount(wf.State)),
				fmt.Sprintf("%s/workflows/%d/state", s.opts.BasePath, id)); v != nil {
				d.State = v
			}
		}
	}
	if desc.Wait != nil {
		d.Waiting = strings.Join(desc.Wait.WaitingFor, ", ")
		d.CanApprove = slices.Contains(desc.Wait.Answers, "approve")
		d.CanReject = slices.Contains(desc.Wait.Answers, "reject")
	}
	for c, n := range desc.FailureCounts {
		d.Categories = append(d.Categories, statusCount{Status: string(c), Count: int64(n)})
	}
	sort.Slice(d.Categories, func(i, j int) bool { return d.Categories[i].Status < d.Categories[j].Status })
	s.page(w, r, "workflow", fmt.Sprintf("Workflow %d", id), "workflows", false, d)
}

// rowData is what the page of a workflow that cannot be described shows:
// the row as stored.
type rowData struct {
	W     *queuetytype.Workflow
	State *valueView
	ErrID string
}

// undescribedWorkflow answers a workflow page whose description failed.
// When the row itself reads (its stored state is what could not be
// understood, a bad row), it shows the row as stored with a message that
// says so; a missing row or a store that cannot be read gets the error
// page.
func (s *server) undescribedWorkflow(w http.ResponseWriter, r *http.Request, id int64, err error) {
	ctx := r.Context()
	if errStatus(err) != http.StatusInternalServerError || ctx.Err() != nil {
		s.failErr(w, r, err)
		return
	}
	wf, rerr := s.c.Workflow(ctx, id)
	if rerr != nil {
		s.failErr(w, r, err)
		return
	}
	errID := s.logFailure(r, "ui: workflow cannot be described", err)
	n := int64(utf8.RuneCount(wf.State))
	d := &rowData{W: wf, ErrID: errID,
		State: newValueView(firstChars(wf.State, previewChars), n, fmt.Sprintf("%s/workflows/%d/state", s.opts.BasePath, id))}
	s.page(w, r, "workflowrow", fmt.Sprintf("Workflow %d", id), "workflows", false, d)
}

// workflowTrace downloads one page of a workflow's trace bundle
// (TraceWorkflowWith): ?offset= and ?limit= select it, and the bundle's
// "page" object gives the next offset.
func (s *server) workflowTrace(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "workflow")
	if !ok {
		return
	}
	offset, err := queryCount(r, "offset", math.MaxInt32)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := queryCount(r, "limit", queuetytype.MaxTraceEvents)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	b, err := s.c.TraceWorkflowWith(r.Context(), id, queuetytype.TraceOptions{Offset: offset, Limit: limit})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="workflow-%d-trace.json"`, id))
	_, _ = w.Write(b)
}

// queryCount parses an optional count from the query string: 0 when
// absent, an error when it is not a whole number from 0 to most.
func queryCount(r *http.Request, name string, most int) (int, error) {
	raw := strings.TrimSpace(r.URL.Query().Get(name))
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > most {
		return 0, fmt.Errorf("%s=%q is not a whole number from 0 to %d", name, raw, most)
	}
	return n, nil
}

// scheduleRow is one schedule on the schedules page.
type scheduleRow struct {
	*queuetytype.Schedule
	Name     string // the handler, or the workflow key
	Workflow bool
}

// schedulesPerPage is the schedules page's page size.
const schedulesPerPage = 50

func (s *server) schedulesPage(w http.ResponseWriter, r *http.Request) {
	k, err := keysetFrom(r.URL.Query(), schedulesPerPage)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: %v.", err)
		return
	}
	ctx := r.Context()
	var page *driver.Page[*queuetytype.Schedule]
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { page, err = tx.SchedulePage(ctx, k); return err }); err != nil {
		s.failErr(w, r, err)
		return
	}
	list, pg := newPager(page, k, schedulesPerPage, func(sc *queuetytype.Schedule) int64 { return sc.ID }, s.pageLink("/schedules", nil))
	rows := make([]scheduleRow, 0, len(list))
	for _, sc := range list {
		row := scheduleRow{Schedule: sc, Name: sc.Handler}
		if key, ok := sc.WorkflowKey(); ok {
			row.Name, row.Workflow = key, true
		}
		rows = append(rows, row)
	}
	s.page(w, r, "schedules", "Schedules", "schedules", true, map[string]any{"Schedules": rows, "Now": s.opts.Clock.Now(), "Pager": pg})
}
