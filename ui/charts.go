package ui

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// pageFuncs are the template helpers of the charts, batches, timeline,
// webhooks and artifacts views.
var pageFuncs = template.FuncMap{
	"half":   func(a int) int { return a / 2 },
	"inList": func(s string, l []string) bool { return slices.Contains(l, s) },
	"int64":  func(n int) int64 { return int64(n) },
}

// chartWindow is one span the charts page offers, cut into buckets.
type chartWindow struct {
	Key     string // the ?window= value
	Label   string
	Span    time.Duration
	Buckets int
}

// chartWindows are the spans of the charts page; the first is the
// default.
var chartWindows = []chartWindow{
	{"1h", "1 hour", time.Hour, 60},
	{"15m", "15 minutes", 15 * time.Minute, 15},
	{"24h", "24 hours", 24 * time.Hour, 96},
	{"7d", "7 days", 7 * 24 * time.Hour, 84},
}

// chartWindowOrder lists the windows shortest first for the selector.
var chartWindowOrder = []string{"15m", "1h", "24h", "7d"}

// chartChoices caps the queues and handlers offered in the selectors.
const chartChoices = 100

// chartRows caps the log rows (and the started rows joined to their
// jobs) one chart page reads; a busier span says its counts are floors.
// A variable so that tests can lower it.
var chartRows = 50000

// chartsData is what the charts page shows.
type chartsData struct {
	Window           chartWindow
	Windows          []chartWindow
	Queue, Handler   string
	Queues, Handlers []string
	Series           *queuetytype.Series
	Charts           []*svgChart
	Totals           struct{ Completed, Failed int64 }
}

// findWindow returns the window named key ("" for the default).
func findWindow(key string) (chartWindow, bool) {
	if key == "" {
		return chartWindows[0], true
	}
	for _, w := range chartWindows {
		if w.Key == key {
			return w, true
		}
	}
	return chartWindow{}, false
}

func (s *server) chartsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	win, ok := findWindow(q.Get("window"))
	if !ok {
		s.fail(w, r, http.StatusBadRequest, "Unknown window %q: want one of %s.", q.Get("window"), strings.Join(chartWindowOrder, ", "))
		return
	}
	d := &chartsData{Window: win, Queue: strings.TrimSpace(q.Get("queue")), Handler: strings.TrimSpace(q.Get("handler"))}
	for _, k := range chartWindowOrder {
		cw, _ := findWindow(k)
		d.Windows = append(d.Windows, cw)
	}
	ctx := r.Context()
	series, err := s.c.MetricSeries(ctx, queuetytype.SeriesQuery{Until: s.seriesUntil(win), Span: win.Span, Buckets: win.Buckets,
		Queue: d.Queue, Handler: d.Handler, MaxRows: chartRows})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Series = series
	for _, b := range series.Buckets {
		d.Totals.Completed += b.Completed
		d.Totals.Failed += b.Failed
	}
	d.Charts = seriesCharts(series, 720, 150)
	if d.Queues, d.Handlers, err = s.chartChoices(r); err != nil {
		s.failErr(w, r, err)
		return
	}
	// The long windows do not refresh themselves: their buckets change
	// slowly, and each refresh reads up to chartRows rows again.
	s.page(w, r, "charts", "Charts", "charts", win.Span <= time.Hour, d)
}

// seriesUntil is the end of a window's span: now (by the UI's clock),
// rounded up to a whole bucket.
func (s *server) seriesUntil(win chartWindow) time.Time {
	step := win.Span / time.Duration(win.Buckets)
	now := s.opts.Clock.Now().UTC()
	until := now.Truncate(step)
	if until.Before(now) {
		until = until.Add(step)
	}
	return until
}

// chartChoices lists the queues (of the queue summaries) and the handlers
// (that registered workers run) for the selectors, at most chartChoices
// each, in name order.
func (s *server) chartChoices(r *http.Request) (queues, handlers []string, err error) {
	sums, err := s.c.QueueSummaries(r.Context())
	if err != nil {
		return nil, nil, err
	}
	for _, sum := range sums {
		queues = append(queues, sum.Queue)
	}
	workers, _, err := s.workers(r.Context())
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, wk := range workers {
		for _, h := range wk.Handlers {
			if !seen[h] {
				seen[h] = true
				handlers = append(handlers, h)
			}
		}
	}
	sort.Strings(queues)
	sort.Strings(handlers)
	return queues[:min(len(queues), chartChoices)], handlers[:min(len(handlers), chartChoices)], nil
}

