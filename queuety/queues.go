package queuety

import (
	"context"
	"sort"
	"time"

	"github.com/queuety/queuety-go/queuetytype"
)

// QueueSummary is one queue's jobs by status and its paused flag.
type QueueSummary struct {
	Queue                                                 string
	Pending, Processing, Completed, Failed, Buried, Total int64
	Paused                                                bool
	PausedAt                                              time.Time
}

// QueueSummaries returns every queue that has jobs or is paused, with its
// job counts by status, sorted by name.
func (c *Client) QueueSummaries(ctx context.Context) ([]*QueueSummary, error) {
	counts, err := c.Counts(ctx)
	if err != nil {
		return nil, err
	}
	states, err := c.QueueStates(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*QueueSummary{}
	get := func(name string) *QueueSummary {
		q := byName[name]
		if q == nil {
			q = &QueueSummary{Queue: name}
			byName[name] = q
		}
		return q
	}
	for _, qc := range counts {
		q := get(qc.Queue)
		switch qc.Status {
		case queuetytype.JobPending:
			q.Pending += qc.Count
		case queuetytype.JobProcessing:
			q.Processing += qc.Count
		case queuetytype.JobCompleted:
			q.Completed += qc.Count
		case queuetytype.JobFailed:
			q.Failed += qc.Count
		case queuetytype.JobBuried:
			q.Buried += qc.Count
		}
		q.Total += qc.Count
	}
	for _, st := range states {
		if st.Paused {
			q := get(st.Queue)
			q.Paused, q.PausedAt = true, st.PausedAt
		}
	}
	out := make([]*QueueSummary, 0, len(byName))
	for _, q := range byName {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}
