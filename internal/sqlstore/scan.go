package sqlstore

import (
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// nullTime scans DATETIME values from either driver: time.Time (MySQL with
// parseTime) or text (SQLite). SQL NULL becomes the zero time.
type nullTime struct{ t *time.Time }

// Scan implements sql.Scanner.
func (n nullTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n.t = time.Time{}
	case time.Time:
		*n.t = x.UTC()
	case string:
		return n.parse(x)
	case []byte:
		return n.parse(string(x))
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a time", v)
	}
	return nil
}

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02",
}

func (n nullTime) parse(s string) error {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "0000-00-00") {
		*n.t = time.Time{}
		return nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			*n.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("sqlstore: cannot parse time %q", s)
}

// nullInt scans a nullable integer into an int64 (NULL → 0).
type nullInt struct{ p *int64 }

// Scan implements sql.Scanner.
func (n nullInt) Scan(v any) error {
	switch x := v.(type) { // the drivers' usual values, without database/sql's reflection
	case int64:
		*n.p = x
		return nil
	case nil:
		*n.p = 0
		return nil
	}
	var x sql.NullInt64
	if err := x.Scan(v); err != nil {
		return err
	}
	*n.p = x.Int64
	return nil
}

// intOf scans a NOT NULL integer column into an integer of any width,
// taking the int64 the drivers return directly where database/sql would
// format it as text and parse it back.
type intOf[T ~int | ~int8 | ~int16 | ~int32 | ~int64] struct{ p *T }

// Scan implements sql.Scanner.
func (n intOf[T]) Scan(v any) error {
	if x, ok := v.(int64); ok {
		*n.p = T(x)
		return nil
	}
	var x sql.NullInt64
	if err := x.Scan(v); err != nil {
		return err
	}
	if !x.Valid {
		return fmt.Errorf("sqlstore: NULL in an integer column")
	}
	*n.p = T(x.Int64)
	return nil
}

// nullIntPtr scans a nullable integer into an *int (NULL → nil).
type nullIntPtr struct{ p **int }

// Scan implements sql.Scanner.
func (n nullIntPtr) Scan(v any) error {
	if v == nil {
		*n.p = nil
		return nil
	}
	var x sql.NullInt64
	if err := x.Scan(v); err != nil {
		return err
	}
	if x.Valid {
		i := int(x.Int64)
		*n.p = &i
	} else {
		*n.p = nil
	}
	return nil
}

// nullString scans a nullable string (NULL → "").
type nullString struct{ p *string }

// Scan implements sql.Scanner.
func (n nullString) Scan(v any) error {
	switch x := v.(type) { // the drivers' usual values, without database/sql's reflection
	case nil:
		*n.p = ""
		return nil
	case []byte:
		*n.p = string(x)
		return nil
	case string:
		*n.p = x
		return nil
	}
	var x sql.NullString
	if err := x.Scan(v); err != nil {
		return err
	}
	*n.p = x.String
	return nil
}

// nullBytes scans nullable text into bytes (NULL → nil).
type nullBytes struct{ p *[]byte }

// Scan implements sql.Scanner.
func (n nullBytes) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n.p = nil
	case []byte:
		*n.p = append([]byte(nil), x...)
	case string:
		*n.p = []byte(x)
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into bytes", v)
	}
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

const jobCols = "id, queue, handler, payload, payload_hash, priority, status, attempts, max_attempts, " +
	"available_at, reserved_at, completed_at, failed_at, error_message, workflow_id, step_index, depends_on, " +
	"batch_id, concurrency_group, concurrency_limit, cost_units, heartbeat_data, created_at, claim_token, " +
	"schedule_to_start_at, start_to_close_at, schedule_to_close_at, heartbeat_deadline_at, last_heartbeat_at"

func scanJob(sc scanner) (*driver.Job, error) { return newJobScanner().scan(sc) }

// jobScanner scans job rows through one list of destinations, so reading
// a claim of a hundred rows does not build a hundred argument lists.
type jobScanner struct {
	row    driver.Job
	status string
	limit  int64
	dests  []any
}

func newJobScanner() *jobScanner {
	s := &jobScanner{}
	j := &s.row
	s.dests = []any{intOf[int64]{&j.ID}, &j.Queue, &j.Handler, nullBytes{&j.Payload}, nullString{&j.PayloadHash}, intOf[driver.Priority]{&j.Priority}, &s.status,
		intOf[int]{&j.Attempts}, intOf[int]{&j.MaxAttempts}, nullTime{&j.AvailableAt}, nullTime{&j.ReservedAt}, nullTime{&j.CompletedAt},
		nullTime{&j.FailedAt}, nullString{&j.ErrorMessage}, nullInt{&j.WorkflowID}, nullIntPtr{&j.StepIndex},
		nullInt{&j.DependsOn}, nullInt{&j.BatchID}, nullString{&j.ConcurrencyGroup}, nullInt{&s.limit}, intOf[int]{&j.CostUnits},
		nullBytes{&j.HeartbeatData}, nullTime{&j.CreatedAt}, nullInt{&j.ClaimToken}, nullTime{&j.ScheduleToStartAt},
		nullTime{&j.StartToCloseAt}, nullTime{&j.ScheduleToCloseAt}, nullTime{&j.HeartbeatDeadline}, nullTime{&j.LastHeartbeatAt}}
	return s
}

