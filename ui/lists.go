package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// searchScanRows bounds the rows a search by a filter no index serves (a
// time range, a payload substring, hiding internal handlers) reads per
// page; the page says so and links to the rows beyond.
const searchScanRows = 10000

// errUnknownStatus is a status filter that names no status.
var errUnknownStatus = errors.New("unknown job status")

// pager holds the links of a newest-first list: the first and last pages
// and the pages before (newer) and after (older) this one. An empty link
// has no page.
type pager struct {
	First, Prev, Next, Last string
	// ScanEnd is set when a bounded search stopped before it read every
	// candidate: Next (or Prev) goes on from there.
	ScanEnd  int64
	ScanRows int
}

// keysetFrom parses the paging parameters: before (the next page), after
// (the previous page) and last=1 (the last page).
func keysetFrom(q url.Values, limit int) (driver.Keyset, error) {
	k := driver.Keyset{Limit: limit + 1, ScanRows: searchScanRows}
	var err error
	if k.BeforeID, err = parseID(q, "before"); err != nil {
		return k, err
	}
	if k.AfterID, err = parseID(q, "after"); err != nil {
		return k, err
	}
	k.Oldest = q.Get("last") == "1"
	return k, nil
}

// parseID parses an optional id (0 when absent).
func parseID(q url.Values, name string) (int64, error) {
	raw := strings.TrimSpace(q.Get(name))
	if raw == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%s=%q is not an id", name, raw)
	}
	return id, nil
}

// timeLayouts are the forms a time filter accepts, read as UTC: what a
// datetime-local input sends, a date, and RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// parseWhen parses an optional time filter (zero when absent).
func parseWhen(q url.Values, name string) (time.Time, error) {
	raw := strings.TrimSpace(q.Get(name))
	if raw == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, raw); err == nil {
		return t, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, raw, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s=%q is not a time: want 2006-01-02T15:04 (UTC) or RFC 3339", name, raw)
}

// newPager sets the links of a page read with k from rows that came
// back with one more than limit when there are more; it returns the rows
// to show. link builds a link from paging parameters.
func newPager[T any](p *driver.Page[T], k driver.Keyset, limit int, id func(T) int64, link func(string, int64) string) ([]T, *pager) {
	rows := p.Rows
	more := len(rows) > limit
	pg := &pager{ScanEnd: p.ScanEnd, ScanRows: k.ScanRows}
	if k.Ascending() {
		// Read from the oldest end: the extra row is the newest.
		if more {
			rows = rows[1:]
		}
		newer := more || p.ScanEnd != 0
		if newer {
			pg.First = link("", 0)
			if more {
				pg.Prev = link("after", id(rows[0]))
			} else {
				pg.Prev = link("after", p.ScanEnd)
			}
		}
		switch {
		case k.AfterID != 0 && len(rows) > 0:
			pg.Next, pg.Last = link("before", id(rows[len(rows)-1])), link("last", 1)
		case k.AfterID != 0:
			// Nothing newer than the cursor: back to the newest page.
			pg.First = link("", 0)
		}
		return rows, pg
	}
	if more {
		rows = rows[:limit]
	}
	if k.BeforeID != 0 {
		pg.First = link("", 0)
		if len(rows) > 0 {
			pg.Prev = link("after", id(rows[0]))
		} else {
			pg.Prev = link("after", k.BeforeID-1)
		}
	}
	switch {
	case more:
		pg.Next, pg.Last = link("before", id(rows[len(rows)-1])), link("last", 1)
	case p.ScanEnd != 0:
		pg.Next, pg.Last = link("before", p.ScanEnd), link("last", 1)
	}
	return rows, pg
}

// pageLink returns a function that builds links to pages of a list:
// path with the filter's parameters and one paging parameter.
func (s *server) pageLink(path string, filter url.Values) func(string, int64) string {
	return func(name string, v int64) string {
		q := url.Values{}
		for k, vs := range filter {
			if len(vs) > 0 && vs[0] != "" {
				q.Set(k, vs[0])
			}
		}
		if name != "" {
			q.Set(name, strconv.FormatInt(v, 10))
		}
		if len(q) == 0 {
			return s.opts.BasePath + path
		}
		return s.opts.BasePath + path + "?" + q.Encode()
	}
}

// store returns the store the client runs on, for the list pages.
func (s *server) store() driver.Store { return clientseam.StoreOf(s.c) }

