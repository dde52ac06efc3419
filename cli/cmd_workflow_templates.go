package cli

import (
	"encoding/json"
	"flag"
	"fmt"

	"github.com/queuety/queuety-go/queuety"
)

// templatesFlag adds --templates, the template bundles a command loads.
func templatesFlag(fs *flag.FlagSet) *string {
	return fs.String("templates", "", "a workflow template `path`: a JSON runtime definition bundle, or a directory of *.json bundles")
}

// loadTemplates registers the bundles at path on c.
func loadTemplates(c *queuety.Client, path string) error {
	if path == "" {
		return Usagef("--templates is required: the templates live in the processes that register them, not in the database")
	}
	_, err := c.LoadWorkflowTemplates(path)
	return err
}

func workflowRunCommand() *Command {
	return &Command{
		Name:    "run",
		Summary: "start a workflow from a template by name and print its id",
		Args:    "NAME [JSON]",
		Help: `Starts a workflow from the template NAME, as Queuety's
Queuety::run_workflow() does, with JSON (a JSON object, default {}) as its
initial state, and prints its id. Templates are not stored in the database,
in Queuety PHP or here: --templates names the JSON runtime definition
bundles to load, one file or a directory of *.json files, as
queuety.Client.WorkflowTemplateJSON and the PHP bridge's
QueuetyGo\WorkflowTemplates::export write them. The rows are the ones
Queuety PHP's run_workflow writes for the same template.`,
		Examples: []string{
			Program + ` workflow run onboarding '{"email": "ada@example.com"}' --templates /etc/queuety/templates`,
			Program + ` workflow run generate_content --templates content.json --idempotency-key post-42 --json`,
		},
		MinArgs: 1, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			path := templatesFlag(fs)
			key := fs.String("idempotency-key", "", "start at most one workflow for this `key`; later runs print the first one's id")
			return func(e *Env, args []string) error {
				if _, err := payloadArg(args, 1); err != nil { // checks the JSON
					return err
				}
				var state any
				if len(args) > 1 {
					state = json.RawMessage(args[1]) // keeps the key order, as PHP does
				}
				return withStore(e, func(c *queuety.Client) error {
					if err := loadTemplates(c, *path); err != nil {
						return err
					}
					id, err := c.RunWorkflow(e.Ctx, args[0], state, queuety.IdempotencyKey(*key))
					if err != nil {
						return err
					}
					return printID(e, id)
				})
			}
		},
	}
}

func workflowTemplatesCommand() *Command {
	return &Command{
		Name:    "templates",
		Summary: "list the workflow templates in a template path",
		Examples: []string{
			Program + " workflow templates --templates /etc/queuety/templates",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			path := templatesFlag(fs)
			return func(e *Env, _ []string) error {
				return withStore(e, func(c *queuety.Client) error {
					if err := loadTemplates(c, *path); err != nil {
						return err
					}
					names := c.WorkflowTemplates()
					if e.Globals.JSON {
						return printJSON(e.Stdout, names)
					}
					if len(names) == 0 {
						fmt.Fprintln(e.Stdout, "No templates.")
					}
					for _, n := range names {
						fmt.Fprintln(e.Stdout, n)
					}
					return nil
				})
			}
		},
	}
}
