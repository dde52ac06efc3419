package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// newTable returns a tabwriter for aligned columns; Flush it at the end.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// viewsOf maps rows to their --json views (an empty slice, never nil, so
// no rows print as []).
func viewsOf[T, V any](rows []T, view func(T) V) []V {
	out := make([]V, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out
}

// printList prints the rows of a list command: with --json their views as
// a JSON array; otherwise the line empty when there are none, else a table
// of header and one line per row, written by line.
func printList[T, V any](e *Env, rows []T, view func(T) V, empty, header string, line func(w io.Writer, r T)) error {
	if e.Globals.JSON {
		return printJSON(e.Stdout, viewsOf(rows, view))
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(e.Stdout, empty)
		return err
	}
	tw := newTable(e.Stdout)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		line(tw, r)
	}
	return tw.Flush()
}

// printResult prints the outcome of a command: v as JSON with --json,
// else the text that format (ending in a newline) and args make.
func printResult(e *Env, v any, format string, args ...any) error {
	if e.Globals.JSON {
		return printJSON(e.Stdout, v)
	}
	_, err := fmt.Fprintf(e.Stdout, format, args...)
	return err
}

// printID prints the id of a row a command added: {"id": N} with --json,
// else the bare number.
func printID(e *Env, id int64) error {
	return printResult(e, map[string]int64{"id": id}, "%d\n", id)
}

// fieldTable is an indented two-column table of named values, as the
// show, status and inspect commands print them.
type fieldTable struct{ tw *tabwriter.Writer }

func newFieldTable(w io.Writer) fieldTable { return fieldTable{newTable(w)} }

// add writes a row, unless v is empty.
func (f fieldTable) add(k, v string) {
	if v != "" {
		fmt.Fprintf(f.tw, "  %s\t%s\n", k, v)
	}
}

// Flush writes the aligned rows.
func (f fieldTable) Flush() error { return f.tw.Flush() }

// ts formats a time in UTC RFC 3339; "" for the zero time.
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// isoTS shortens an RFC 3339 timestamp from the library (which may carry
// fractional seconds) to whole seconds, for tables.
func isoTS(s string) string {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return ts(t)
}

// dash returns s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell makes s fit a table cell: one line, at most n runes.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n-1]) + "…"
	}
	return dash(s)
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// idCell formats an optional id or count; "-" for 0.
func idCell[T ~int | ~int64](n T) string {
	if n == 0 {
		return "-"
	}
	return itoa(n)
}

func intPtr(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

// durationMS formats an optional duration in milliseconds; "-" for none.
func durationMS(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%d ms", *p)
}

// rawJSON returns stored JSON text for embedding in --json output, or
// null when it is empty or not valid JSON.
func rawJSON(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// optionalJSON is rawJSON for an omitempty field: nil when b is empty.
func optionalJSON(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return rawJSON(b)
}

// compactJSON renders a value as one line of JSON for text output.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(buf.String())
}

// detailOrContext is the DETAIL cell of a log or timeline row: the
// message, or else the row's JSON context on one line.
func detailOrContext(detail string, context []byte) string {
	if detail == "" && len(context) > 0 {
		return compactRaw(context)
	}
	return detail
}

// compactRaw renders stored JSON text on one line.
func compactRaw(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(b)); err != nil {
		return string(b)
	}
	return buf.String()
}

// jobJSON is a job row as the CLI prints it with --json.
type jobJSON struct {
	ID                int64                 `json:"id"`
	Queue             string                `json:"queue"`
	Handler           string                `json:"handler"`
	Status            queuetytype.JobStatus `json:"status"`
	Priority          int                   `json:"priority"`
	Attempts          int                   `json:"attempts"`
	MaxAttempts       int                   `json:"max_attempts"`
	Payload           json.RawMessage       `json:"payload"`
	AvailableAt       string                `json:"available_at,omitempty"`
	ReservedAt        string                `json:"reserved_at,omitempty"`
	CompletedAt       string                `json:"completed_at,omitempty"`
	FailedAt          string                `json:"failed_at,omitempty"`
	CreatedAt         string                `json:"created_at,omitempty"`
	ErrorMessage      string                `json:"error_message,omitempty"`
	WorkflowID        int64                 `json:"workflow_id,omitempty"`
	StepIndex         *int                  `json:"step_index,omitempty"`
	DependsOn         int64                 `json:"depends_on,omitempty"`
	ScheduleToStartAt string                `json:"schedule_to_start_at,omitempty"`
	StartToCloseAt    string                `json:"start_to_close_at,omitempty"`
	ScheduleToCloseAt string                `json:"schedule_to_close_at,omitempty"`
	HeartbeatDeadline string                `json:"heartbeat_deadline_at,omitempty"`
	LastHeartbeatAt   string                `json:"last_heartbeat_at,omitempty"`
	HeartbeatData     json.RawMessage       `json:"heartbeat_data,omitempty"`
}

