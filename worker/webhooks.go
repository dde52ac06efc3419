package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuety/queuety-go/internal/egress"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/webhook"
)

// Webhook delivery defaults (see WebhookOptions).
const (
	// WebhookRefreshDefault is how often a running worker re-reads the
	// webhooks table.
	WebhookRefreshDefault = 30 * time.Second
	// WebhookTimeoutDefault bounds one POST, connection included: Queuety
	// PHP's one-second stream timeout.
	WebhookTimeoutDefault = time.Second
	// WebhookQueueDefault is how many POSTs may wait for delivery.
	WebhookQueueDefault = 1000
	// WebhookSendersDefault is how many POSTs are sent at once.
	WebhookSendersDefault = 4
	// WebhookDrainDefault is how long a stopping worker keeps sending the
	// POSTs still queued.
	WebhookDrainDefault = 5 * time.Second
)

// WebhookOptions configures how a worker delivers webhooks (registered
// with queuety.Client.AddWebhook, or by Queuety PHP). A zero field takes
// its default.
//
// When a job completes, fails or is buried, or a workflow fails, in this
// worker, the worker POSTs Queuety's JSON body to each URL registered for
// the event: {"event": ..., "data": {...}, "timestamp": "...Z"}, with
// Content-Type: application/json. A webhook with a secret (every webhook
// queuety.Client.AddWebhook registers) is signed as the Standard Webhooks
// specification says: webhook-id, webhook-timestamp and webhook-signature
// headers, which a receiver checks with webhook.Verify. A webhook Queuety
// PHP registered has no secret and is sent unsigned, as Queuety PHP sends
// it, until queuety.Client.RotateWebhookSecret gives it one.
//
// Where POSTs may go: the worker refuses, when it connects, addresses on
// the machine itself (loopback, unspecified), link-local addresses
// (where cloud metadata services answer) and metadata host names, private
// and unique-local networks, carrier-grade NAT, multicast and reserved
// ranges, and IPv6 forms of these, checked on the address it dials, so a
// name that resolves somewhere else later (DNS rebinding) gains nothing.
// Allow names what it may reach all the same. Redirects are not
// followed: a 3xx answer is a failed delivery. POSTs do not go through
// an HTTP proxy from the environment. A URL that is not http or https
// (a row written by hand or by Queuety PHP, which checks nothing) is
// skipped with a warning.
//
// Log lines about a webhook show its URL without user info or query
// string, which often carry credentials, and never its secret.
//
// Delivery never blocks the claim and
// complete path: POSTs wait in a bounded queue, are sent by a few
// goroutines, each with a short timeout, and are dropped (and logged) when
// the queue is full. Failed deliveries are logged and not retried, as in
// Queuety. With no webhook registered for an event, the event costs one
// atomic load.
//
// As in Queuety, webhooks fire from the worker that records the outcome,
// not from the sweeps: a job buried by stale recovery or an activity
// timeout, or a workflow failed by its deadline, sends nothing.
type WebhookOptions struct {
	// Refresh is how often the worker re-reads the webhooks table
	// (default WebhookRefreshDefault); it also reads it when Run or
	// RunOnce starts. A negative Refresh turns delivery off.
	Refresh time.Duration
	// Timeout bounds each POST (default WebhookTimeoutDefault).
	Timeout time.Duration
	// QueueSize is how many POSTs may wait (default WebhookQueueDefault).
	QueueSize int
	// Senders is how many POSTs are sent at once (default
	// WebhookSendersDefault).
	Senders int
	// Drain is how long Run and RunOnce keep sending queued POSTs when
	// they stop (default WebhookDrainDefault); what is left is dropped.
	Drain time.Duration
	// Allow names the addresses POSTs may reach although they are refused
	// by default: IP addresses ("127.0.0.1"), CIDR prefixes
	// ("10.0.0.0/8", "fd00::/8") or host names ("hooks.internal"), a name
	// allowed whatever it resolves to. For example a receiver on the same
	// machine in development. An entry that is none of these makes Run and
	// RunOnce return an error.
	Allow []string
	// Client sends the POSTs (default: an http.Client with Timeout that
	// applies the address rules above and follows no redirect). A Client
	// given here is used as it is: which addresses it reaches, and
	// whether it follows redirects, is its own affair, and Allow is
	// ignored.
	Client *http.Client
}

// Webhooks configures webhook delivery.
func Webhooks(o WebhookOptions) Option { return func(c *config) { c.webhooks = o } }

