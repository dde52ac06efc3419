package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Bounds of a workflow's drawn timeline.
const (
	// timelineRows caps the rows (attempts, waits, children) drawn.
	timelineRows = 120
	// timelineWidth is the drawing's width in pixels, of which
	// timelineLabelW holds the row labels.
	timelineWidth, timelineLabelW = 1000, 250
	timelineRowH                  = 18
	// timelineSpanSteps caps the steps whose first and last events the
	// drawing reads (two index reads each) to place their waits and
	// children.
	timelineSpanSteps = 60
)

// timelineChart is a workflow's steps on a time axis, drawn as SVG: a
// bar per job attempt (linked to its job), per wait and per child
// workflow (linked to it).
type timelineChart struct {
	Width, Height int
	PlotX, PlotW  int
	Rows          []timelineRow
	Ticks         []axisLabel
	AxisY         int
	Since, Until  time.Time
	Truncated     int // rows left out past timelineRows
	JobsLeftOut   int // jobs the description did not list (JobsMore)
	// SpansLimited counts the steps with a wait or children past the
	// first timelineSpanSteps, placed by the timeline entries of the page
	// alone (when it holds one page of them).
	SpansLimited int
	JobsHref     string // the workflow's jobs list
}

// timelineRow is one bar with its label.
type timelineRow struct {
	Y       int
	Label   string
	Step    int
	Kind    string // attempt, wait, child
	Class   string // the bar's CSS class: its outcome
	Href    string // where the bar links
	X, W    int
	Title   string
	JobID   int64
	Attempt int
	Failed  bool // the attempt failed (retried, buried, timed out)
	TextX   int
}

// span is a bar's time span before layout.
type span struct {
	row        timelineRow
	start, end time.Time
}

// firstLast is the time of a step's first and last event: how long its
// wait or its children lasted.
type firstLast struct{ first, last time.Time }

// widen extends fl to t.
func (fl *firstLast) widen(t time.Time) {
	if t.Before(fl.first) {
		fl.first = t
	}
	if t.After(fl.last) {
		fl.last = t
	}
}

// spanned reports whether the drawing places a step by its first and
// last event: a wait, a step with children, a step without jobs.
func spanned(st queuetytype.StepInfo) bool {
	if len(st.Children) > 0 || len(st.Jobs) == 0 {
		return true
	}
	for _, j := range st.Jobs {
		if strings.HasPrefix(j.Handler, "__queuety_wait") {
			return true
		}
	}
	return false
}

// stepSpans reads the first and last event of each step the drawing
// places by them (spanned), at most timelineSpanSteps steps: two reads of
// one row each through the (workflow_id, step_index) index, however long
// the workflow's history. It also returns how many such steps it left
// out.
func (s *server) stepSpans(ctx context.Context, d *queuetytype.WorkflowDescription) (map[int]*firstLast, int, error) {
	out := map[int]*firstLast{}
	left := 0
	err := s.store().InTx(ctx, func(tx driver.Tx) error {
		for _, st := range d.Steps {
			if !spanned(st) {
				continue
			}
			if len(out) >= timelineSpanSteps {
				left++
				continue
			}
			for _, order := range []driver.EventOrder{driver.EventsByID, driver.EventsNewestFirst} {
				evs, err := tx.EventPage(ctx, driver.EventQuery{WorkflowID: d.ID, StepIndex: &st.Index, Order: order, Limit: 1,
					Light: true, MaxColumnBytes: 1})
				if err != nil {
					return fmt.Errorf("read the events of step %d: %w", st.Index, err)
				}
				if len(evs) == 0 || evs[0].CreatedAt.IsZero() {
					continue
				}
				at := evs[0].CreatedAt
				if fl := out[st.Index]; fl != nil {
					fl.widen(at)
				} else {
					out[st.Index] = &firstLast{at, at}
				}
			}
		}
		return nil
	})
	return out, left, err
}

