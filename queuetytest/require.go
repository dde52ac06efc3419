package queuetytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/queuetytype"
)

// Source is what the assertions read jobs and workflows from: a *Kit, or a
// *queuety.Client (of a kit, or of any store).
type Source interface {
	ListJobs(ctx context.Context, f queuetytype.JobFilter) ([]*queuetytype.Job, error)
	ListWorkflows(ctx context.Context, f queuetytype.WorkflowFilter) ([]*queuetytype.Workflow, error)
}

// maxList is the page size of the listings the assertions read.
const maxList = 1 << 20

// internalPrefix starts the names of the engine's own step jobs (a
// Sleep's timer, a signal wait, ...), which the assertions leave out unless
// asked for by name.
const internalPrefix = "__queuety_"

// listJobs lists every job matching f, oldest first, leaving out the
// engine's own step jobs unless f names one.
func listJobs(ctx context.Context, src Source, f queuetytype.JobFilter) ([]*queuetytype.Job, error) {
	jobs, err := listAllJobs(ctx, src, f)
	if err != nil || strings.HasPrefix(f.Handler, internalPrefix) {
		return jobs, err
	}
	return slices.DeleteFunc(jobs, func(j *queuetytype.Job) bool { return strings.HasPrefix(j.Handler, internalPrefix) }), nil
}

// listAllJobs lists every job matching f, oldest first.
func listAllJobs(ctx context.Context, src Source, f queuetytype.JobFilter) ([]*queuetytype.Job, error) {
	var out []*queuetytype.Job
	f.Limit = 1000
	for {
		page, err := src.ListJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < f.Limit {
			return out, nil
		}
		f.AfterID = page[len(page)-1].ID
	}
}

// listWorkflows lists every workflow matching f, oldest first.
func listWorkflows(ctx context.Context, src Source, f queuetytype.WorkflowFilter) ([]*queuetytype.Workflow, error) {
	f.Limit = maxList
	wfs, err := src.ListWorkflows(ctx, f)
	slices.Reverse(wfs) // listed newest first
	return wfs, err
}

// Dispatched returns the jobs of handler that pass the filters, oldest
// first (all handlers when handler is ""). Workflow step jobs and the
// engine's callback jobs (OnDeadline, OnCancel) count as well as plain
// jobs; the engine's own step jobs (the "__queuety_*" handlers of Sleep,
// WaitForSignal, ...) count only when handler names one. It fails t only
// when the store cannot be read. Times is ignored.
func Dispatched(t testing.TB, src Source, handler string, filters ...Filter) []*queuetytype.Job {
	t.Helper()
	jobs, _, ok := matchJobs(t, "Dispatched", src, handler, filters)
	if !ok {
		return nil
	}
	return jobs
}

// matchJobs lists the jobs of handler that pass filters, with the
// criteria; ok is false after it failed t.
func matchJobs(t testing.TB, fn string, src Source, handler string, filters []Filter) ([]*queuetytype.Job, *criteria, bool) {
	t.Helper()
	return matchRows(t, fn, "job", filters, func() ([]*queuetytype.Job, error) {
		return listJobs(context.Background(), src, queuetytype.JobFilter{Handler: handler})
	}, (*criteria).matchJob)
}

// matchRows lists the rows list reads that pass the criteria of filters
// (for rows of kind "job" or "workflow"), with the criteria; ok is false
// after it failed t.
func matchRows[T any](t testing.TB, fn, kind string, filters []Filter, list func() ([]T, error), match func(*criteria, T) bool) ([]T, *criteria, bool) {
	t.Helper()
	c := newCriteria(kind, filters)
	if len(c.errs) > 0 {
		t.Fatalf("queuetytest: %s: %s", fn, strings.Join(c.errs, "; "))
		return nil, nil, false
	}
	all, err := list()
	if err != nil {
		t.Fatalf("queuetytest: %s: %v", fn, err)
		return nil, nil, false
	}
	var out []T
	for _, r := range all {
		if match(c, r) {
			out = append(out, r)
		}
	}
	return out, c, true
}