// withDefaults fills in the defaults; the error reports a bad Allow
// entry (the options are usable all the same, allowing nothing extra).
func (o WebhookOptions) withDefaults() (WebhookOptions, error) {
	if o.Refresh == 0 {
		o.Refresh = WebhookRefreshDefault
	}
	if o.Timeout <= 0 {
		o.Timeout = WebhookTimeoutDefault
	}
	if o.QueueSize <= 0 {
		o.QueueSize = WebhookQueueDefault
	}
	if o.Senders <= 0 {
		o.Senders = WebhookSendersDefault
	}
	if o.Drain <= 0 {
		o.Drain = WebhookDrainDefault
	}
	var err error
	if o.Client == nil {
		var p *egress.Policy
		if p, err = egress.NewPolicy(o.Allow); err != nil {
			err = fmt.Errorf("worker: webhook allow-list: %w", err)
		}
		o.Client = egress.NewClient(p, o.Timeout)
	}
	return o, err
}

// webhookTarget is one registered webhook as the worker sends to it.
type webhookTarget struct {
	id     int64
	url    string
	secret string // "" for an unsigned webhook
}

// webhookPost is one POST waiting for delivery.
type webhookPost struct {
	event  string
	target webhookTarget
	body   []byte
}

// webhooks delivers a worker's webhooks.
type webhooks struct {
	store driver.Store
	opts  WebhookOptions
	err   error // a bad option: Run and RunOnce return it
	log   *slog.Logger
	clock queuety.Clock
	// urls maps an event to its webhooks; nil until first read.
	urls atomic.Pointer[map[string][]webhookTarget]
	// skipped holds the ids of webhooks skipped for a bad URL, so each is
	// logged once.
	skippedMu sync.Mutex
	skipped   map[int64]bool
	// queue is the running worker's delivery queue; nil when stopped.
	queue atomic.Pointer[chan webhookPost]
	// refreshed, a test hook, is called after each read of the table with
	// the number of webhooks.
	refreshed func(n int)
}

func newWebhooks(e *engine.Engine, cfg config) *webhooks {
	opts, err := cfg.webhooks.withDefaults()
	return &webhooks{store: e.Store(), opts: opts, err: err, log: cfg.logger, clock: e.Clock(),
		skipped: map[int64]bool{}, refreshed: cfg.test.webhooksRefreshed}
}

// start reads the webhooks and starts the senders and the refresh loop;
// the returned function stops them after sending what is queued (for up
// to the drain time).
func (h *webhooks) start(ctx context.Context) (stop func()) {
	if h.opts.Refresh < 0 {
		return func() {}
	}
	h.refresh(ctx)
	q := make(chan webhookPost, h.opts.QueueSize)
	h.queue.Store(&q)
	done := make(chan struct{})
	drainCtx, cancelDrain := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for range h.opts.Senders {
		wg.Go(func() { h.send(drainCtx, q, done) })
	}
	wg.Go(func() {
		t := time.NewTicker(h.opts.Refresh)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h.refresh(drainCtx)
			}
		}
	})
	return func() {
		h.queue.Store(nil)
		close(done)
		timer := time.AfterFunc(h.opts.Drain, cancelDrain)
		wg.Wait()
		timer.Stop()
		cancelDrain()
		if n := len(q); n > 0 {
			h.log.Warn("queuety: webhooks dropped at shutdown: the drain time ran out", "count", n, "drain", h.opts.Drain)
		}
	}
}

// refresh re-reads the webhooks table, with the secrets (one statement
// outside a transaction on a store that can: driver.WebhookReader); on error it
// keeps the list it has. A webhook of a known event whose URL is not an
// http or https URL is skipped, and logged the first time.
func (h *webhooks) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rows []*driver.Webhook
	var err error
	if r, one := h.store.(driver.WebhookReader); one {
		rows, err = r.WebhookListRead(ctx, "")
	} else {
		err = h.store.InTx(ctx, func(tx driver.Tx) (err error) { rows, err = tx.WebhookList(ctx, ""); return err })
	}
	if err != nil {
		h.log.Warn("queuety: read webhooks (keeping the previous list)", "err", err)
		return
	}
	urls := map[string][]webhookTarget{}
	h.skippedMu.Lock()
	for _, w := range rows {
		if err := queuety.ValidateWebhook(w.Event, w.URL); err != nil {
			if !h.skipped[w.ID] && isWebhookEvent(w.Event) {
				h.log.Warn("queuety: webhook skipped: its URL cannot be sent to", "webhook_id", w.ID, "event", w.Event, "err", err)
			}
			h.skipped[w.ID] = true
			continue
		}
		urls[w.Event] = append(urls[w.Event], webhookTarget{id: w.ID, url: w.URL, secret: w.Secret})
	}
	h.skippedMu.Unlock()
	h.urls.Store(&urls)
	if h.refreshed != nil {
		h.refreshed(len(rows))
	}
}

// send delivers queued POSTs until done is closed, then what is still
// queued, until ctx ends.
func (h *webhooks) send(ctx context.Context, q chan webhookPost, done chan struct{}) {
	for {
		select {
		case p := <-q:
			h.post(ctx, p)
			continue
		case <-done:
		}
		for {
			select {
			case p := <-q:
				if ctx.Err() != nil {
					return
				}
				h.post(ctx, p)
			default:
				return
			}
		}
	}
}