// newTimelineChart lays out a description's steps on a time axis; now
// ends the bars still running. base is Options.BasePath. steps holds the
// first and last event of the steps stepSpans read (nil: none), and
// spansLeft how many it left out; the timeline entries of the
// description widen them, and place the steps left out.
func newTimelineChart(d *queuetytype.WorkflowDescription, steps map[int]*firstLast, spansLeft int, now time.Time, base string) *timelineChart {
	var spans []span
	c := &timelineChart{JobsHref: fmt.Sprintf("%s/jobs?workflow=%d", base, d.ID)}
	if spansLeft > 0 && (d.TimelineMore > 0 || len(d.Timeline) < d.TimelineTotal) {
		c.SpansLimited = spansLeft
	}
	byStep := map[int]*firstLast{}
	for i, fl := range steps {
		byStep[i] = &firstLast{fl.first, fl.last}
	}
	for _, e := range d.Timeline {
		if e.StepIndex == nil {
			continue
		}
		at := parseTime(e.At)
		if at.IsZero() {
			continue
		}
		if fl := byStep[*e.StepIndex]; fl != nil {
			fl.widen(at)
		} else {
			byStep[*e.StepIndex] = &firstLast{at, at}
		}
	}
	add := func(s span) bool {
		if len(spans) >= timelineRows {
			c.Truncated++
			return false
		}
		spans = append(spans, s)
		return true
	}
	for _, st := range d.Steps {
		c.JobsLeftOut += st.JobsMore
		drawn := false
		for _, j := range st.Jobs {
			for _, a := range j.History {
				start, end := parseTime(a.StartedAt), parseTime(a.EndedAt)
				if start.IsZero() {
					continue
				}
				if end.IsZero() {
					end = now
				}
				if a.DurationMS != nil {
					// Rows keep whole seconds: the duration draws a
					// short attempt's length.
					if d := start.Add(time.Duration(*a.DurationMS) * time.Millisecond); d.After(end) {
						end = d
					}
				}
				outcome := a.Outcome
				if outcome == "" {
					outcome = "running"
				}
				failed := outcome == "retried" || outcome == "buried" || outcome == "timed_out" || outcome == "failed"
				title := fmt.Sprintf("step %d %s · job %d (%s) attempt %d: %s, %s", st.Index, st.Name, j.ID, j.Handler, a.Attempt, outcome,
					formatDuration(end.Sub(start)))
				if a.DurationMS != nil {
					title = fmt.Sprintf("step %d %s · job %d (%s) attempt %d: %s, %d ms", st.Index, st.Name, j.ID, j.Handler, a.Attempt, outcome,
						*a.DurationMS)
				}
				if a.Error != "" {
					title += " · " + string(firstChars([]byte(a.Error), 300))
				}
				kind, class := "attempt", "o-"+outcome
				if fl := byStep[st.Index]; strings.HasPrefix(j.Handler, "__queuety_wait") && fl != nil {
					// A wait's job sets the wait up: its bar lasts until
					// the step's last entry, or now while it waits.
					kind = "wait"
					if !failed {
						class = "o-wait"
					}
					if st.Status == "waiting" {
						end = now
					} else if fl.last.After(end) {
						end = fl.last
					}
				}
				label := fmt.Sprintf("%d %s · #%d", st.Index, stepLabel(st, j.Handler), j.ID)
				if a.Attempt > 1 {
					label += fmt.Sprintf(" try %d", a.Attempt)
				}
				if !add(span{row: timelineRow{Label: label, Step: st.Index, Kind: kind, Class: class,
					Href: fmt.Sprintf("%s/jobs/%d", base, j.ID), Title: title, JobID: j.ID, Attempt: a.Attempt, Failed: failed},
					start: start, end: end}) {
					break
				}
				drawn = true
			}
		}
		fl := byStep[st.Index]
		for _, ch := range st.Children {
			if fl == nil {
				break
			}
			end := fl.last
			if !ch.Status.Terminal() {
				end = now
			}
			add(span{row: timelineRow{Label: fmt.Sprintf("%d %s · workflow %d", st.Index, stepLabel(st, ""), ch.ID), Step: st.Index, Kind: "child",
				Class: "o-child", Href: fmt.Sprintf("%s/workflows/%d", base, ch.ID),
				Title: fmt.Sprintf("step %d %s · child workflow %d %s: %s", st.Index, st.Name, ch.ID, ch.Name, ch.Status)}, start: fl.first, end: end})
			drawn = true
		}
		if !drawn && fl != nil {
			end := fl.last
			if st.Status == "waiting" || st.Status == "running" {
				end = now
			}
			add(span{row: timelineRow{Label: fmt.Sprintf("%d %s", st.Index, stepLabel(st, "")), Step: st.Index, Kind: "wait", Class: "o-wait",
				Href:  fmt.Sprintf("%s/workflows/%d#steps", base, d.ID),
				Title: fmt.Sprintf("step %d %s (%s): %s", st.Index, st.Name, st.Type, st.Status)}, start: fl.first, end: end})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	c.Since, c.Until = spans[0].start, spans[0].end
	for _, s := range spans {
		if s.start.Before(c.Since) {
			c.Since = s.start
		}
		if s.end.After(c.Until) {
			c.Until = s.end
		}
	}
	total := c.Until.Sub(c.Since)
	if total < time.Second {
		total = time.Second
		c.Until = c.Since.Add(total)
	}
	c.Width, c.PlotX, c.PlotW = timelineWidth, timelineLabelW, timelineWidth-timelineLabelW-10
	c.AxisY = len(spans)*timelineRowH + 4
	c.Height = c.AxisY + 20
	x := func(t time.Time) int { return c.PlotX + int(float64(t.Sub(c.Since))/float64(total)*float64(c.PlotW)) }
	for i, s := range spans {
		r := s.row
		r.Y = i * timelineRowH
		r.X = x(s.start)
		r.W = max(x(s.end)-r.X, 2)
		r.TextX = c.PlotX - 6
		c.Rows = append(c.Rows, r)
	}
	for _, f := range []float64{0, 0.5, 1} {
		at := c.Since.Add(time.Duration(f * float64(total)))
		anchor := map[float64]string{0: "start", 0.5: "middle", 1: "end"}[f]
		label := at.UTC().Format("15:04:05")
		if f > 0 {
			label = "+" + shortDuration(at.Sub(c.Since))
		}
		c.Ticks = append(c.Ticks, axisLabel{X: c.PlotX + int(f*float64(c.PlotW)), Label: label, Anchor: anchor})
	}
	return c
}

// shortDuration prints a span on the time axis: 350ms, 12.5s, or as
// formatDuration from a minute on.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return formatDuration(d)
}

// stepLabel names a step on the timeline: its name, or when it has
// none but its index, the job's handler (the engine's own handlers by the
// step's type).
func stepLabel(st queuetytype.StepInfo, handler string) string {
	if st.Name != "" && st.Name != strconv.Itoa(st.Index) {
		return firstRunes(st.Name, 28)
	}
	if handler == "" || strings.HasPrefix(handler, "__queuety_") {
		return st.Type
	}
	return firstRunes(handler, 28)
}

// firstRunes cuts s to n characters, with an ellipsis when cut.
func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
