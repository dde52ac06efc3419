package ui

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// jobStatuses and workflowStatuses are listed in the order pages show them.
var (
	jobStatuses      = []queuetytype.JobStatus{queuetytype.JobPending, queuetytype.JobProcessing, queuetytype.JobCompleted, queuetytype.JobFailed, queuetytype.JobBuried}
	workflowStatuses = []queuetytype.WorkflowStatus{queuetytype.WorkflowRunning, queuetytype.WorkflowWaitingForSignal,
		queuetytype.WorkflowWaitingForWorkflows, queuetytype.WorkflowPaused, queuetytype.WorkflowCompleted, queuetytype.WorkflowFailed, queuetytype.WorkflowCancelled}
)

// Bounds on what one page reads.
const (
	// throughputRows caps the completed log rows the overview reads for
	// its throughput columns; a busier window shows "at least".
	throughputRows = 20000
	// maxOverviewQueues is how many queues the overview lists, in name
	// order; it says how many more there are (its totals count them all).
	maxOverviewQueues = 100
)

// queueRow is one queue on the overview.
type queueRow struct {
	Name                                                  string
	Pending, Processing, Completed, Failed, Buried, Total int64
	Paused                                                bool
	PausedAt                                              time.Time
	// Done counts completed log rows within the throughput window;
	// DoneCapped says the read hit throughputRows, so Done is a floor.
	Done       int64
	DoneCapped bool
	Spark      *sparkline
	// OldestDue is how long the longest-waiting due pending job has been
	// due; HasDue is false when none is due.
	OldestDue time.Duration
	HasDue    bool
}

// PerMinute is the queue's mean throughput over the window.
func (q *queueRow) PerMinute(window time.Duration) string {
	return fmt.Sprintf("%.1f", float64(q.Done)/window.Minutes())
}

// statusCount is a status and how many rows have it.
type statusCount struct {
	Status string
	Count  int64
}

// overviewData is what the overview shows.
type overviewData struct {
	Store  queuetytype.StoreInfo
	Queues []*queueRow
	// MoreQueues counts the queues past maxOverviewQueues, not listed.
	MoreQueues int
	Totals     queueRow
	Workflows  []statusCount
	WfTotal    int64
	Schedules  struct {
		Enabled, Disabled int64
		NextDue           time.Time
	}
	Window time.Duration
	Now    time.Time
	Charts []*svgChart // the last hour's throughput and failures (charts.go)
}

// overview reads everything the overview shows.
func (s *server) overview(ctx context.Context) (*overviewData, error) {
	c, now := s.c, s.opts.Clock.Now()
	d := &overviewData{Store: c.StoreInfo(), Window: s.opts.ThroughputWindow, Now: now}
	sums, err := c.QueueSummaries(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*queueRow{}
	get := func(name string) *queueRow {
		q := byName[name]
		if q == nil {
			q = &queueRow{Name: name}
			byName[name] = q
		}
		return q
	}
	for _, sum := range sums {
		q := get(sum.Queue)
		q.Pending, q.Processing, q.Completed, q.Failed, q.Buried, q.Total = sum.Pending, sum.Processing, sum.Completed, sum.Failed, sum.Buried, sum.Total
		q.Paused, q.PausedAt = sum.Paused, sum.PausedAt
	}
	if err := s.throughput(ctx, now, get); err != nil {
		return nil, err
	}
	due, err := s.c.OldestDueAges(ctx)
	if err != nil {
		return nil, err
	}
	for name, age := range due {
		q := get(name)
		q.OldestDue, q.HasDue = age, true
	}
	for _, q := range byName {
		d.Queues = append(d.Queues, q)
		t := &d.Totals
		t.Pending += q.Pending
		t.Processing += q.Processing
		t.Completed += q.Completed
		t.Failed += q.Failed
		t.Buried += q.Buried
		t.Total += q.Total
		t.Done += q.Done
		t.DoneCapped = t.DoneCapped || q.DoneCapped
	}
	sort.Slice(d.Queues, func(i, j int) bool { return d.Queues[i].Name < d.Queues[j].Name })
	if len(d.Queues) > maxOverviewQueues {
		d.MoreQueues = len(d.Queues) - maxOverviewQueues
		d.Queues = d.Queues[:maxOverviewQueues]
	}

	wc, err := c.WorkflowCounts(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range workflowStatuses {
		d.Workflows = append(d.Workflows, statusCount{Status: string(st), Count: wc[st]})
		d.WfTotal += wc[st]
	}
	var sum *driver.ScheduleSummary
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { sum, err = tx.ScheduleSummary(ctx); return err }); err != nil {
		return nil, err
	}
	d.Schedules.Enabled, d.Schedules.Disabled, d.Schedules.NextDue = sum.Enabled, sum.Disabled, sum.NextRun
	return d, nil
}

// throughput counts the completed log rows of the window per queue, in
// one-minute buckets (newest last), and sets Done and Spark.
func (s *server) throughput(ctx context.Context, now time.Time, get func(string) *queueRow) error {
	window := s.opts.ThroughputWindow
	logs, err := s.c.Logs(ctx, queuetytype.LogFilter{Event: queuetytype.LogCompleted, Since: now.Add(-window), Limit: throughputRows, Newest: true})
	if err != nil {
		return err
	}
	minutes := int(window / time.Minute)
	buckets := map[string][]int64{}
	for _, l := range logs {
		q := l.Queue
		if q == "" {
			q = queuetytype.DefaultQueue
		}
		b := buckets[q]
		if b == nil {
			b = make([]int64, minutes)
			buckets[q] = b
		}
		age := max(int(now.Sub(l.CreatedAt)/time.Minute), 0)
		if age < minutes {
			b[minutes-1-age]++
		}
	}
	capped := len(logs) >= throughputRows
	for name, b := range buckets {
		q := get(name)
		for _, n := range b {
			q.Done += n
		}
		q.DoneCapped = capped
		q.Spark = newSparkline(b)
	}
	return nil
}

// sparkline is a bar chart of per-minute counts, drawn as inline SVG.
type sparkline struct {
	Width, Height int
	Bars          []sparkBar
}

// sparkBar is one minute of a sparkline.
type sparkBar struct {
	X, Y, W, H int
	Title      string
}

// newSparkline draws counts, oldest first, one bar per minute.
func newSparkline(counts []int64) *sparkline {
	const barW, gap, height = 4, 1, 22
	var peak int64
	for _, n := range counts {
		peak = max(peak, n)
	}
	sp := &sparkline{Width: len(counts) * (barW + gap), Height: height}
	for i, n := range counts {
		h := 1
		if peak > 0 && n > 0 {
			h = max(2, int(n*height/peak))
		}
		ago := len(counts) - 1 - i
		sp.Bars = append(sp.Bars, sparkBar{X: i * (barW + gap), Y: height - h, W: barW, H: h,
			Title: fmt.Sprintf("%d completed, %d–%d min ago", n, ago+1, ago)})
	}
	return sp
}
