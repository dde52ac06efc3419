package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// bulkMax bounds the jobs or workflows one bulk action acts on.
const bulkMax = 100

// bulkRefusals bounds the refusals a bulk action's message lists.
const bulkRefusals = 5

// bulkKind is what a bulk action acts on: its actions, each a verb for
// the messages and the operation on one id.
type bulkKind struct {
	noun, path string // "job", "/jobs"
	actions    map[string]bulkVerb
}

// bulkVerb is one bulk action.
type bulkVerb struct {
	Label, Past string // "Retry", "Retried"
	Class       string
	Warning     string
	do          func(ctx context.Context, id int64) error
}

// bulkData is what the confirmation page shows.
type bulkData struct {
	Noun, Action, Path, Back string
	Verb                     bulkVerb
	IDs                      []int64
}

// jobBulk are the jobs list's bulk actions.
func (s *server) jobBulk() bulkKind {
	k := bulkKind{noun: "job", path: "/jobs", actions: map[string]bulkVerb{
		"retry": {Label: "Retry", Past: "Retried", Class: "primary",
			Warning: "Each buried or failed plain job is pending again with fresh attempts; workflow steps are refused (retry their workflow).",
			do:      s.c.RetryJob},
	}}
	if s.ops.bury != nil {
		k.actions["bury"] = bulkVerb{Label: "Bury", Past: "Buried", Class: "warn",
			Warning: "The jobs will not run again unless retried.",
			do:      func(ctx context.Context, id int64) error { return s.ops.bury(ctx, id, "Buried by an operator") }}
	}
	if s.ops.del != nil {
		k.actions["delete"] = bulkVerb{Label: "Delete", Past: "Deleted", Class: "danger",
			Warning: "Their rows are removed for good.", do: s.ops.del}
	}
	return k
}

// workflowBulk are the workflows list's bulk actions.
func (s *server) workflowBulk() bulkKind {
	return bulkKind{noun: "workflow", path: "/workflows", actions: map[string]bulkVerb{
		"cancel": {Label: "Cancel", Past: "Cancelled", Class: "danger",
			Warning: "Their open jobs are buried and their cancel callbacks run.", do: s.c.CancelWorkflow},
		"retry": {Label: "Retry", Past: "Retried", Class: "primary",
			Warning: "Each failed workflow restarts at the step that failed.", do: s.c.RetryWorkflow},
	}}
}

// bulkAction serves POST <path>/bulk: without confirm=1 it shows what the
// action would do to how many rows ("Retry 12 jobs?") with a form that
// confirms it; with confirm=1 it runs the action on each id, through the
// same operations as the buttons of a single row, and reports how many
// it changed and why any were refused.
func (s *server) bulkAction(kind func(*server) bulkKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k := kind(s)
		name := r.PostFormValue("action")
		verb, ok := k.actions[name]
		if !ok {
			s.fail(w, r, http.StatusBadRequest, "Unknown bulk action %q.", name)
			return
		}
		ids, err := formIDs(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, "%s", cleanError(err))
			return
		}
		back := k.path
		if b := r.PostFormValue("back"); b != "" {
			back = safeNext(b)
		}
		if r.PostFormValue("confirm") != "1" {
			d := &bulkData{Noun: k.noun, Action: name, Path: k.path + "/bulk", Back: back, Verb: verb, IDs: ids}
			s.page(w, r, "bulk", fmt.Sprintf("%s %d %s%s?", verb.Label, len(ids), k.noun, plural(len(ids))), strings.TrimPrefix(k.path, "/"), false, d)
			return
		}
		var refused []string
		changed := 0
		for _, id := range ids {
			if err := verb.do(r.Context(), id); err != nil {
				if errStatus(err) == http.StatusInternalServerError {
					s.failErr(w, r, fmt.Errorf("%s %d of %d %ss, then %s %d: %w", strings.ToLower(verb.Past), changed, len(ids), k.noun, k.noun, id, err))
					return
				}
				if len(refused) < bulkRefusals {
					refused = append(refused, fmt.Sprintf("%s %d: %s", k.noun, id, cleanError(err)))
				}
				continue
			}
			changed++
		}
		msg := fmt.Sprintf("%s %d of %d %ss.", verb.Past, changed, len(ids), k.noun)
		if changed == len(ids) {
			msg = fmt.Sprintf("%s %d %s%s.", verb.Past, changed, k.noun, plural(changed))
		} else {
			msg += fmt.Sprintf(" %d refused: %s", len(ids)-changed, strings.Join(refused, "; "))
			if len(ids)-changed > len(refused) {
				msg += "; …"
			}
			msg = "!" + msg // shown as a failure
		}
		s.setFlash(w, r, msg)
		http.Redirect(w, r, s.opts.BasePath+back, http.StatusSeeOther)
	}
}

// formIDs parses the form's id fields: distinct positive ids, at least
// one and at most bulkMax.
func formIDs(r *http.Request) ([]int64, error) {
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("bad form: %w", err)
	}
	raw := r.PostForm["id"]
	if len(raw) == 0 {
		return nil, errors.New("nothing selected: tick the rows to act on")
	}
	if len(raw) > bulkMax {
		return nil, fmt.Errorf("%d rows selected: a bulk action takes at most %d", len(raw), bulkMax)
	}
	ids := make([]int64, 0, len(raw))
	for _, v := range raw {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%q is not an id", v)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