// isWebhookEvent reports whether event is one the worker fires.
func isWebhookEvent(event string) bool { return slices.Contains(queuety.WebhookEvents(), event) }

// post sends one POST with the timeout, signed when the webhook has a
// secret, and logs a failure (without the URL's credentials).
func (h *webhooks) post(ctx context.Context, p webhookPost) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.target.url, bytes.NewReader(p.body))
		if err != nil {
			return errors.New("the URL does not parse") // the parser's error shows the whole URL
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "queuety-go")
		if p.target.secret != "" {
			id, at := "msg_"+rand.Text(), h.clock.Now()
			sig, err := webhook.Sign(p.target.secret, id, at, p.body)
			if err != nil {
				return fmt.Errorf("sign: %w", err)
			}
			req.Header.Set(webhook.HeaderID, id)
			req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
			req.Header.Set(webhook.HeaderSignature, sig)
		}
		resp, err := h.opts.Client.Do(req)
		if err != nil {
			return egress.RedactError(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode <= 399:
			return fmt.Errorf("status %s: redirects are not followed (register the URL that answers itself)", resp.Status)
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}()
	if err == nil {
		return
	}
	attrs := []any{"webhook_id", p.target.id, "event", p.event, "url", egress.Redact(p.target.url), "err", err}
	if errors.Is(err, egress.ErrDenied) {
		attrs = append(attrs, "hint", "to send to this address, name it in the worker's webhook allow-list (WebhookOptions.Allow, work --webhook-allow)")
	}
	h.log.Warn("queuety: webhook delivery failed", attrs...)
}

// observe queues the webhooks of a recorded result: job.completed for a
// plain job's success, job.failed for an attempt that will be retried,
// job.buried (and workflow.failed when that failed the workflow) for a
// final failure. recordErr is the error recording the result returned.
func (h *webhooks) observe(r *engine.Result, recordErr error) {
	urls := h.urls.Load()
	if urls == nil || len(*urls) == 0 || recordErr != nil {
		return
	}
	j := r.Claimed.Job
	switch r.Notice.Job {
	case driver.JobCompleted:
		if !r.Claimed.IsStep() {
			h.notify(*urls, queuety.WebhookJobCompleted, "job_id", j.ID, "handler", j.Handler, "queue", j.Queue,
				"duration_ms", r.Duration.Milliseconds())
		}
	case driver.JobPending:
		h.notify(*urls, queuety.WebhookJobFailed, "job_id", j.ID, "handler", j.Handler, "queue", j.Queue,
			"attempt", int64(j.Attempts), "error_message", r.Notice.ErrorMessage)
	case driver.JobBuried:
		h.notify(*urls, queuety.WebhookJobBuried, "job_id", j.ID, "handler", j.Handler, "queue", j.Queue,
			"error_message", r.Notice.ErrorMessage)
		if r.Notice.WorkflowFailed {
			h.notify(*urls, queuety.WebhookWorkflowFailed, "workflow_id", j.WorkflowID, "job_id", j.ID, "handler", j.Handler,
				"error_message", r.Notice.ErrorMessage)
		}
	}
}

// notify queues one POST per webhook registered for event, with Queuety's
// body: the event, data (the key-value pairs kv, in order) and the time,
// encoded as PHP's json_encode does. A full queue drops the POST.
func (h *webhooks) notify(urls map[string][]webhookTarget, event string, kv ...any) {
	targets := urls[event]
	if len(targets) == 0 {
		return
	}
	qp := h.queue.Load()
	if qp == nil {
		return // the worker has stopped: a handler that outlived it reported late
	}
	data := phpjson.NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		data.Set(kv[i].(string), kv[i+1])
	}
	body, err := webhookBody(event, data, h.clock.Now())
	if err != nil {
		h.log.Warn("queuety: encode webhook body", "event", event, "err", err)
		return
	}
	for _, t := range targets {
		select {
		case *qp <- webhookPost{event: event, target: t, body: body}:
		default:
			h.log.Warn("queuety: webhook dropped: the delivery queue is full", "webhook_id", t.id, "event", event,
				"url", egress.Redact(t.url), "queue_size", h.opts.QueueSize)
		}
	}
}

// webhookBody is the JSON body a webhook POST carries, as Queuety PHP's
// WebhookNotifier writes it: {"event":...,"data":...,"timestamp":...},
// with the time in UTC as "2006-01-02T15:04:05Z" and json_encode's
// escaping.
func webhookBody(event string, data *phpjson.Object, at time.Time) ([]byte, error) {
	doc := phpjson.NewObject()
	doc.Set("event", event)
	doc.Set("data", data)
	doc.Set("timestamp", at.UTC().Format("2006-01-02T15:04:05Z"))
	b, err := phpjson.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("queuety: webhook body for %s: %w", event, err)
	}
	return b, nil
}
