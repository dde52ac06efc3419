package queuety_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// A streaming step stores each chunk as it produces it. Its first attempt
// fails after two chunks; the retry reads them back and resumes after
// them, and the step's output is built from every chunk.
func ExampleStreamChunk() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := builder.Workflow("memo").Then("draft", builder.Retry(2, queuety.BackoffSeconds(1))).
		Dispatch(ctx, q, queuety.State{"words": "durable streams survive crashes"})

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleStep("draft", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		done, err := queuety.StreamedChunks(ctx)
		if err != nil {
			return nil, err
		}
		fmt.Printf("attempt starts with %d chunks\n", len(done))
		info, _ := queuety.JobInfoFrom(ctx)
		words := strings.Fields(s.String("words"))
		for i := len(done); i < len(words); i++ {
			if info.Attempt == 1 && i == 2 {
				return nil, errors.New("connection lost")
			}
			if err := queuety.StreamChunk(ctx, words[i]+" "); err != nil {
				return nil, err
			}
		}
		all, err := queuety.StreamedChunks(ctx)
		return queuety.State{"memo": strings.TrimSpace(strings.Join(all, ""))}, err
	})
	_, _ = w.RunOnce(ctx, time.Minute)
	clock.Advance(time.Minute)
	_, _ = w.RunOnce(ctx, time.Minute)

	st, _ := q.State(ctx, id)
	fmt.Println(st["memo"])
	// Output:
	// attempt starts with 0 chunks
	// attempt starts with 2 chunks
	// durable streams survive crashes
}

// A step records what it resolved and why in its step_completed event,
// beside the state it merges.
func ExampleTraceContext() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := builder.Workflow("publish").Then("load_post").Dispatch(ctx, q, queuety.State{"post_id": 7})

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleStep("load_post", func(ctx context.Context, s queuety.State) (queuety.State, error) {
		_ = queuety.TraceInput(ctx, map[string]any{"resolved": map[string]any{"id": s["post_id"]}})
		_ = queuety.TraceContext(ctx, map[string]any{"ability": "content/load-post"})
		return queuety.State{"title": "Hello", queuety.TraceOutputKey: map[string]any{
			"context": map[string]any{"node_id": "loadPost"},
		}}, nil
	})
	_, _ = w.RunOnce(ctx, time.Minute)

	export, _ := q.ExportWorkflow(ctx, id)
	var doc struct {
		Events []struct {
			Event   string
			Input   any
			Output  any
			Context any
		}
	}
	_ = json.Unmarshal(export, &doc)
	for _, ev := range doc.Events {
		in, _ := json.Marshal(ev.Input)
		out, _ := json.Marshal(ev.Output)
		c, _ := json.Marshal(ev.Context)
		fmt.Printf("%s input=%s output=%s context=%s\n", ev.Event, in, out, c)
	}
	st, _ := q.State(ctx, id)
	fmt.Println(len(st), st["title"])
	// Output:
	// step_started input={"post_id":7} output=null context=[]
	// step_completed input={"resolved":{"id":7}} output={"title":"Hello"} context={"ability":"content/load-post","node_id":"loadPost"}
	// 2 Hello
}

// Old history is deleted in bounded batches: events first, then whole
// finished workflows with their rows.
func ExampleClient_PurgeWorkflows() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()
	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleStep("a", func(context.Context, queuety.State) (queuety.State, error) { return nil, nil })
	for range 3 {
		_, _ = builder.Workflow("nightly").Then("a").Dispatch(ctx, q, nil)
	}
	_, _ = w.RunOnce(ctx, time.Minute)
	clock.Advance(60 * 24 * time.Hour)

	events, _ := q.PruneWorkflowEvents(ctx, 30*24*time.Hour)
	workflows, _ := q.PurgeWorkflows(ctx, 30*24*time.Hour)
	fmt.Println(events, "events,", workflows, "workflows")
	// Output:
	// 6 events, 3 workflows
}