// jobsData is what the jobs page shows.
type jobsData struct {
	ID                     int64
	Queue, Status, Handler string
	Workflow               int64
	CreatedFrom, CreatedTo string
	Payload                string
	// Internal shows the jobs of the engine's own handlers; ShowInternal
	// is the form's choice (when the filter leaves the default).
	Internal bool
	Jobs     []*queuetytype.Job
	Tabs     []statusTab
	All      int64
	Queues   []string
	Pager    *pager
	Bounded  bool // a filter no index serves: the page reads at most Pager.ScanRows rows
	Filter   url.Values
	Now      time.Time
	BulkMax  int
	CanBury  bool
	CanDel   bool
}

// TabLink is the link to the status tab st with the rest of the filter.
func (d *jobsData) TabLink(base, st string) string {
	return tabLink(base+"/jobs", d.Filter, st)
}

func tabLink(path string, filter url.Values, st string) string {
	q := url.Values{}
	for k, vs := range filter {
		if k != "status" && len(vs) > 0 && vs[0] != "" {
			q.Set(k, vs[0])
		}
	}
	if st != "" {
		q.Set("status", st)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// jobsFilter reads the jobs page's filter from the query string.
func jobsFilter(q url.Values) (*jobsData, driver.JobPageQuery, error) {
	d := &jobsData{Queue: strings.TrimSpace(q.Get("queue")), Status: q.Get("status"), Handler: strings.TrimSpace(q.Get("handler")),
		CreatedFrom: strings.TrimSpace(q.Get("created_from")), CreatedTo: strings.TrimSpace(q.Get("created_to")),
		Payload: q.Get("payload"), BulkMax: bulkMax}
	var jq driver.JobPageQuery
	if d.Status != "" && !slices.Contains(jobStatuses, queuetytype.JobStatus(d.Status)) {
		return nil, jq, fmt.Errorf("%w %q: want one of pending, processing, completed, failed, buried", errUnknownStatus, d.Status)
	}
	var err error
	if d.ID, err = parseID(q, "id"); err != nil {
		return nil, jq, err
	}
	if d.Workflow, err = parseID(q, "workflow"); err != nil {
		return nil, jq, err
	}
	from, err := parseWhen(q, "created_from")
	if err != nil {
		return nil, jq, err
	}
	to, err := parseWhen(q, "created_to")
	if err != nil {
		return nil, jq, err
	}
	if len(d.Payload) > 200 {
		return nil, jq, fmt.Errorf("the payload search has %d bytes, at most 200 are searched for", len(d.Payload))
	}
	// Internal jobs are hidden unless asked for, or the filter names
	// them: a job, a handler, a workflow's steps.
	switch q.Get("internal") {
	case "1":
		d.Internal = true
	case "":
		d.Internal = d.ID != 0 || d.Handler != "" || d.Workflow != 0
	}
	d.Filter = url.Values{}
	for _, k := range []string{"id", "queue", "status", "handler", "workflow", "created_from", "created_to", "payload", "internal"} {
		if v := q.Get(k); v != "" {
			d.Filter.Set(k, v)
		}
	}
	jq = driver.JobPageQuery{ID: d.ID, Queue: d.Queue, Status: queuetytype.JobStatus(d.Status), Handler: d.Handler, WorkflowID: d.Workflow,
		CreatedFrom: from, CreatedTo: to, PayloadContains: d.Payload, HideInternal: !d.Internal}
	d.Bounded = !from.IsZero() || !to.IsZero() || d.Payload != "" || jq.HideInternal
	return d, jq, nil
}

func (s *server) jobsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d, jq, err := jobsFilter(q)
	if err == nil {
		jq.Page, err = keysetFrom(q, jobsPerPage)
	}
	if errors.Is(err, errUnknownStatus) {
		s.fail(w, r, http.StatusBadRequest, "%s.", cleanError(err))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: %v.", err)
		return
	}
	d.Now, d.CanBury, d.CanDel = s.opts.Clock.Now(), s.ops.bury != nil, s.ops.del != nil
	ctx := r.Context()
	var page *driver.Page[*queuetytype.Job]
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { page, err = tx.JobPage(ctx, jq); return err }); err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Jobs, d.Pager = newPager(page, jq.Page, jobsPerPage, func(j *queuetytype.Job) int64 { return j.ID }, s.pageLink("/jobs", d.Filter))
	if err := s.jobTabs(ctx, d); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.page(w, r, "jobs", "Jobs", "jobs", true, d)
}

