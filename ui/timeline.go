package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// Bounds of a workflow's drawn timeline.
const (
	// timelineRows caps the rows (attempts, waits, children) drawn.
	timelineRows = 120
	// timelineWidth is the drawing's width in pixels, of which
	// timelineLabelW holds the row labels.
	timelineWidth, timelineLabelW = 1000, 250
	timelineRowH                  = 18
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
	// EntriesLimited says the description holds one page of the
	// workflow's timeline entries, by which waits and children are placed.
	EntriesLimited bool
	JobsHref       string // the workflow's jobs list
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

// newTimelineChart lays out a description's steps on a time axis; now
// ends the bars still running. base is Options.BasePath.
func newTimelineChart(d *queuetytype.WorkflowDescription, now time.Time, base string) *timelineChart {
	var spans []span
	c := &timelineChart{EntriesLimited: d.TimelineMore > 0 || len(d.Timeline) < d.TimelineTotal,
		JobsHref: fmt.Sprintf("%s/jobs?workflow=%d", base, d.ID)}
	// The first and last timeline entry of each step: a wait's span.
	type firstLast struct{ first, last time.Time }
	byStep := map[int]*firstLast{}
	for _, e := range d.Timeline {
		if e.StepIndex == nil {
			continue
		}
		at := parseTime(e.At)
		if at.IsZero() {
			continue
		}
		fl := byStep[*e.StepIndex]
		if fl == nil {
			byStep[*e.StepIndex] = &firstLast{at, at}
			continue
		}
		if at.Before(fl.first) {
			fl.first = at
		}
		if at.After(fl.last) {
			fl.last = at
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
