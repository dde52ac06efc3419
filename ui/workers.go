package ui

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// workersShown caps the rows of the worker registry a page reads. The
// registry holds one row per worker process, live or gone for less than
// an hour (then pruned), so it is small: a fleet of processes, not a
// history. It has no id order to page by, so the page shows the most
// recently renewed ones (the live first) and says how many it left out.
const workersShown = 200

// workers reads at most workersShown rows of the worker registry, the
// most recently renewed first, with Gone decided on the client's clock,
// and how many rows the registry has.
func (s *server) workers(ctx context.Context) ([]*queuetytype.Worker, int64, error) {
	var list []*queuetytype.Worker
	var total int64
	err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { list, total, err = tx.WorkerPage(ctx, workersShown); return err })
	if err != nil {
		return nil, 0, err
	}
	now := clientseam.Clock(s.c).Now()
	for _, w := range list {
		w.Gone = now.Sub(w.LastHeartbeat) > time.Duration(queuetytype.GoneAfter)*w.HeartbeatInterval
	}
	return list, total, nil
}

// workersPage lists the worker registry: live and gone workers with the
// jobs they run, linked to the job pages.
func (s *server) workersPage(w http.ResponseWriter, r *http.Request) {
	list, total, err := s.workers(r.Context())
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
		"Gone": len(list) - live, "GoneAfter": queuetytype.GoneAfter, "Total": total, "Shown": len(list), "More": total > int64(len(list))})
}

// holder returns the id of the live worker that reports running job j
// ("" when j is not processing or no live worker among the workersShown
// most recently renewed reports it).
func (s *server) holder(ctx context.Context, j *queuetytype.Job) (string, error) {
	if j.Status != queuetytype.JobProcessing {
		return "", nil
	}
	list, _, err := s.workers(ctx)
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
