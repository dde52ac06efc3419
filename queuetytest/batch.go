package queuetytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// BatchSource is a Source that lists batches too: a *Kit or a
// *queuety.Client.
type BatchSource interface {
	Source
	ListBatches(ctx context.Context, f queuetytype.BatchFilter) ([]*queuety.Batch, error)
}

// Batched is a dispatched batch and its jobs, oldest first: what Queuety
// PHP's assert_batched hands its callback.
type Batched struct {
	Batch *queuety.Batch
	Jobs  []*queuetytype.Job
}

// Handlers returns the handler of each of the batch's jobs, in order.
func (b Batched) Handlers() []string {
	out := make([]string, len(b.Jobs))
	for i, j := range b.Jobs {
		out[i] = j.Handler
	}
	return out
}

// ListBatches lists batches through the kit's client, newest first; it
// makes a Kit a BatchSource.
func (k *Kit) ListBatches(ctx context.Context, f queuetytype.BatchFilter) ([]*queuety.Batch, error) {
	return k.client.ListBatches(ctx, f)
}

// Batches returns every batch dispatched so far, oldest first, with its
// jobs. It fails t only when the store cannot be read.
func Batches(t testing.TB, src BatchSource) []Batched {
	t.Helper()
	out, err := listBatched(context.Background(), src)
	if err != nil {
		t.Fatalf("queuetytest: Batches: %v", err)
	}
	return out
}

// RequireBatched fails t unless a batch was dispatched (Queuety PHP's
// assert_batched) for which match reports true (any batch with a nil
// match), and returns the oldest such batch. The message lists every
// batch dispatched.
func RequireBatched(t testing.TB, src BatchSource, match func(b Batched) bool) Batched {
	t.Helper()
	all, err := listBatched(context.Background(), src)
	if err != nil {
		t.Fatalf("queuetytest: RequireBatched: %v", err)
		return Batched{}
	}
	if len(all) == 0 {
		t.Fatalf("queuetytest: RequireBatched: no batches were dispatched")
		return Batched{}
	}
	for _, b := range all {
		if match == nil || match(b) {
			return b
		}
	}
	t.Fatalf("queuetytest: RequireBatched: %d batches were dispatched, none matching:\n%s", len(all), formatBatches(all))
	return Batched{}
}

// listBatched reads every batch, oldest first, with its jobs.
func listBatched(ctx context.Context, src BatchSource) ([]Batched, error) {
	var batches []*queuety.Batch
	f := queuetytype.BatchFilter{Limit: 1000}
	for {
		page, err := src.ListBatches(ctx, f)
		if err != nil {
			return nil, err
		}
		batches = append(batches, page...)
		if len(page) < f.Limit {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	slices.Reverse(batches) // listed newest first
	jobs, err := listJobs(ctx, src, queuetytype.JobFilter{})
	if err != nil {
		return nil, err
	}
	byBatch := map[int64][]*queuetytype.Job{}
	for _, j := range jobs {
		if j.BatchID != 0 {
			byBatch[j.BatchID] = append(byBatch[j.BatchID], j)
		}
	}
	out := make([]Batched, len(batches))
	for i, b := range batches {
		out[i] = Batched{Batch: b, Jobs: byBatch[b.ID]}
	}
	return out, nil
}

// formatBatches lists batches one a line: id, name, and their jobs'
// handlers.
func formatBatches(all []Batched) string {
	var sb strings.Builder
	for _, b := range all {
		name := b.Batch.Name
		if name == "" {
			name = "(unnamed)"
		}
		fmt.Fprintf(&sb, "  batch %d %s: %d jobs [%s]\n", b.Batch.ID, name, len(b.Jobs), strings.Join(b.Handlers(), ", "))
	}
	return sb.String()
}
