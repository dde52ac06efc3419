package ui

import (
	"net/http"

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
