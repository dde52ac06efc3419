package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// parseID reads a positive row id.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id <= 0 {
		return 0, Usagef("%s id %q: want a positive integer", what, s)
	}
	return id, nil
}

// onID makes the RunFunc of a command whose one argument is the id of a
// what (job, workflow, schedule): it parses the id, opens the store and
// calls run.
func onID(what string, run func(e *Env, c *queuety.Client, id int64) error) RunFunc {
	return onCheckedID(what, nil, run)
}

// onCheckedID is onID for a command with flags to check: check (if not
// nil) runs after the id is parsed and before the store is opened, so a
// bad flag is a usage error whatever the store.
func onCheckedID(what string, check func() error, run func(e *Env, c *queuety.Client, id int64) error) RunFunc {
	return func(e *Env, args []string) error {
		id, err := parseID(what, args[0])
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		return withStore(e, func(c *queuety.Client) error { return run(e, c, id) })
	}
}

// onStore makes the RunFunc of a command that only needs the store: it
// opens the store, calls run and closes the store.
func onStore(run func(e *Env, c *queuety.Client) error) RunFunc {
	return func(e *Env, _ []string) error {
		return withStore(e, func(c *queuety.Client) error { return run(e, c) })
	}
}

// withStore opens the store, calls run and closes the store. Commands
// that check their arguments and flags first call it once those are
// good, so that a usage error is reported without touching the store.
func withStore(e *Env, run func(c *queuety.Client) error) error {
	c, err := e.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	return run(c)
}

// handlerArgs reads the HANDLER [JSON] arguments of dispatch and schedule
// add.
func handlerArgs(args []string) (handler string, payload queuety.State, err error) {
	handler = args[0]
	if strings.TrimSpace(handler) == "" {
		return "", nil, Usagef("HANDLER is empty")
	}
	payload, err = payloadArg(args, 1)
	return handler, payload, err
}

// payloadArg reads the optional JSON payload argument args[i]: a JSON
// object, {} when absent.
func payloadArg(args []string, i int) (queuety.State, error) {
	if len(args) <= i {
		return queuety.State{}, nil
	}
	return parseJSONObject("the JSON payload", args[i])
}

// parseDuration reads a Go duration ("90s", "1h30m") or a number of days
// ("7d").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && n <= 1e9 {
		return time.Duration(n) * time.Second, nil // bare seconds, as wp queuety's --delay=30
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err == nil && n >= -1e5 && n <= 1e5 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want seconds or e.g. 30s, 5m, 2h, 7d)", s)
	}
	return d, nil
}

// durationValue is a flag.Value for parseDuration.
type durationValue time.Duration

// String implements flag.Value.
func (d *durationValue) String() string {
	if time.Duration(*d) == 0 {
		return "0s"
	}
	return time.Duration(*d).String()
}

// Set implements flag.Value.
func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// durationFlag declares a duration flag that also accepts days ("7d").
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	fs.Var((*durationValue)(p), name, usage)
	return p
}

// parseJSONObject reads a command-line JSON argument that must be an
// object. Numbers keep their integer or float form.
func parseJSONObject(what, s string) (queuety.State, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Usagef("%s is not valid JSON: %s", what, jsonProblem(s, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Usagef("%s is not valid JSON: unexpected data after the object at offset %d", what, dec.InputOffset())
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, Usagef("%s must be a JSON object like '{\"key\": \"value\"}', got %s", what, jsonKind(v))
	}
	return queuety.State(obj), nil
}

// jsonProblem describes a decoding error with its position.
func jsonProblem(s string, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at offset %d", se.Error(), se.Offset)
	}
	if errors.Is(err, io.EOF) {
		if len(bytes.TrimSpace([]byte(s))) == 0 {
			return "it is empty"
		}
		return "unexpected end of input"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input (unclosed brace, bracket or string?)"
	}
	return err.Error()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var jobStatuses = []queuetytype.JobStatus{queuetytype.JobPending, queuetytype.JobProcessing, queuetytype.JobCompleted, queuetytype.JobFailed, queuetytype.JobBuried}

var workflowStatuses = []queuetytype.WorkflowStatus{
	queuetytype.WorkflowRunning, queuetytype.WorkflowPaused, queuetytype.WorkflowWaitingForSignal, queuetytype.WorkflowWaitingForWorkflows,
	queuetytype.WorkflowCompleted, queuetytype.WorkflowFailed, queuetytype.WorkflowCancelled,
}

func parseJobStatus(s string) (queuetytype.JobStatus, error) {
	st := queuetytype.JobStatus(strings.ToLower(strings.TrimSpace(s)))
	if s == "" || st.Valid() {
		return st, nil
	}
	return "", Usagef("--status %q: want one of %s", s, joinStatuses(jobStatuses))
}

func parseWorkflowStatus(s string) (queuetytype.WorkflowStatus, error) {
	st := queuetytype.WorkflowStatus(strings.ToLower(strings.TrimSpace(s)))
	if s == "" || st.Valid() {
		return st, nil
	}
	return "", Usagef("--status %q: want one of %s", s, joinStatuses(workflowStatuses))
}

func joinStatuses[T ~string](list []T) string {
	s := make([]string, len(list))
	for i, v := range list {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

func checkLimit(n int) error {
	if n < 1 {
		return Usagef("--limit must be at least 1, got %d", n)
	}
	return nil
}

// ageValue is a flag.Value for --older-than: a bare number is a number of
// days, as wp queuety's --older-than=<days> takes it; anything else is a
// duration for parseDuration ("168h", "7d", "0s").
type ageValue struct {
	d   *time.Duration
	set bool
}

// String implements flag.Value.
func (a *ageValue) String() string {
	if a == nil || a.d == nil || *a.d == 0 {
		return ""
	}
	return a.d.String()
}

// Set implements flag.Value.
func (a *ageValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 1e5 {
			return fmt.Errorf("invalid age %q (want a number of days from 0 to 100000, or a duration such as 12h)", s)
		}
		*a.d, a.set = time.Duration(n)*24*time.Hour, true
		return nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid age %q (want a number of days, or a duration such as 12h, 7d)", s)
	}
	*a.d, a.set = d, true
	return nil
}

// olderThanFlag declares the --older-than flag of the purge commands and
// returns a function that reads it: the age, or a usage error when it is
// negative, or when it was not given and there is no default (def <= 0).
func olderThanFlag(fs *flag.FlagSet, what string, def time.Duration) func() (time.Duration, error) {
	a := &ageValue{d: new(time.Duration)}
	usage := "delete " + what + " older than this `age`: a number of days (7, as wp queuety takes it) or a duration (12h, 7d, 0s) (required)"
	if def > 0 {
		usage = strings.TrimSuffix(usage, " (required)") + fmt.Sprintf(" (default %d days, as wp queuety)", def/(24*time.Hour))
	}
	fs.Var(a, "older-than", usage)
	return func() (time.Duration, error) {
		if !a.set && def > 0 {
			return def, nil
		}
		if !a.set {
			return 0, Usagef("--older-than is required (a number of days, for example --older-than 7, or a duration such as 168h)")
		}
		if *a.d < 0 {
			return 0, Usagef("--older-than must not be negative, got %s", *a.d)
		}
		return *a.d, nil
	}
}
