package cli

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/queuety/queuety-go/internal/egress"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func webhookCommand() *Command {
	return &Command{
		Name:    "webhook",
		Summary: "register, list and remove webhooks (HTTP POSTs on job and workflow events)",
		Help: `A webhook is a URL that workers POST a JSON body to when an event happens:
` + strings.Join(queuety.WebhookEvents(), ", ") + `.
The rows are Queuety's webhooks table, shared with Queuety PHP (wp queuety
webhook). Running workers read the table every 30 s.

Each webhook added here gets a signing secret (whsec_...), printed once by
webhook add and webhook rotate-secret and never by webhook list. Workers
sign each POST with it as the Standard Webhooks specification does
(webhook-id, webhook-timestamp and webhook-signature headers), so the
receiver can check that a POST is genuine and recent. Webhooks Queuety PHP
registered have no secret and are sent unsigned until rotate-secret gives
them one.

Workers do not send to loopback, private, link-local (cloud metadata) or
other internal addresses unless their --webhook-allow names them, and do
not follow redirects.`,
		Examples: []string{
			Program + " webhook add job.buried https://hooks.example.com/queuety",
			Program + " webhook list --json",
			Program + " webhook rotate-secret 3",
			Program + " webhook remove 3",
		},
		Sub: []*Command{webhookAddCommand(), webhookListCommand(), webhookRotateCommand(), webhookRemoveCommand()},
	}
}

// webhookJSON is a webhook's --json view.
type webhookJSON struct {
	ID        int64  `json:"id"`
	Event     string `json:"event"`
	URL       string `json:"url"`
	Signed    bool   `json:"signed"`
	CreatedAt string `json:"created_at"`
}

func webhookView(w *queuetytype.Webhook) webhookJSON {
	return webhookJSON{ID: w.ID, Event: w.Event, URL: shownURL(w.URL), Signed: w.Signed, CreatedAt: ts(w.CreatedAt)}
}

// shownURL is a webhook URL as the CLI prints it: with "xxxxx" for the
// password of its user info, if any. A URL that does not parse (Queuety
// PHP stores anything) is not shown, since where its password is cannot
// be told.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return egress.Redact(raw)
	}
	return u.Redacted()
}

// secretNote follows a printed secret.
const secretNote = "Signing secret (shown only now; give it to the receiver, which verifies each POST with it):\n%s\n"

func webhookAddCommand() *Command {
	return &Command{
		Name:     "add",
		Summary:  "register a URL for an event: " + strings.Join(queuety.WebhookEvents(), ", "),
		Args:     "EVENT URL",
		MinArgs:  2,
		MaxArgs:  2,
		Examples: []string{Program + " webhook add workflow.failed https://monitoring.example.com/queuety"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				event, rawURL := args[0], args[1]
				if err := queuety.ValidateWebhook(event, rawURL); err != nil {
					return err // checked before the store is opened
				}
				return onStore(func(e *Env, c *queuety.Client) error {
					w, err := c.AddWebhook(e.Ctx, event, rawURL)
					if err != nil {
						return err
					}
					return printResult(e, map[string]any{"id": w.ID, "event": event, "url": shownURL(rawURL), "secret": w.Secret},
						"Webhook #%d registered for event '%s'.\n"+secretNote, w.ID, event, w.Secret)
				})(e, args)
			}
		},
	}
}

func webhookListCommand() *Command {
	return &Command{
		Name:     "list",
		Summary:  "list the registered webhooks",
		Examples: []string{Program + " webhook list", Program + " webhook list --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onStore(func(e *Env, c *queuety.Client) error {
				hooks, err := c.Webhooks(e.Ctx)
				if err != nil {
					return err
				}
				return printList(e, hooks, webhookView, "No webhooks registered.", "ID\tEVENT\tURL\tSIGNED\tCREATED AT",
					func(w io.Writer, h *queuetytype.Webhook) {
						signed := "no"
						if h.Signed {
							signed = "yes"
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", h.ID, h.Event, shownURL(h.URL), signed, dash(ts(h.CreatedAt)))
					})
			})
		},
	}
}

func webhookRotateCommand() *Command {
	return &Command{
		Name:    "rotate-secret",
		Summary: "give a webhook a new signing secret and print it",
		Help: `Replaces the webhook's signing secret and prints the new one, once. Workers
sign with the new secret from their next read of the table (within 30 s),
so give it to the receiver first (a receiver may accept both while they
change over). A webhook Queuety PHP registered has no secret: this gives it
one, and its POSTs are signed from then on.`,
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " webhook rotate-secret 3"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("webhook", func(e *Env, c *queuety.Client, id int64) error {
				secret, err := c.RotateWebhookSecret(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "secret": secret}, "Webhook #%d has a new secret.\n"+secretNote, id, secret)
			})
		},
	}
}

func webhookRemoveCommand() *Command {
	return &Command{
		Name:     "remove",
		Summary:  "delete a webhook",
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " webhook remove 3"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("webhook", func(e *Env, c *queuety.Client, id int64) error {
				if err := c.RemoveWebhook(e.Ctx, id); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "removed": true}, "Webhook #%d removed.\n", id)
			})
		},
	}
}