func jobView(j *driver.Job) jobJSON {
	return jobJSON{
		ID: j.ID, Queue: j.Queue, Handler: j.Handler, Status: j.Status, Priority: int(j.Priority),
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Payload: rawJSON(j.Payload),
		AvailableAt: ts(j.AvailableAt), ReservedAt: ts(j.ReservedAt), CompletedAt: ts(j.CompletedAt),
		FailedAt: ts(j.FailedAt), CreatedAt: ts(j.CreatedAt), ErrorMessage: j.ErrorMessage,
		WorkflowID: j.WorkflowID, StepIndex: j.StepIndex, DependsOn: j.DependsOn,
		ScheduleToStartAt: ts(j.ScheduleToStartAt), StartToCloseAt: ts(j.StartToCloseAt),
		ScheduleToCloseAt: ts(j.ScheduleToCloseAt), HeartbeatDeadline: ts(j.HeartbeatDeadline),
		LastHeartbeatAt: ts(j.LastHeartbeatAt), HeartbeatData: optionalJSON(j.HeartbeatData),
	}
}

// logJSON is a log row as the CLI prints it with --json.
type logJSON struct {
	ID           int64           `json:"id"`
	At           string          `json:"at"`
	Event        driver.LogEvent `json:"event"`
	JobID        *int64          `json:"job_id,omitempty"`
	WorkflowID   int64           `json:"workflow_id,omitempty"`
	StepIndex    *int            `json:"step_index,omitempty"`
	Handler      string          `json:"handler,omitempty"`
	Queue        string          `json:"queue,omitempty"`
	Attempt      *int            `json:"attempt,omitempty"`
	DurationMS   *int64          `json:"duration_ms,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	ErrorClass   string          `json:"error_class,omitempty"`
	ErrorTrace   string          `json:"error_trace,omitempty"`
	Context      json.RawMessage `json:"context,omitempty"`
}

func logView(l *driver.LogEntry) logJSON {
	return logJSON{
		ID: l.ID, At: ts(l.CreatedAt), Event: l.Event, JobID: l.JobID, WorkflowID: l.WorkflowID,
		StepIndex: l.StepIndex, Handler: l.Handler, Queue: l.Queue, Attempt: l.Attempt, DurationMS: l.DurationMS,
		ErrorMessage: l.ErrorMessage, ErrorClass: l.ErrorClass, ErrorTrace: l.ErrorTrace, Context: optionalJSON(l.Context),
	}
}

// workflowJSON is a workflow row as the CLI prints it with --json. State
// is the public state, and only when asked for.
type workflowJSON struct {
	ID             int64                      `json:"id"`
	Name           string                     `json:"name"`
	Status         queuetytype.WorkflowStatus `json:"status"`
	CurrentStep    int                        `json:"current_step"`
	TotalSteps     int                        `json:"total_steps"`
	StartedAt      string                     `json:"started_at,omitempty"`
	CompletedAt    string                     `json:"completed_at,omitempty"`
	FailedAt       string                     `json:"failed_at,omitempty"`
	ErrorMessage   string                     `json:"error_message,omitempty"`
	DeadlineAt     string                     `json:"deadline_at,omitempty"`
	Run            int                        `json:"run"`
	RunStartedAt   string                     `json:"run_started_at,omitempty"`
	RunDeadlineAt  string                     `json:"run_deadline_at,omitempty"`
	WaitDeadlineAt string                     `json:"wait_deadline_at,omitempty"`
	ParentID       int64                      `json:"parent_workflow_id,omitempty"`
	State          queuety.State              `json:"state,omitempty"`
}

func workflowView(w *driver.Workflow) workflowJSON {
	return workflowJSON{
		ID: w.ID, Name: w.Name, Status: w.Status, CurrentStep: w.CurrentStep, TotalSteps: w.TotalSteps,
		StartedAt: ts(w.StartedAt), CompletedAt: ts(w.CompletedAt), FailedAt: ts(w.FailedAt),
		ErrorMessage: w.ErrorMessage, DeadlineAt: ts(w.DeadlineAt), Run: max(w.RunNumber, 1),
		RunStartedAt: ts(w.RunStartedAt), RunDeadlineAt: ts(w.RunDeadlineAt), WaitDeadlineAt: ts(w.WaitDeadlineAt),
		ParentID: w.ParentWorkflowID,
	}
}

// syncWriter serialises writes from several goroutines (the demo's
// handlers print while the demo reports progress).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write implements io.Writer under the lock.
func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// plural formats a count with a noun: "1 job", "2 jobs".
func plural[T ~int | ~int64](n T, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}
