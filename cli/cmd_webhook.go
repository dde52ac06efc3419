package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/queuety/queuety-go/queuety"
)

func webhookCommand() *Command {
	return &Command{
		Name:    "webhook",
		Summary: "register, list and remove webhooks (HTTP POSTs on job and workflow events)",
		Help: `A webhook is a URL that workers POST a JSON body to when an event happens:
` + strings.Join(queuety.WebhookEvents(), ", ") + `.
The rows are Queuety's webhooks table, shared with Queuety PHP (wp queuety
webhook). Running workers read the table every 30 s.`,
		Examples: []string{
			Program + " webhook add job.buried https://hooks.example.com/queuety",
			Program + " webhook list --json",
			Program + " webhook remove 3",
		},
		Sub: []*Command{webhookAddCommand(), webhookListCommand(), webhookRemoveCommand()},
	}
}

// webhookJSON is a webhook's --json view.
type webhookJSON struct {
	ID        int64  `json:"id"`
	Event     string `json:"event"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
}

func webhookView(w *queuety.Webhook) webhookJSON {
	return webhookJSON{ID: w.ID, Event: w.Event, URL: w.URL, CreatedAt: ts(w.CreatedAt)}
}

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
				event, url := args[0], args[1]
				if err := queuety.ValidateWebhook(event, url); err != nil {
					return err // checked before the store is opened
				}
				return onStore(func(e *Env, c *queuety.Client) error {
					id, err := c.AddWebhook(e.Ctx, event, url)
					if err != nil {
						return err
					}
					return printResult(e, map[string]any{"id": id, "event": event, "url": url},
						"Webhook #%d registered for event '%s'.\n", id, event)
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
				return printList(e, hooks, webhookView, "No webhooks registered.", "ID\tEVENT\tURL\tCREATED AT",
					func(w io.Writer, h *queuety.Webhook) {
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", h.ID, h.Event, h.URL, dash(ts(h.CreatedAt)))
					})
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
