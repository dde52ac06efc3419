package queuety_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/queuety/queuety-go/builder"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/worker"
)

// A webhook for job.buried: the worker POSTs Queuety's JSON body to it when
// a job fails for good, signed with the webhook's secret (the receiver
// checks it with webhook.Verify). The receiver here listens on 127.0.0.1,
// which a worker reaches only because its allow-list names it.
func ExampleClient_AddWebhook() {
	ctx := context.Background()
	clock := queuety.NewFakeClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithClock(clock), queuety.WithLogger(quiet()))
	defer q.Close()

	got := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- fmt.Sprintf("signed: %t\n%s %s", r.Header.Get("webhook-signature") != "", r.Header.Get("Content-Type"), body)
	}))
	defer hook.Close()
	h, err := q.AddWebhook(ctx, queuety.WebhookJobBuried, hook.URL)
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Secret[:6]) // whsec_...: give it to the receiver
	if _, err := q.AddWebhook(ctx, "job.exploded", hook.URL); err != nil {
		fmt.Println(errors.Is(err, queuetytype.ErrInvalidArgument))
	}

	_, _ = q.Dispatch(ctx, "send_email", nil)
	w := worker.New(q, worker.WithLogger(quiet()), worker.Webhooks(worker.WebhookOptions{Allow: []string{"127.0.0.1"}}))
	w.HandleJob("send_email", func(context.Context, queuety.Payload) error {
		return queuety.NonRetryable(errors.New("smtp/relay refused"))
	})
	_, _ = w.RunOnce(ctx, time.Minute) // returns once the POST is sent
	fmt.Println(<-got)
	// Output:
	// whsec_
	// true
	// signed: true
	// application/json {"event":"job.buried","data":{"job_id":1,"handler":"send_email","queue":"default","error_message":"smtp\/relay refused"},"timestamp":"2030-01-01T09:00:00Z"}
}

// A step stores an artifact for its workflow; the client reads it back.
func ExamplePutArtifact() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	id, _ := builder.Workflow("brief").Then("draft").Dispatch(ctx, q, nil)

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleStep("draft", func(ctx context.Context, _ queuety.State) (queuety.State, error) {
		err := queuety.PutArtifact(ctx, "outline", []string{"intro", "pricing"},
			queuety.ArtifactMetadata(map[string]any{"source": "planner"}))
		if err != nil {
			return nil, err
		}
		return nil, queuety.PutArtifact(ctx, "draft", "# Pricing brief", queuety.ArtifactKind("markdown"))
	})
	_, _ = w.RunOnce(ctx, time.Minute)

	list, _ := q.Artifacts(ctx, id, true)
	for _, a := range list {
		fmt.Printf("%s (%s, step %d): %v %v\n", a.Key, a.Kind, *a.StepIndex, a.Content, a.Metadata)
	}
	// Output:
	// draft (markdown, step 0): # Pricing brief map[]
	// outline (json, step 0): [intro pricing] map[source:planner]
}