// requireTimes fails t unless rows holds as many rows as c expects (one,
// or n with Times(n)), and returns the first of them (the zero T with
// Times(0) or after a failure). noun names want rows; readFn is the
// function that returns them all; listing lists every row dispatched.
func requireTimes[T any](t testing.TB, fn string, rows []T, c *criteria, noun func(n int) string, readFn string, listing func() string) T {
	t.Helper()
	var zero T
	want := max(c.times, 1)
	if c.times == 0 {
		want = 0
	}
	if len(rows) != want {
		hint := ""
		if len(rows) > want && c.times < 0 {
			hint = fmt.Sprintf(" (use Times(%d) to expect them all, or %s to read them)", len(rows), readFn)
		}
		t.Fatalf("queuetytest: %s: want %d %s%s, found %d%s\n%s",
			fn, want, noun(want), c.describe(), len(rows), hint, listing())
		return zero
	}
	if len(rows) == 0 {
		return zero
	}
	return rows[0]
}

// RequireDispatched fails t unless exactly one job of handler passes the
// filters (exactly n with Times(n)), and returns it (the oldest of them
// with Times; nil with Times(0)). The message lists every job dispatched.
// Any status counts unless Status says otherwise.
func RequireDispatched(t testing.TB, src Source, handler string, filters ...Filter) *queuetytype.Job {
	t.Helper()
	jobs, c, ok := matchJobs(t, "RequireDispatched", src, handler, filters)
	if !ok {
		return nil
	}
	return requireTimes(t, "RequireDispatched", jobs, c, func(n int) string { return jobNoun(handler, n) }, "Dispatched",
		func() string { return jobListing(t, src) })
}

// RequireNotDispatched fails t when any job of handler passes the filters
// (any job at all when handler is ""). The message lists the jobs that
// did.
func RequireNotDispatched(t testing.TB, src Source, handler string, filters ...Filter) {
	t.Helper()
	jobs, c, ok := matchJobs(t, "RequireNotDispatched", src, handler, filters)
	if !ok || len(jobs) == 0 {
		return
	}
	t.Fatalf("queuetytest: RequireNotDispatched: want no %s%s, found %d:\n%s",
		jobNoun(handler, 2), c.describe(), len(jobs), formatJobs(jobs))
}

// ExpectedJob is one job RequireDispatchedMany expects: its handler and
// filters (Times does not apply).
type ExpectedJob struct {
	Handler string
	Filters []Filter
}

// RequireDispatchedMany fails t unless the jobs of the handlers named in
// expected are exactly the expected jobs, in dispatch order, each passing
// its filters. Jobs of other handlers are ignored. It returns the jobs, in
// the order of expected.
func RequireDispatchedMany(t testing.TB, src Source, expected []ExpectedJob) []*queuetytype.Job {
	t.Helper()
	handlers := map[string]bool{}
	crits := make([]*criteria, len(expected))
	for i, e := range expected {
		handlers[e.Handler] = true
		crits[i] = newCriteria("job", e.Filters)
		if crits[i].times >= 0 {
			crits[i].errs = append(crits[i].errs, "Times does not apply to RequireDispatchedMany")
		}
		if len(crits[i].errs) > 0 {
			t.Fatalf("queuetytest: RequireDispatchedMany: expected job %d: %s", i, strings.Join(crits[i].errs, "; "))
			return nil
		}
	}
	all, err := listJobs(context.Background(), src, queuetytype.JobFilter{})
	if err != nil {
		t.Fatalf("queuetytest: RequireDispatchedMany: %v", err)
		return nil
	}
	var jobs []*queuetytype.Job
	for _, j := range all {
		if handlers[j.Handler] {
			jobs = append(jobs, j)
		}
	}
	var want strings.Builder
	for i, e := range expected {
		fmt.Fprintf(&want, "  %d: %s%s\n", i, e.Handler, crits[i].describe())
	}
	if len(jobs) != len(expected) {
		t.Fatalf("queuetytest: RequireDispatchedMany: want %d jobs of %s, found %d\nwant, in order:\n%sfound:\n%s",
			len(expected), handlerList(handlers), len(jobs), want.String(), formatJobs(jobs))
		return nil
	}
	for i, j := range jobs {
		if j.Handler != expected[i].Handler || !crits[i].matchJob(j) {
			t.Fatalf("queuetytest: RequireDispatchedMany: job %d of %d does not match: want %s%s\nwant, in order:\n%sfound:\n%s",
				i, len(jobs), expected[i].Handler, crits[i].describe(), want.String(), formatJobs(jobs))
			return nil
		}
	}
	return jobs
}

