package queuety

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/queuety/queuety-go/internal/egress"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/webhook"
)

// The webhook events, exactly Queuety's set. A worker POSTs to the URLs
// registered for an event when it happens (see package worker).
const (
	// WebhookJobCompleted fires when a plain job (not a workflow step)
	// completes.
	WebhookJobCompleted = "job.completed"
	// WebhookJobFailed fires when an attempt of a job or step fails and
	// will be retried.
	WebhookJobFailed = "job.failed"
	// WebhookJobBuried fires when a job or step fails for good.
	WebhookJobBuried = "job.buried"
	// WebhookWorkflowFailed fires when a buried step fails its workflow.
	WebhookWorkflowFailed = "workflow.failed"
)

// MaxWebhookURLLength is the longest webhook URL, in characters (Queuety's
// url VARCHAR(2048)).
const MaxWebhookURLLength = 2048

// WebhookEvents returns the events a webhook can be registered for.
func WebhookEvents() []string {
	return []string{WebhookJobCompleted, WebhookJobFailed, WebhookJobBuried, WebhookWorkflowFailed}
}

// ValidateWebhook checks an event name and a URL as AddWebhook does: the
// event must be one of WebhookEvents, and the URL an absolute http or https
// URL with a host, at most MaxWebhookURLLength characters. Errors wrap
// ErrInvalidArgument and show the URL without its user info and query
// string. Where the URL points is checked by the worker when it connects
// (see worker.WebhookOptions.Allow), not here.
func ValidateWebhook(event, rawURL string) error {
	if !slices.Contains(WebhookEvents(), event) {
		return invalidf("unknown webhook event %q (known: %s)", event, strings.Join(WebhookEvents(), ", "))
	}
	return validateWebhookURL(rawURL)
}

// validateWebhookURL is ValidateWebhook's URL check.
func validateWebhookURL(rawURL string) error {
	shown := egress.Redact(rawURL)
	if strings.TrimSpace(rawURL) != rawURL || rawURL == "" {
		return invalidf("webhook URL %q is empty or has surrounding spaces", shown)
	}
	if n := utf8.RuneCountInString(rawURL); n > MaxWebhookURLLength {
		return invalidf("webhook URL is %d characters long; the limit is %d", n, MaxWebhookURLLength)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return invalidf("webhook URL does not parse as a URL") // url.Parse's error would show the whole URL
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalidf("webhook URL %q must start with http:// or https://", shown)
	}
	if u.Host == "" || u.Hostname() == "" {
		return invalidf("webhook URL %q has no host", shown)
	}
	return nil
}

// AddWebhook registers url to receive an HTTP POST whenever event happens
// in a worker (Queuety's register_webhook) and returns the webhook, with
// the new secret its POSTs are signed with (see package webhook): give
// Secret to the receiver, which verifies each POST with it. The secret is
// returned only here and by RotateWebhookSecret; Webhooks never returns
// it. Several webhooks may share an event, and the same URL may be
// registered twice; each registration is one POST. Invalid input returns
// an error wrapping ErrInvalidArgument and writes nothing.
//
// The URL is not resolved here: a worker refuses, when it connects,
// addresses on the machine itself, private networks and cloud metadata
// services unless its allow-list names them (worker.WebhookOptions.Allow).
//
// Workers read the webhooks when they start and then every
// worker.WebhookRefreshDefault (30 s), so a running worker notices a new
// webhook within that time.
func (c *Client) AddWebhook(ctx context.Context, event, url string) (*queuetytype.Webhook, error) {
	if err := ValidateWebhook(event, url); err != nil {
		return nil, fmt.Errorf("queuety: add webhook: %w", err)
	}
	w := &queuetytype.Webhook{Event: event, URL: url, CreatedAt: c.engine.Clock().Now(), Secret: webhook.NewSecret()}
	err := c.store.InTx(ctx, func(tx driver.Tx) error { return tx.WebhookInsert(ctx, w) })
	if err != nil {
		return nil, wrap("add webhook", err)
	}
	return w, nil
}

// RotateWebhookSecret gives a webhook a new signing secret and returns it;
// POSTs sent from then on are signed with it alone, so give it to the
// receiver first. A webhook Queuety PHP registered has no secret and is
// sent unsigned until it gets one here. It returns ErrNotFound when there
// is no webhook with that id.
func (c *Client) RotateWebhookSecret(ctx context.Context, id int64) (string, error) {
	secret := webhook.NewSecret()
	var found bool
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) {
		found, err = tx.WebhookSetSecret(ctx, id, secret, c.engine.Clock().Now())
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("webhook %d: %w", id, queuetytype.ErrNotFound)
	}
	if err != nil {
		return "", wrap("rotate webhook secret", err)
	}
	return secret, nil
}

// Webhooks lists the registered webhooks, Queuety PHP's included, by id.
// Secret is left empty; Signed tells which webhooks have one.
func (c *Client) Webhooks(ctx context.Context) ([]*queuetytype.Webhook, error) {
	var out []*queuetytype.Webhook
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { out, err = tx.WebhookList(ctx, ""); return err })
	for _, w := range out {
		w.Secret = ""
	}
	return out, wrap("list webhooks", err)
}

// RemoveWebhook deletes a webhook and its secret. It returns ErrNotFound
// when there is no webhook with that id.
func (c *Client) RemoveWebhook(ctx context.Context, id int64) error {
	var found bool
	err := c.store.InTx(ctx, func(tx driver.Tx) (err error) { found, err = tx.WebhookDelete(ctx, id); return err })
	if err == nil && !found {
		err = fmt.Errorf("webhook %d: %w", id, queuetytype.ErrNotFound)
	}
	return wrap("remove webhook", err)
}
