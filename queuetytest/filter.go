package queuetytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// Filter narrows which jobs or workflows an assertion counts. Filters
// combine: a row must pass all of them.
type Filter func(*criteria)

// criteria is a list of Filters applied.
type criteria struct {
	queue    *string
	priority *queuetytype.Priority
	delay    *time.Duration
	payload  map[string]any // decoded with UseNumber
	status   string
	statusOf string // "job" or "workflow"
	times    int    // -1: not given
	desc     []string
	errs     []string // filters that could not be applied
}

// Queue counts only jobs (or workflows) on queue name.
func Queue(name string) Filter {
	return func(c *criteria) {
		c.queue = &name
		c.desc = append(c.desc, fmt.Sprintf("queue %q", name))
	}
}

// Priority counts only jobs (or workflows) with priority p.
func Priority(p queuetytype.Priority) Filter {
	return func(c *criteria) {
		c.priority = &p
		c.desc = append(c.desc, "priority "+p.String())
	}
}

// Delay counts only jobs dispatched with delay d: due d after they were
// dispatched, to the second (the store keeps whole seconds; a second of
// slack covers a fake clock that is not on a whole second). It does not
// apply to workflows.
func Delay(d time.Duration) Filter {
	return func(c *criteria) {
		c.delay = &d
		c.desc = append(c.desc, "delay "+d.String())
	}
}

// Payload counts only jobs whose payload holds subset (a State, a map or a
// struct that encodes as a JSON object), or, for workflows, whose public
// state does. Values are compared as JSON: objects, at any depth, match
// when they hold the expected keys with matching values; arrays match
// element by element; numbers match by value (1 matches 1.0).
func Payload(subset any) Filter { return subsetFilter("Payload", "payload", subset) }

// State is Payload under the name that reads better for workflows: it
// counts only workflows whose public state holds subset (or jobs whose
// payload does).
func State(subset any) Filter { return subsetFilter("State", "state", subset) }

// subsetFilter is Payload or State, named fn in messages and label in
// descriptions.
func subsetFilter(fn, label string, subset any) Filter {
	return func(c *criteria) {
		b, err := json.Marshal(subset)
		var m map[string]any
		if err == nil {
			m, err = decodeObject(b)
		}
		if err != nil || m == nil {
			c.errs = append(c.errs, fmt.Sprintf("%s(%T) does not encode as a JSON object", fn, subset))
			return
		}
		c.payload = m
		c.desc = append(c.desc, label+" ⊇ "+string(b))
	}
}

// Status counts only jobs with a queuety.JobStatus, or workflows with a
// queuety.WorkflowStatus. By default any status counts: a job that has
// already run was dispatched all the same.
func Status[S queuetytype.JobStatus | queuetytype.WorkflowStatus](s S) Filter {
	return func(c *criteria) {
		c.status = string(s)
		c.statusOf = "job"
		if _, ok := any(s).(queuetytype.WorkflowStatus); ok {
			c.statusOf = "workflow"
		}
		c.desc = append(c.desc, "status "+string(s))
	}
}

// Times makes an assertion require exactly n matching jobs (or workflows)
// instead of exactly one.
func Times(n int) Filter {
	return func(c *criteria) {
		c.times = n
		if n < 0 {
			c.errs = append(c.errs, fmt.Sprintf("Times(%d): n must not be negative", n))
		}
	}
}

// newCriteria applies filters for rows of kind ("job" or "workflow").
func newCriteria(kind string, filters []Filter) *criteria {
	c := &criteria{times: -1}
	for _, f := range filters {
		if f != nil {
			f(c)
		}
	}
	if c.statusOf != "" && c.statusOf != kind {
		c.errs = append(c.errs, fmt.Sprintf("Status(%s) is a %s status; %ss have %s statuses", c.status, c.statusOf, kind, kind))
	}
	if kind == "workflow" && c.delay != nil {
		c.errs = append(c.errs, "Delay applies to jobs, not workflows")
	}
	return c
}

// describe lists the filters, for messages ("" when there are none).
func (c *criteria) describe() string {
	if len(c.desc) == 0 {
		return ""
	}
	return " with " + strings.Join(c.desc, ", ")
}

// matchJob reports whether job j passes the filters.
func (c *criteria) matchJob(j *queuetytype.Job) bool {
	switch {
	case c.queue != nil && j.Queue != *c.queue,
		c.priority != nil && j.Priority != *c.priority,
		c.status != "" && string(j.Status) != c.status:
		return false
	}
	if c.delay != nil {
		want := c.delay.Truncate(time.Second)
		if want < *c.delay {
			want += time.Second
		}
		if got := jobDelay(j); got < want || got > want+time.Second {
			return false
		}
	}
	return c.payload == nil || matchPayload(c.payload, j.Payload)
}

// matchWorkflow reports whether workflow wf passes the filters.
func (c *criteria) matchWorkflow(wf *queuetytype.Workflow) bool {
	if c.status != "" && string(wf.Status) != c.status {
		return false
	}
	if c.queue == nil && c.priority == nil && c.payload == nil {
		return true
	}
	state, err := decodeObject(wf.State)
	if err != nil {
		return false
	}
	queue, priority := workflowQueue(state)
	switch {
	case c.queue != nil && queue != *c.queue,
		c.priority != nil && priority != *c.priority:
		return false
	}
	return c.payload == nil || subsetOf(c.payload, publicOf(state))
}

// jobDelay is how long after its dispatch a job was due.
func jobDelay(j *queuetytype.Job) time.Duration { return j.AvailableAt.Sub(j.CreatedAt) }

// workflowQueue reads a workflow's queue and priority from its private
// state keys (_queue, _priority), with Queuety's defaults.
func workflowQueue(state map[string]any) (string, queuetytype.Priority) {
	q, _ := state["_queue"].(string)
	if q == "" {
		q = queuetytype.DefaultQueue
	}
	p := queuetytype.PriorityLow
	if n, ok := state["_priority"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && queuetytype.Priority(v).Valid() {
			p = queuetytype.Priority(v)
		}
	}
	return q, p
}

// decodeObject decodes a JSON object with numbers as json.Number. A JSON
// array (PHP's encoding of an empty object) decodes as an empty object.
func decodeObject(b []byte) (map[string]any, error) {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "[]" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// publicOf drops a state's or payload's private keys ("_..." and the
// engine's "__queuety_..." keys).
func publicOf(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, "_") {
			out[k] = v
		}
	}
	return out
}

// matchPayload reports whether a stored payload holds want.
func matchPayload(want map[string]any, payload []byte) bool {
	got, err := decodeObject(payload)
	return err == nil && subsetOf(want, got)
}

// subsetOf reports whether got holds every key of want with a matching
// value (see Payload).
func subsetOf(want, got map[string]any) bool {
	for k, wv := range want {
		gv, ok := got[k]
		if !ok || !matchValue(wv, gv) {
			return false
		}
	}
	return true
}

func matchValue(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if a, isArr := got.([]any); isArr && len(a) == 0 {
				return len(w) == 0 // PHP encodes an empty object as []
			}
			return false
		}
		return subsetOf(w, g)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matchValue(w[i], g[i]) {
				return false
			}
		}
		return true
	case json.Number:
		g, ok := got.(json.Number)
		return ok && sameNumber(w, g)
	default:
		return want == got
	}
}

// sameNumber compares two JSON numbers by value: exactly when both are
// integers, as float64 otherwise.
func sameNumber(a, b json.Number) bool {
	if x, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	x, errA := a.Float64()
	y, errB := b.Float64()
	return errA == nil && errB == nil && x == y
}
