package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// done ends a successful action: a one-time message and a redirect (303)
// to the page the form came from, or to fallback.
func (s *server) done(w http.ResponseWriter, r *http.Request, fallback, format string, args ...any) {
	s.setFlash(w, r, fmt.Sprintf(format, args...))
	back := fallback
	if b := r.PostFormValue("back"); b != "" {
		back = safeNext(b)
	}
	http.Redirect(w, r, s.opts.BasePath+back, http.StatusSeeOther)
}

// queueAction pauses or resumes the queue named by the form field queue.
func (s *server) queueAction(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := strings.TrimSpace(r.PostFormValue("queue"))
		if q == "" {
			s.fail(w, r, http.StatusBadRequest, "No queue named: the form field queue is empty.")
			return
		}
		var err error
		if pause {
			err = s.c.PauseQueue(r.Context(), q)
		} else {
			err = s.c.ResumeQueue(r.Context(), q)
		}
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if pause {
			s.done(w, r, "/", "Queue %s paused: workers claim none of its jobs until it is resumed.", q)
			return
		}
		s.done(w, r, "/", "Queue %s resumed.", q)
	}
}

// retryBuriedAction retries the buried plain jobs of a queue and handler.
func (s *server) retryBuriedAction(w http.ResponseWriter, r *http.Request) {
	queue, handler := strings.TrimSpace(r.PostFormValue("queue")), strings.TrimSpace(r.PostFormValue("handler"))
	n, err := s.ops.retryBuried(r.Context(), queue, handler)
	if err != nil {
		s.failErr(w, r, fmt.Errorf("retried %d buried jobs, then: %w", n, err))
		return
	}
	s.done(w, r, "/jobs?status=buried", "Retried %d buried jobs (buried workflow steps are retried with their workflow).", n)
}

// jobAction retries, buries or deletes a job.
func (s *server) jobAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "job")
	if !ok {
		return
	}
	ctx := r.Context()
	var err error
	var msg string
	switch r.PathValue("action") {
	case "retry":
		err, msg = s.c.RetryJob(ctx, id), "Job %d retried: it is pending again with fresh attempts."
	case "bury":
		if s.ops.bury == nil {
			s.fail(w, r, http.StatusNotFound, "Burying jobs is not supported by this client.")
			return
		}
		err, msg = s.ops.bury(ctx, id, strings.TrimSpace(r.PostFormValue("message"))), "Job %d buried."
	case "delete":
		if s.ops.del == nil {
			s.fail(w, r, http.StatusNotFound, "Deleting jobs is not supported by this client.")
			return
		}
		if err = s.ops.del(ctx, id); err == nil {
			s.done(w, r, "/jobs", "Job %d deleted.", id)
			return
		}
	default:
		s.fail(w, r, http.StatusNotFound, "Unknown job action %q.", r.PathValue("action"))
		return
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, fmt.Sprintf("/jobs/%d", id), msg, id)
}

// workflowAction retries, cancels, pauses, resumes, approves or rejects
// a workflow.
func (s *server) workflowAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "workflow")
	if !ok {
		return
	}
	ctx := r.Context()
	var err error
	msg := ""
	switch action := r.PathValue("action"); action {
	case "retry":
		err, msg = s.c.RetryWorkflow(ctx, id), "Workflow %d restarted at the step that failed."
	case "cancel":
		err, msg = s.c.CancelWorkflow(ctx, id), "Workflow %d cancelled."
	case "pause":
		err, msg = s.c.PauseWorkflow(ctx, id), "Workflow %d paused: the step in flight finishes, the next one waits."
	case "resume":
		err, msg = s.c.ResumeWorkflow(ctx, id), "Workflow %d resumed."
	case "approve", "reject":
		payload, perr := formPayload(r)
		if perr != nil {
			s.fail(w, r, http.StatusBadRequest, "%s", cleanError(perr))
			return
		}
		var name string
		if action == "approve" {
			name, err = s.c.Approve(ctx, id, payload)
		} else {
			name, err = s.c.Reject(ctx, id, payload)
		}
		msg = "Workflow %d: sent signal " + strings.ReplaceAll(name, "%", "%%") + "."
	default:
		s.fail(w, r, http.StatusNotFound, "Unknown workflow action %q.", action)
		return
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, fmt.Sprintf("/workflows/%d", id), msg, id)
}

// maxSignalName bounds a signal name (Queuety's signal_name column).
const maxSignalName = 255

// signalAction sends a named signal with an optional JSON object payload.
func (s *server) signalAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "workflow")
	if !ok {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" || utf8.RuneCountInString(name) > maxSignalName {
		s.fail(w, r, http.StatusBadRequest, "A signal needs a name of 1 to %d characters.", maxSignalName)
		return
	}
	payload, err := formPayload(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%s", cleanError(err))
		return
	}
	if err := s.c.Signal(r.Context(), id, name, payload); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, fmt.Sprintf("/workflows/%d", id), "Signal %s sent to workflow %d.", name, id)
}

// formPayload parses the optional form field payload as a JSON object
// (nil when empty).
func formPayload(r *http.Request) (map[string]any, error) {
	raw := strings.TrimSpace(r.PostFormValue("payload"))
	if raw == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return nil, fmt.Errorf("the payload must be a JSON object such as {\"approved_by\": \"ops\"}: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the payload must be one JSON object; there is more text after it")
	}
	return v, nil
}

// scheduleAction enables, disables or runs a schedule.
func (s *server) scheduleAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "schedule")
	if !ok {
		return
	}
	ctx := r.Context()
	switch action := r.PathValue("action"); action {
	case "enable", "disable":
		if err := s.c.SetScheduleEnabled(ctx, id, action == "enable"); err != nil {
			s.failErr(w, r, err)
			return
		}
		s.done(w, r, "/schedules", "Schedule %d %sd.", id, action)
	case "run":
		ref, err := s.c.RunScheduleNow(ctx, id)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if ref == 0 {
			s.done(w, r, "/schedules", "Schedule %d did not fire: its overlap policy held it back while the previous run is active.", id)
			return
		}
		s.done(w, r, "/schedules", "Schedule %d fired now: it dispatched %d.", id, ref)
	default:
		s.fail(w, r, http.StatusNotFound, "Unknown schedule action %q.", action)
	}
}
