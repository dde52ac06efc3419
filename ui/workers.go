package ui

import (
	"context"
	"net/http"
	"slices"

	"github.com/queuety/queuety-go/queuetytype"
)

// workersPage lists the worker registry: live and gone workers with the
// jobs they run, linked to the job pages.
func (s *server) workersPage(w http.ResponseWriter, r *http.Request) {
	list, err := s.c.Workers(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	live := 0
	for _, wk := range list {
		if !wk.Gone {
			live++
		}
	}
	s.page(w, r, "workers", "Workers", "workers", true, map[string]any{"Workers": list, "Live": live,
		"Gone": len(list) - live, "GoneAfter": queuetytype.GoneAfter})
}

// holder returns the id of the live worker that reports running job j
// ("" when j is not processing or no live worker reports it).
func (s *server) holder(ctx context.Context, j *queuetytype.Job) (string, error) {
	if j.Status != queuetytype.JobProcessing {
		return "", nil
	}
	list, err := s.c.Workers(ctx)
	if err != nil {
		return "", err
	}
	for _, wk := range list {
		if !wk.Gone && slices.Contains(wk.Jobs, j.ID) {
			return wk.ID, nil
		}
	}
	return "", nil
}
