package ui

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// Page sizes of the batch pages.
const (
	batchesPerPage = 50
	batchJobsPage  = 50
	// batchFailedShown caps the failed job ids a batch's page links.
	batchFailedShown = 100
)

// batchesData is what the batches page shows.
type batchesData struct {
	Batches []*queuety.Batch
	Before  int64 // this page's ?before= (0: the newest)
	Next    int64 // the ?before= of the next page (0: none)
}

func (s *server) batchesPage(w http.ResponseWriter, r *http.Request) {
	before, err := queryID(r, "before")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad page: %v.", err)
		return
	}
	list, err := s.c.ListBatches(r.Context(), queuetytype.BatchFilter{Limit: batchesPerPage + 1, BeforeID: before})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d := &batchesData{Before: before}
	if len(list) > batchesPerPage {
		list = list[:batchesPerPage]
		d.Next = list[len(list)-1].ID
	}
	d.Batches = list
	s.page(w, r, "batches", "Batches", "batches", true, d)
}

// batchData is what a batch's page shows.
type batchData struct {
	B         *queuety.Batch
	Events    []*queuetytype.BatchEvent
	Counts    []queuetytype.QueueCount
	Jobs      []*queuetytype.Job
	After     int64 // this page of jobs starts after this id
	Next      int64 // the next page's ?after= (0: none)
	Failed    []int64
	FailedCut int // failed job ids not linked
	CanCancel bool
	Callbacks []batchCallback
}

// batchCallback is one callback of a batch's options, with what the Go
// engine recorded of it.
type batchCallback struct {
	Event, Handler string
	Ran            *queuetytype.BatchEvent
}

func (s *server) batchPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "batch")
	if !ok {
		return
	}
	after, err := queryID(r, "after")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad page: %v.", err)
		return
	}
	ctx := r.Context()
	b, err := s.c.Batch(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d := &batchData{B: b, After: after, CanCancel: !b.Cancelled() && !b.Finished()}
	if d.Events, err = s.c.BatchEvents(ctx, id); err != nil {
		s.failErr(w, r, err)
		return
	}
	if d.Counts, err = s.c.BatchJobCounts(ctx, id); err != nil {
		s.failErr(w, r, err)
		return
	}
	sort.Slice(d.Counts, func(i, j int) bool {
		if d.Counts[i].Queue != d.Counts[j].Queue {
			return d.Counts[i].Queue < d.Counts[j].Queue
		}
		return d.Counts[i].Status < d.Counts[j].Status
	})
	jobs, err := s.c.ListJobs(ctx, queuetytype.JobFilter{BatchID: id, AfterID: after, Limit: batchJobsPage + 1, WithoutPayload: true})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if len(jobs) > batchJobsPage {
		jobs = jobs[:batchJobsPage]
		d.Next = jobs[len(jobs)-1].ID
	}
	d.Jobs = jobs
	d.Failed = b.FailedJobIDs
	if len(d.Failed) > batchFailedShown {
		d.Failed, d.FailedCut = d.Failed[:batchFailedShown], len(d.Failed)-batchFailedShown
	}
	for _, cb := range []batchCallback{{Event: "then", Handler: b.Options.Then}, {Event: "catch", Handler: b.Options.Catch},
		{Event: "finally", Handler: b.Options.Finally}} {
		for _, e := range d.Events {
			if e.Event == cb.Event || (cb.Event == "finally" && e.Event == "cancel") {
				cb.Ran = e
			}
		}
		d.Callbacks = append(d.Callbacks, cb)
	}
	s.page(w, r, "batch", fmt.Sprintf("Batch %d", id), "batches", true, d)
}

// batchCancelAction cancels a batch (CancelBatch): its finally callback
// is enqueued and its pending jobs still run.
func (s *server) batchCancelAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "batch")
	if !ok {
		return
	}
	if err := s.c.CancelBatch(r.Context(), id); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, fmt.Sprintf("/batches/%d", id), "Batch %d cancelled: its finally callback is enqueued; its pending jobs still run.", id)
}
