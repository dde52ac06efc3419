package driver

import (
	"context"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// InternalHandlerPrefix begins the names of the engine's own handlers
// (the jobs of Sleep, ForEach, state machine actions and the like), which
// lists can leave out (JobPageQuery.HideInternal).
const InternalHandlerPrefix = "__queuety_"

// Bounds of a list page.
const (
	// PageRowsDefault is Keyset.Limit when it is not set.
	PageRowsDefault = 50
	// PageRowsMax bounds Keyset.Limit.
	PageRowsMax = 1000
	// ScanRowsDefault is Keyset.ScanRows when it is not set.
	ScanRowsDefault = 10000
	// ScanRowsMax bounds Keyset.ScanRows.
	ScanRowsMax = 100000
)

// Keyset selects one page of a list that runs newest first (by id). The
// first page has no cursor; the next page (older rows) has BeforeID, the
// last row shown; the previous page (newer rows) has AfterID, the first
// row shown; the last page (the oldest rows) has Oldest. Every page is
// read from its end of the id index, so none costs more than the rows it
// holds, and the rows always come back newest first.
type Keyset struct {
	BeforeID int64 // only rows with a smaller id (the next page)
	AfterID  int64 // only rows with a larger id, the oldest of them (the previous page)
	Oldest   bool  // the oldest rows (the last page); implied by AfterID
	Limit    int   // at most this many rows (default PageRowsDefault, at most PageRowsMax)
	// ScanRows bounds a filter that no index serves (a time range, a
	// payload substring, HideInternal): such a page reads at most this
	// many candidate rows from its end of the list, the ones the indexed
	// filters select, and returns those of them that match (default
	// ScanRowsDefault, at most ScanRowsMax). Page.ScanEnd says where the
	// scan stopped, for the next page to go on from.
	ScanRows int
}

// Ascending reports whether the page is read from the oldest end (the
// previous or the last page); the store reverses the rows it reads so.
func (k Keyset) Ascending() bool { return k.AfterID != 0 || k.Oldest }

// Bounds returns the limit and the scan bound with their defaults and
// maxima applied.
func (k Keyset) Bounds() (limit, scan int) {
	limit, scan = k.Limit, k.ScanRows
	if limit <= 0 {
		limit = PageRowsDefault
	}
	if scan <= 0 {
		scan = ScanRowsDefault
	}
	return min(limit, PageRowsMax), min(scan, ScanRowsMax)
}

// JobPageQuery selects a page of jobs for an operator's list. Empty
// fields do not filter. ID, Queue, Status, Handler and WorkflowID are
// served by indexes; the time range, PayloadContains and HideInternal are
// checked on at most Keyset.ScanRows candidate rows.
type JobPageQuery struct {
	ID         int64     // only this job
	Queue      string    // only jobs on this queue
	Status     JobStatus // only jobs with this status
	Handler    string    // only jobs of this handler
	WorkflowID int64     // only the step jobs of this workflow
	// CreatedFrom and CreatedTo bound created_at: From <= created_at < To.
	CreatedFrom, CreatedTo time.Time
	// PayloadContains keeps jobs whose payload text contains it, or its
	// JSON-escaped form as PHP's json_encode writes it (\uXXXX for a
	// character beyond ASCII, \/ for a slash), without regard to the
	// case of ASCII letters.
	PayloadContains string
	// HideInternal leaves out the jobs of the engine's own handlers
	// (InternalHandlerPrefix).
	HideInternal bool
	Page         Keyset
}

// WorkflowPageQuery selects a page of workflows for an operator's list.
// Empty fields do not filter. ID, Status and Name are served by indexes;
// the time range is checked on at most Keyset.ScanRows candidate rows.
type WorkflowPageQuery struct {
	ID     int64          // only this workflow
	Status WorkflowStatus // only workflows with this status
	Name   string         // only workflows with this name
	// StartedFrom and StartedTo bound started_at: From <= started_at < To.
	StartedFrom, StartedTo time.Time
	Page                   Keyset
}

// MachinePageQuery selects a page of state machines for an operator's
// list. Empty fields do not filter; both are served by indexes.
type MachinePageQuery struct {
	Status queuetytype.MachineStatus // only machines with this status
	Name   string                    // only machines with this name
	Page   Keyset
}

// Page is one page of a list, newest first.
type Page[T any] struct {
	Rows []T
	// ScanEnd is set when a filter no index serves stopped at
	// Keyset.ScanRows candidates: the id of the last candidate read (the
	// oldest one, or the newest for a page read from the oldest end).
	// Rows beyond it were not looked at; the next page (or the previous
	// one) goes on from it.
	ScanEnd int64
}

// ListPageTx reads the pages of the operator's lists (list pages that
// run newest first, with bounded filters).
type ListPageTx interface {
	// JobPage reads a page of jobs without their payload and heartbeat
	// data.
	JobPage(ctx context.Context, q JobPageQuery) (*Page[*Job], error)
	// WorkflowPage reads a page of workflows without their state.
	WorkflowPage(ctx context.Context, q WorkflowPageQuery) (*Page[*Workflow], error)
	// MachinePage reads a page of state machines without their state
	// (with their definition, which says what events they accept).
	MachinePage(ctx context.Context, q MachinePageQuery) (*Page[*Machine], error)
	// SchedulePage reads a page of schedules, newest first.
	SchedulePage(ctx context.Context, k Keyset) (*Page[*Schedule], error)
	// ScheduleSummary counts the enabled and disabled schedules and finds
	// the earliest next run of the enabled ones, in one grouped read.
	ScheduleSummary(ctx context.Context) (*ScheduleSummary, error)
	// WebhookPage reads a page of webhooks, newest first, with Signed set
	// and without their secrets.
	WebhookPage(ctx context.Context, k Keyset) (*Page[*Webhook], error)
	// WorkerPage reads at most limit rows of the worker registry, the
	// most recently renewed first (Gone false: the caller decides it),
	// and counts every row.
	WorkerPage(ctx context.Context, limit int) ([]*queuetytype.Worker, int64, error)
	// JobInternalCounts counts the jobs of the engine's own handlers
	// (InternalHandlerPrefix) by status, of one queue ("" for all), through
	// the handler index: a range of it, however many other jobs there are.
	JobInternalCounts(ctx context.Context, queue string) (map[JobStatus]int64, error)
}

// ScheduleSummary is what ListPageTx.ScheduleSummary reads.
type ScheduleSummary struct {
	Enabled, Disabled int64
	// NextRun is the earliest next run of an enabled schedule (zero
	// when there is none).
	NextRun time.Time
}