// svgChart is a chart drawn as inline SVG: bars or lines over the
// buckets of a series, with a y axis from 0 to Max.
type svgChart struct {
	ID, Title, Desc, Unit string
	Width, Height         int
	// PlotX, PlotY, PlotW and PlotH are the plot area inside the margins.
	PlotX, PlotY, PlotW, PlotH int
	Max                        float64
	Grid                       []gridLine
	XLabels                    []axisLabel
	Bars                       []chartBar
	Lines                      []chartLine
	// Legend names the lines (or the bars) with their CSS classes.
	Legend []legendEntry
	Empty  bool // no value in any bucket
	// Compact drops the legend from the caption.
	Compact bool
}

// gridLine is a horizontal line of the y axis with its value.
type gridLine struct {
	Y     int
	Label string
}

// axisLabel is a label under the x axis.
type axisLabel struct {
	X      int
	Label  string
	Anchor string // start, middle, end
}

// chartBar is one bucket's bar.
type chartBar struct {
	X, Y, W, H int
	Bucket     int
	Value      string // the value, as the data attribute and title give it
	Title      string
}

// chartLine is one series of points, drawn as a polyline with a dot per
// bucket that has a value.
type chartLine struct {
	Class  string
	Points string
	Dots   []chartDot
}

// chartDot is one point of a line.
type chartDot struct {
	X, Y   int
	Bucket int
	Value  string
	Title  string
}

// legendEntry names a line or bar set.
type legendEntry struct{ Class, Label string }

// seriesCharts draws the four charts of a series: throughput, failures,
// handler duration (p50, p95) and wait time (mean, p95).
func seriesCharts(s *queuetytype.Series, width, height int) []*svgChart {
	n := len(s.Buckets)
	vals := func(f func(b *queuetytype.SeriesBucket) (float64, bool)) ([]float64, []bool) {
		v, has := make([]float64, n), make([]bool, n)
		for i := range s.Buckets {
			v[i], has[i] = f(&s.Buckets[i])
		}
		return v, has
	}
	per := formatDuration(s.Step)
	completed, _ := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return float64(b.Completed), true })
	failed, _ := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return float64(b.Failed), true })
	p50, hasDur := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return b.P50MS, b.Durations > 0 })
	p95, _ := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return b.P95MS, b.Durations > 0 })
	wmean, hasWait := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return b.WaitMeanS, b.Waits > 0 })
	wp95, _ := vals(func(b *queuetytype.SeriesBucket) (float64, bool) { return b.WaitP95S, b.Waits > 0 })

	throughput := newChart("chart-throughput", "Throughput", fmt.Sprintf("Completed attempts per %s", per), "", s, width, height,
		max(peak(completed), 1))
	throughput.bars(s, completed, "completed", "bar-ok")
	failures := newChart("chart-failures", "Failures", fmt.Sprintf("Failed or buried attempts per %s", per), "", s, width, height,
		max(peak(failed), 1))
	failures.bars(s, failed, "failed", "bar-bad")
	duration := newChart("chart-duration", "Handler duration", "Median and 95th percentile of completed attempts' durations", "ms", s,
		width, height, max(peak(p95), 1))
	duration.line(s, p95, hasDur, "line-p95", "p95")
	duration.line(s, p50, hasDur, "line-p50", "p50")
	wait := newChart("chart-wait", "Wait time", "Mean and 95th percentile of the time from due to start", "s", s, width, height,
		max(peak(wp95), 1))
	wait.line(s, wp95, hasWait, "line-p95", "p95")
	wait.line(s, wmean, hasWait, "line-p50", "mean")
	return []*svgChart{throughput, failures, duration, wait}
}