// jobTabs counts the jobs per status (of the queue filtered by), without
// the engine's own when the list hides them, and lists the queues.
func (s *server) jobTabs(ctx context.Context, d *jobsData) error {
	counts, err := s.c.Counts(ctx)
	if err != nil {
		return err
	}
	byStatus := map[queuetytype.JobStatus]int64{}
	queues := map[string]bool{}
	for _, c := range counts {
		queues[c.Queue] = true
		if d.Queue == "" || c.Queue == d.Queue {
			byStatus[c.Status] += c.Count
			d.All += c.Count
		}
	}
	if !d.Internal {
		// The list hides the engine's own jobs: so do its counts.
		var internal map[queuetytype.JobStatus]int64
		if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { internal, err = tx.JobInternalCounts(ctx, d.Queue); return err }); err != nil {
			return err
		}
		for st, n := range internal {
			n = min(n, byStatus[st]) // read a moment apart
			byStatus[st] -= n
			d.All -= n
		}
	}
	for _, st := range jobStatuses {
		d.Tabs = append(d.Tabs, statusTab{Status: string(st), Count: byStatus[st]})
	}
	for q := range queues {
		d.Queues = append(d.Queues, q)
	}
	sort.Strings(d.Queues)
	return nil
}

// workflowsData is what the workflows page shows.
type workflowsData struct {
	ID                     int64
	Status, Name           string
	StartedFrom, StartedTo string
	Limit                  int
	Workflows              []*queuetytype.Workflow
	Tabs                   []statusTab
	All                    int64
	Pager                  *pager
	Bounded                bool
	Filter                 url.Values
	BulkMax                int
}

// TabLink is the link to the status tab st with the rest of the filter.
func (d *workflowsData) TabLink(base, st string) string {
	return tabLink(base+"/workflows", d.Filter, st)
}

func (s *server) workflowsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := &workflowsData{Status: q.Get("status"), Name: strings.TrimSpace(q.Get("name")), Limit: workflowsPerPage,
		StartedFrom: strings.TrimSpace(q.Get("started_from")), StartedTo: strings.TrimSpace(q.Get("started_to")), BulkMax: bulkMax}
	if d.Status != "" && !slices.Contains(workflowStatuses, queuetytype.WorkflowStatus(d.Status)) {
		s.fail(w, r, http.StatusBadRequest, "Unknown workflow status %q.", d.Status)
		return
	}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			s.fail(w, r, http.StatusBadRequest, "limit=%q is not a positive number.", raw)
			return
		}
		d.Limit = min(n, maxWorkflowsPerPage)
	}
	wq := driver.WorkflowPageQuery{Status: queuetytype.WorkflowStatus(d.Status), Name: d.Name}
	var err error
	if d.ID, err = parseID(q, "id"); err == nil {
		if wq.StartedFrom, err = parseWhen(q, "started_from"); err == nil {
			if wq.StartedTo, err = parseWhen(q, "started_to"); err == nil {
				wq.Page, err = keysetFrom(q, d.Limit)
			}
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: %v.", err)
		return
	}
	wq.ID = d.ID
	d.Bounded = !wq.StartedFrom.IsZero() || !wq.StartedTo.IsZero()
	d.Filter = url.Values{}
	for _, k := range []string{"id", "status", "name", "started_from", "started_to", "limit"} {
		if v := q.Get(k); v != "" {
			d.Filter.Set(k, v)
		}
	}
	ctx := r.Context()
	var page *driver.Page[*queuetytype.Workflow]
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { page, err = tx.WorkflowPage(ctx, wq); return err }); err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Workflows, d.Pager = newPager(page, wq.Page, d.Limit, func(w *queuetytype.Workflow) int64 { return w.ID },
		s.pageLink("/workflows", d.Filter))
	counts, err := s.c.WorkflowCounts(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	for _, st := range workflowStatuses {
		d.Tabs = append(d.Tabs, statusTab{Status: string(st), Count: counts[st]})
		d.All += counts[st]
	}
	s.page(w, r, "workflows", "Workflows", "workflows", true, d)
}

// isInternal reports whether a handler is one of the engine's own.
func isInternal(handler string) bool { return strings.HasPrefix(handler, driver.InternalHandlerPrefix) }
