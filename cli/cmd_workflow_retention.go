package cli

import (
	"context"
	"flag"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
)

// This file holds the retention commands of workflow history: pruning old
// workflow events and purging finished workflows.

func workflowPruneEventsCommand() *Command {
	return retentionCommand("prune-events", "delete workflow events created longer ago than --older-than",
		`Queuety's WorkflowEventLog::prune. --older-than takes a number of days, as
Queuety takes it, or a duration (12h, 7d). Rows are deleted in batches of
1000. The workflows stay; rewinding one to a step whose events are gone
fails, and its timeline and trace show what is left.`,
		"workflow event", "workflow events",
		(*queuety.Client).PruneWorkflowEvents, "created_before", "created before")
}

func workflowPurgeCommand() *Command {
	return retentionCommand("purge", "delete workflows that finished longer ago than --older-than, with their rows",
		`Deletes completed, failed and cancelled workflows whose completed_at (or
failed_at) is older than --older-than, with their jobs, events, streaming
chunks, artifacts, signals, the dependencies they waited on and their
dispatch keys; running, paused and waiting workflows are never touched,
and log rows stay for "log purge". --older-than takes a number of days or a
duration (12h, 7d). Workflows are deleted 100 a transaction, oldest first.`,
		"workflow", "finished workflows",
		(*queuety.Client).PurgeWorkflows, "finished_before", "that finished before")
}

// retentionCommand is a command that deletes rows older than --older-than
// with del and reports how many.
func retentionCommand(name, summary, help, noun, what string,
	del func(*queuety.Client, context.Context, time.Duration) (int64, error), key, phrase string) *Command {
	return &Command{
		Name:    name,
		Summary: summary,
		Help:    help,
		Examples: []string{Program + " workflow " + name + " --older-than 30",
			Program + " workflow " + name + " --older-than 12h --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			olderThan := olderThanFlag(fs, what, 0)
			return func(e *Env, _ []string) error {
				age, err := olderThan()
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				before := clientseam.Clock(c).Now().Add(-age)
				n, err := del(c, e.Ctx, age)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"deleted": n, key: ts(before)},
					"Deleted %s "+phrase+" %s.\n", plural(n, noun), ts(before))
			}
		},
	}
}
