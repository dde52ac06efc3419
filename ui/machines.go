package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Bounds of the machine pages.
const (
	machinesPerPage   = 100
	machineEventsPage = 200
	maxMachineEvent   = 191 // the event_name column
)

// machineStatuses are the statuses the machines page filters by.
var machineStatuses = []queuetytype.MachineStatus{queuetytype.MachineRunning, queuetytype.MachineWaitingEvent,
	queuetytype.MachineCompleted, queuetytype.MachineFailed, queuetytype.MachinePaused, queuetytype.MachineCancelled}

func (s *server) machinesPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := queuetytype.MachineStatus(q.Get("status"))
	if status != "" && !status.Valid() {
		s.fail(w, r, http.StatusBadRequest, "Unknown machine status %q: want one of running, waiting_event, completed, failed, paused, cancelled.", status)
		return
	}
	k, err := keysetFrom(q, machinesPerPage)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: %v.", err)
		return
	}
	mq := driver.MachinePageQuery{Status: status, Page: k}
	ctx := r.Context()
	var page *driver.Page[*driver.Machine]
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { page, err = tx.MachinePage(ctx, mq); return err }); err != nil {
		s.failErr(w, r, err)
		return
	}
	filter := url.Values{}
	if status != "" {
		filter.Set("status", string(status))
	}
	rows, pg := newPager(page, k, machinesPerPage, func(m *driver.Machine) int64 { return m.ID }, s.pageLink("/machines", filter))
	list := make([]*queuetytype.MachineSummary, len(rows))
	for i, m := range rows {
		list[i] = machine.Summarize(m)
	}
	s.page(w, r, "machines", "State machines", "machines", true, map[string]any{"Machines": list, "Status": string(status),
		"Statuses": machineStatuses, "Now": s.opts.Clock.Now(), "Pager": pg})
}

// machineEventRow is one timeline row of the machine page.
type machineEventRow struct {
	*queuetytype.MachineEvent
	Error string
	Time  time.Time
}

func (s *server) machinePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "machine")
	if !ok {
		return
	}
	ctx := r.Context()
	st, err := s.c.MachineStatus(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	evs, err := s.c.MachineTimeline(ctx, id, machineEventsPage, 0)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rows := make([]machineEventRow, 0, len(evs))
	for _, ev := range evs {
		row := machineEventRow{MachineEvent: ev, Time: ev.CreatedAt}
		if len(ev.Error) > 0 {
			row.Error = truncateRunes(string(ev.Error), jobText)
		}
		rows = append(rows, row)
	}
	s.page(w, r, "machine", fmt.Sprintf("State machine %d", id), "machines", true, map[string]any{"Machine": st,
		"State": indentJSON(st.State), "Events": rows, "More": len(evs) == machineEventsPage, "Now": s.opts.Clock.Now(),
		"CanSend": st.Status == queuetytype.MachineWaitingEvent && len(st.AvailableEvents) > 0})
}

// machineEventAction sends an event from the machine page's form.
func (s *server) machineEventAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "machine")
	if !ok {
		return
	}
	event := strings.TrimSpace(r.PostFormValue("event"))
	if event == "" || utf8.RuneCountInString(event) > maxMachineEvent {
		s.fail(w, r, http.StatusBadRequest, "An event needs a name of 1 to %d characters.", maxMachineEvent)
		return
	}
	payload, err := formPayload(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%s", cleanError(err))
		return
	}
	if err := s.c.MachineEvent(r.Context(), id, event, payload); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, fmt.Sprintf("/machines/%d", id), "Event %s sent to state machine %d.", event, id)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// indentJSON is v as indented JSON text.
func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
