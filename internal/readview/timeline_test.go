package readview

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/queuetytype"
)

// TestOrderTimelineWithinASecond: rows written in the same second keep
// each attempt's start before its end, across the two tables, and a
// second attempt of the same job after the first one's rows.
func TestOrderTimelineWithinASecond(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(i int) *int { return &i }
	n := 0
	row := func(source, event string, job int64, attempt *int, later time.Duration) timelineRow {
		n++
		return timelineRow{TimelineEntry: queuetytype.TimelineEntry{Source: source, Event: event, StepIndex: step(0), JobID: job, Attempt: attempt},
			id: int64(n), at: at.Add(later)}
	}
	one, two := step(1), step(2)
	// Events and log rows as the engine writes them: each table in its
	// own id order, the logs after the events of the same transaction.
	entries := []timelineRow{
		row("event", "step_started", 7, one, 0),
		row("event", "step_failed", 7, one, 0),
		row("event", "step_started", 7, two, 0),
		row("event", "step_completed", 7, two, 0),
		{TimelineEntry: queuetytype.TimelineEntry{Source: "log", Event: "workflow_started"}, id: 1, at: at},
		row("log", "started", 7, one, 0),
		row("log", "failed", 7, one, 0),
		row("log", "retried", 7, one, 0),
		row("log", "started", 7, two, 0),
		row("log", "completed", 7, nil, 0),
		{TimelineEntry: queuetytype.TimelineEntry{Source: "log", Event: "workflow_completed"}, id: 99, at: at},
		row("event", "step_started", 8, one, time.Second),
		row("log", "started", 8, one, time.Second),
	}
	var got []string
	for _, te := range orderTimeline(entries) {
		got = append(got, te.Source+":"+te.Event)
	}
	assert.Equal(t, []string{
		"log:workflow_started",
		"event:step_started", "log:started", "event:step_failed", "log:failed", "log:retried",
		"event:step_started", "log:started", "event:step_completed", "log:completed",
		"log:workflow_completed",
		"event:step_started", "log:started",
	}, got)
	assert.Empty(t, orderTimeline(nil), "no rows")
}