// DispatchedWorkflows returns the workflows named name that pass the
// filters, oldest first (all workflows when name is ""), child workflows
// included. It fails t only when the store cannot be read. Times is
// ignored.
func DispatchedWorkflows(t testing.TB, src Source, name string, filters ...Filter) []*queuetytype.Workflow {
	t.Helper()
	wfs, _, ok := matchWorkflows(t, "DispatchedWorkflows", src, name, filters)
	if !ok {
		return nil
	}
	return wfs
}

func matchWorkflows(t testing.TB, fn string, src Source, name string, filters []Filter) ([]*queuetytype.Workflow, *criteria, bool) {
	t.Helper()
	return matchRows(t, fn, "workflow", filters, func() ([]*queuetytype.Workflow, error) {
		return listWorkflows(context.Background(), src, queuetytype.WorkflowFilter{Name: name})
	}, (*criteria).matchWorkflow)
}

// RequireWorkflowDispatched fails t unless exactly one workflow named name
// passes the filters (exactly n with Times(n)), and returns it (the oldest
// of them with Times; nil with Times(0)). Queue, Priority, State (its
// public state as it is now) and Status apply; Delay does not. The message
// lists every workflow dispatched.
func RequireWorkflowDispatched(t testing.TB, src Source, name string, filters ...Filter) *queuetytype.Workflow {
	t.Helper()
	wfs, c, ok := matchWorkflows(t, "RequireWorkflowDispatched", src, name, filters)
	if !ok {
		return nil
	}
	return requireTimes(t, "RequireWorkflowDispatched", wfs, c, func(n int) string { return workflowNoun(name, n) }, "DispatchedWorkflows",
		func() string { return workflowListing(t, src) })
}

// RequireWorkflowNotDispatched fails t when any workflow named name passes
// the filters (any workflow at all when name is "").
func RequireWorkflowNotDispatched(t testing.TB, src Source, name string, filters ...Filter) {
	t.Helper()
	wfs, c, ok := matchWorkflows(t, "RequireWorkflowNotDispatched", src, name, filters)
	if !ok || len(wfs) == 0 {
		return
	}
	t.Fatalf("queuetytest: RequireWorkflowNotDispatched: want no %s%s, found %d:\n%s",
		workflowNoun(name, 2), c.describe(), len(wfs), formatWorkflows(wfs))
}

// RequireNothingDispatched fails t when any job or workflow was
// dispatched (Queuety's assert_nothing_pushed).
func RequireNothingDispatched(t testing.TB, src Source) {
	t.Helper()
	ctx := context.Background()
	jobs, err := listJobs(ctx, src, queuetytype.JobFilter{})
	if err != nil {
		t.Fatalf("queuetytest: RequireNothingDispatched: %v", err)
		return
	}
	wfs, err := listWorkflows(ctx, src, queuetytype.WorkflowFilter{})
	if err != nil {
		t.Fatalf("queuetytest: RequireNothingDispatched: %v", err)
		return
	}
	if len(jobs) == 0 && len(wfs) == 0 {
		return
	}
	var b strings.Builder
	if len(wfs) > 0 {
		fmt.Fprintf(&b, "workflows dispatched (%d):\n%s", len(wfs), formatWorkflows(wfs))
	}
	if len(jobs) > 0 {
		fmt.Fprintf(&b, "jobs dispatched (%d):\n%s", len(jobs), formatJobs(jobs))
	}
	t.Fatalf("queuetytest: RequireNothingDispatched: want nothing dispatched, found %d jobs and %d workflows\n%s",
		len(jobs), len(wfs), b.String())
}