// scan reads one row into a new Job. Every destination is written on
// each row (NULL as the zero value), so no field carries over.
func (s *jobScanner) scan(sc scanner) (*driver.Job, error) {
	if err := sc.Scan(s.dests...); err != nil {
		return nil, fmt.Errorf("scan job: %w", err)
	}
	return s.finish(), nil
}

// finish returns a new Job from the row just scanned into s.dests.
func (s *jobScanner) finish() *driver.Job {
	j := new(driver.Job)
	*j = s.row
	j.Status = driver.JobStatus(s.status)
	j.ConcurrencyLimit = int(s.limit)
	return j
}

const workflowCols = "id, name, status, state, current_step, total_steps, parent_workflow_id, parent_step_index, " +
	"started_at, completed_at, failed_at, error_message, deadline_at, run_number, run_started_at, run_deadline_at, wait_deadline_at"

func scanWorkflow(sc scanner) (*driver.Workflow, error) {
	w := &driver.Workflow{}
	var status string
	var run int64
	err := sc.Scan(&w.ID, &w.Name, &status, nullBytes{&w.State}, &w.CurrentStep, &w.TotalSteps, nullInt{&w.ParentWorkflowID},
		nullIntPtr{&w.ParentStepIndex}, nullTime{&w.StartedAt}, nullTime{&w.CompletedAt}, nullTime{&w.FailedAt},
		nullString{&w.ErrorMessage}, nullTime{&w.DeadlineAt}, nullInt{&run}, nullTime{&w.RunStartedAt},
		nullTime{&w.RunDeadlineAt}, nullTime{&w.WaitDeadlineAt})
	if err != nil {
		return nil, fmt.Errorf("scan workflow: %w", err)
	}
	w.Status = driver.WorkflowStatus(status)
	w.RunNumber = int(run)
	return w, nil
}

const logCols = "id, job_id, workflow_id, step_index, handler, queue, event, attempt, duration_ms, memory_peak_kb, " +
	"error_message, error_class, error_trace, context, created_at"

func scanLog(sc scanner) (*driver.LogEntry, error) {
	l := &driver.LogEntry{}
	var jobID, dur, mem sql.NullInt64
	var event string
	var step, attempt *int
	err := sc.Scan(&l.ID, &jobID, nullInt{&l.WorkflowID}, nullIntPtr{&step}, &l.Handler, &l.Queue, &event, nullIntPtr{&attempt},
		&dur, &mem, nullString{&l.ErrorMessage}, nullString{&l.ErrorClass}, nullString{&l.ErrorTrace},
		nullBytes{&l.Context}, nullTime{&l.CreatedAt})
	if err != nil {
		return nil, fmt.Errorf("scan log: %w", err)
	}
	l.Event = driver.LogEvent(event)
	l.StepIndex, l.Attempt = step, attempt
	if jobID.Valid {
		l.JobID = &jobID.Int64
	}
	if dur.Valid {
		l.DurationMS = &dur.Int64
	}
	if mem.Valid {
		l.MemoryPeakKB = &mem.Int64
	}
	return l, nil
}

const eventCols = "id, workflow_id, job_id, step_index, step_name, step_type, handler, event, queue, attempt, input, " +
	"output, state_before, state_after, context, artifacts, chunks, error, duration_ms, created_at"

func scanEvent(sc scanner) (*driver.WorkflowEvent, error) {
	e := &driver.WorkflowEvent{}
	var event string
	var dur sql.NullInt64
	var attempt *int
	err := sc.Scan(&e.ID, &e.WorkflowID, nullInt{&e.JobID}, &e.StepIndex, nullString{&e.StepName}, nullString{&e.StepType},
		&e.Handler, &event, nullString{&e.Queue}, nullIntPtr{&attempt}, nullBytes{&e.Input}, nullBytes{&e.Output},
		nullBytes{&e.StateBefore}, nullBytes{&e.StateAfter}, nullBytes{&e.Context}, nullBytes{&e.Artifacts}, nullBytes{&e.Chunks}, nullBytes{&e.Error}, &dur,
		nullTime{&e.CreatedAt})
	if err != nil {
		return nil, fmt.Errorf("scan workflow event: %w", err)
	}
	e.Event = driver.EventType(event)
	e.Attempt = attempt
	if dur.Valid {
		e.DurationMS = &dur.Int64
	}
	return e, nil
}

// isBadConn reports a lost connection.
func isBadConn(err error) bool {
	if errors.Is(err, sqldriver.ErrBadConn) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"invalid connection", "broken pipe", "connection reset", "bad connection", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