// peak is the largest value.
func peak(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// niceCeil rounds a positive value up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// newChart lays out an empty chart with its axes.
func newChart(id, title, desc, unit string, s *queuetytype.Series, width, height int, top float64) *svgChart {
	c := &svgChart{ID: id, Title: title, Desc: desc, Unit: unit, Width: width, Height: height,
		PlotX: 58, PlotY: 8, PlotW: width - 66, PlotH: height - 30, Max: niceCeil(top), Empty: true}
	for _, f := range []float64{0, 0.5, 1} {
		if f == 0.5 && unit == "" && math.Mod(c.Max, 2) != 0 {
			continue // a count's axis shows whole numbers
		}
		c.Grid = append(c.Grid, gridLine{Y: c.PlotY + c.PlotH - int(f*float64(c.PlotH)), Label: formatValue(f*c.Max, unit)})
	}
	layout := "15:04"
	if s.Until.Sub(s.Since) > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	c.XLabels = []axisLabel{
		{X: c.PlotX, Label: s.Since.UTC().Format(layout), Anchor: "start"},
		{X: c.PlotX + c.PlotW/2, Label: s.Since.Add(s.Until.Sub(s.Since) / 2).UTC().Format(layout), Anchor: "middle"},
		{X: c.PlotX + c.PlotW, Label: s.Until.UTC().Format(layout) + " UTC", Anchor: "end"},
	}
	return c
}

// slot is the x position and width of bucket i.
func (c *svgChart) slot(i, n int) (x, w int) {
	x0 := c.PlotX + i*c.PlotW/n
	x1 := c.PlotX + (i+1)*c.PlotW/n
	return x0, max(x1-x0, 1)
}

// y is the vertical position of a value.
func (c *svgChart) y(v float64) int {
	return c.PlotY + c.PlotH - int(math.Round(v/c.Max*float64(c.PlotH)))
}

// bars adds one bar per bucket.
func (c *svgChart) bars(s *queuetytype.Series, v []float64, what, class string) {
	c.Legend = append(c.Legend, legendEntry{Class: class, Label: what})
	for i, x := range v {
		bx, bw := c.slot(i, len(v))
		h := c.PlotY + c.PlotH - c.y(x)
		if x > 0 {
			c.Empty = false
			h = max(h, 1)
		}
		val := strconv.FormatFloat(x, 'f', -1, 64)
		c.Bars = append(c.Bars, chartBar{X: bx, Y: c.PlotY + c.PlotH - h, W: max(bw-1, 1), H: h, Bucket: i, Value: val,
			Title: fmt.Sprintf("%s %s: %s", bucketLabel(s, i), what, val)})
	}
}

// line adds a line through the buckets that have a value.
func (c *svgChart) line(s *queuetytype.Series, v []float64, has []bool, class, what string) {
	l := chartLine{Class: class}
	var pts []string
	for i, x := range v {
		if !has[i] {
			continue
		}
		c.Empty = false
		bx, bw := c.slot(i, len(v))
		px, py := bx+bw/2, c.y(x)
		pts = append(pts, fmt.Sprintf("%d,%d", px, py))
		val := strconv.FormatFloat(x, 'f', -1, 64)
		l.Dots = append(l.Dots, chartDot{X: px, Y: py, Bucket: i, Value: val,
			Title: fmt.Sprintf("%s %s: %s", bucketLabel(s, i), what, formatValue(x, c.Unit))})
	}
	l.Points = strings.Join(pts, " ")
	c.Lines = append(c.Lines, l)
	c.Legend = append(c.Legend, legendEntry{Class: class, Label: what})
}

// bucketLabel names bucket i by its start time.
func bucketLabel(s *queuetytype.Series, i int) string {
	return s.Buckets[i].Start.UTC().Format("Jan 2 15:04")
}

// formatValue prints an axis value with its unit: whole numbers for
// counts, 1.5 s for seconds, 250 ms for milliseconds.
func formatValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
		}
		return strconv.FormatFloat(v, 'f', -1, 64) + " ms"
	case "s":
		if v >= 3600 {
			return strconv.FormatFloat(math.Round(v/360)/10, 'f', -1, 64) + " h"
		}
		if v >= 120 {
			return strconv.FormatFloat(math.Round(v/6)/10, 'f', -1, 64) + " min"
		}
		return strconv.FormatFloat(v, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// overviewCharts draws the overview's compact charts: throughput and
// failures of every queue over the last hour, from the same bounded read
// as the charts page.
func (s *server) overviewCharts(ctx context.Context) ([]*svgChart, error) {
	win := chartWindows[0]
	series, err := s.c.MetricSeries(ctx, queuetytype.SeriesQuery{Until: s.seriesUntil(win), Span: win.Span, Buckets: win.Buckets,
		MaxRows: chartRows})
	if err != nil {
		return nil, err
	}
	charts := seriesCharts(series, 720, 120)[:2]
	for _, c := range charts {
		c.ID = "overview-" + c.ID
		c.Compact = true
	}
	return charts, nil
}
