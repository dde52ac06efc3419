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

func intPtr(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
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
	ID                int64             `json:"id"`
	Queue             string            `json:"queue"`
	Handler           string            `json:"handler"`
	Status            queuety.JobStatus `json:"status"`
	Priority          int               `json:"priority"`
	Attempts          int               `json:"attempts"`
	MaxAttempts       int               `json:"max_attempts"`
	Payload           json.RawMessage   `json:"payload"`
	AvailableAt       string            `json:"available_at,omitempty"`
	ReservedAt        string            `json:"reserved_at,omitempty"`
	CompletedAt       string            `json:"completed_at,omitempty"`
	FailedAt          string            `json:"failed_at,omitempty"`
	CreatedAt         string            `json:"created_at,omitempty"`
	ErrorMessage      string            `json:"error_message,omitempty"`
	WorkflowID        int64             `json:"workflow_id,omitempty"`
	StepIndex         *int              `json:"step_index,omitempty"`
	DependsOn         int64             `json:"depends_on,omitempty"`
	ScheduleToStartAt string            `json:"schedule_to_start_at,omitempty"`
	StartToCloseAt    string            `json:"start_to_close_at,omitempty"`
	ScheduleToCloseAt string            `json:"schedule_to_close_at,omitempty"`
	HeartbeatDeadline string            `json:"heartbeat_deadline_at,omitempty"`
	LastHeartbeatAt   string            `json:"last_heartbeat_at,omitempty"`
	HeartbeatData     json.RawMessage   `json:"heartbeat_data,omitempty"`
}

func jobView(j *queuety.Job) jobJSON {
	v := jobJSON{
		ID: j.ID, Queue: j.Queue, Handler: j.Handler, Status: j.Status, Priority: int(j.Priority),
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Payload: rawJSON(j.Payload),
		AvailableAt: ts(j.AvailableAt), ReservedAt: ts(j.ReservedAt), CompletedAt: ts(j.CompletedAt),
		FailedAt: ts(j.FailedAt), CreatedAt: ts(j.CreatedAt), ErrorMessage: j.ErrorMessage,
		WorkflowID: j.WorkflowID, StepIndex: j.StepIndex, DependsOn: j.DependsOn,
		ScheduleToStartAt: ts(j.ScheduleToStartAt), StartToCloseAt: ts(j.StartToCloseAt),
		ScheduleToCloseAt: ts(j.ScheduleToCloseAt), HeartbeatDeadline: ts(j.HeartbeatDeadline),
		LastHeartbeatAt: ts(j.LastHeartbeatAt),
	}
	if len(bytes.TrimSpace(j.HeartbeatData)) > 0 {
		v.HeartbeatData = rawJSON(j.HeartbeatData)
	}
	return v
}

// logJSON is a log row as the CLI prints it with --json.
type logJSON struct {
	ID           int64            `json:"id"`
	At           string           `json:"at"`
	Event        queuety.LogEvent `json:"event"`
	JobID        *int64           `json:"job_id,omitempty"`
	WorkflowID   int64            `json:"workflow_id,omitempty"`
	StepIndex    *int             `json:"step_index,omitempty"`
	Handler      string           `json:"handler,omitempty"`
	Queue        string           `json:"queue,omitempty"`
	Attempt      *int             `json:"attempt,omitempty"`
	DurationMS   *int64           `json:"duration_ms,omitempty"`
	ErrorMessage string           `json:"error_message,omitempty"`
	ErrorClass   string           `json:"error_class,omitempty"`
	ErrorTrace   string           `json:"error_trace,omitempty"`
	Context      json.RawMessage  `json:"context,omitempty"`
}

func logView(l *queuety.LogEntry) logJSON {
	v := logJSON{
		ID: l.ID, At: ts(l.CreatedAt), Event: l.Event, JobID: l.JobID, WorkflowID: l.WorkflowID,
		StepIndex: l.StepIndex, Handler: l.Handler, Queue: l.Queue, Attempt: l.Attempt, DurationMS: l.DurationMS,
		ErrorMessage: l.ErrorMessage, ErrorClass: l.ErrorClass, ErrorTrace: l.ErrorTrace,
	}
	if len(bytes.TrimSpace(l.Context)) > 0 {
		v.Context = rawJSON(l.Context)
	}
	return v
}

// workflowJSON is a workflow row as the CLI prints it with --json. State
// is the public state, and only when asked for.
type workflowJSON struct {
	ID             int64                  `json:"id"`
	Name           string                 `json:"name"`
	Status         queuety.WorkflowStatus `json:"status"`
	CurrentStep    int                    `json:"current_step"`
	TotalSteps     int                    `json:"total_steps"`
	StartedAt      string                 `json:"started_at,omitempty"`
	CompletedAt    string                 `json:"completed_at,omitempty"`
	FailedAt       string                 `json:"failed_at,omitempty"`
	ErrorMessage   string                 `json:"error_message,omitempty"`
	DeadlineAt     string                 `json:"deadline_at,omitempty"`
	Run            int                    `json:"run"`
	RunStartedAt   string                 `json:"run_started_at,omitempty"`
	RunDeadlineAt  string                 `json:"run_deadline_at,omitempty"`
	WaitDeadlineAt string                 `json:"wait_deadline_at,omitempty"`
	ParentID       int64                  `json:"parent_workflow_id,omitempty"`
	State          queuety.State          `json:"state,omitempty"`
}

func workflowView(w *queuety.Workflow) workflowJSON {
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
