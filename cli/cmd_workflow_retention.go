package cli

import (
	"context"
	"flag"
	"time"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
)

// This file holds the retention commands of workflow history (pruning old
// workflow events, purging finished workflows) and purgeCommand, which job
// purge and log purge share with them.

func workflowPruneEventsCommand() *Command {
	return purgeCommand(purgeSpec{
		name: "prune-events", summary: "delete workflow events created longer ago than --older-than",
		help: `Queuety's WorkflowEventLog::prune. --older-than takes a number of days, as
Queuety takes it, or a duration (12h, 7d). Rows are deleted in batches of
1000. The workflows stay; rewinding one to a step whose events are gone
fails, and its timeline and trace show what is left.`,
		examples: []string{Program + " workflow prune-events --older-than 30", Program + " workflow prune-events --older-than 12h --json"},
		noun:     "workflow event", what: "workflow events",
		del: (*queuety.Client).PruneWorkflowEvents, key: "created_before", phrase: "created before",
	})
}

func workflowPurgeCommand() *Command {
	return purgeCommand(purgeSpec{
		name: "purge", summary: "delete workflows that finished longer ago than --older-than, with their rows",
		help: `Deletes completed, failed and cancelled workflows whose completed_at (or
failed_at) is older than --older-than, with their jobs, events, streaming
chunks, artifacts, signals, the dependencies they waited on and their
dispatch keys; running, paused and waiting workflows are never touched,
and log rows stay for "log purge". --older-than takes a number of days or a
duration (12h, 7d). Workflows are deleted 100 a transaction, oldest first.`,
		examples: []string{Program + " workflow purge --older-than 30", Program + " workflow purge --older-than 12h --json"},
		noun:     "workflow", what: "finished workflows",
		del: (*queuety.Client).PurgeWorkflows, key: "finished_before", phrase: "that finished before",
	})
}

// purgeSpec describes a command that deletes rows older than --older-than.
type purgeSpec struct {
	name, summary, help string
	examples            []string
	// defaultAge applies without --older-than (0: the flag is required).
	defaultAge time.Duration
	// noun names one row in the report ("log row"); what names the rows
	// in the flag's usage ("log rows").
	noun, what string
	del        func(*queuety.Client, context.Context, time.Duration) (int64, error)
	// key is the JSON report's cutoff field; phrase comes before the
	// cutoff in the text report ("created before").
	key, phrase string
}

// purgeCommand is the command s describes: it deletes with s.del and
// reports how many rows went and the cutoff.
func purgeCommand(s purgeSpec) *Command {
	return &Command{
		Name:     s.name,
		Summary:  s.summary,
		Help:     s.help,
		Examples: s.examples,
		Setup: func(fs *flag.FlagSet) RunFunc {
			olderThan := olderThanFlag(fs, s.what, s.defaultAge)
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
				n, err := s.del(c, e.Ctx, age)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"deleted": n, s.key: ts(before)},
					"Deleted %s "+s.phrase+" %s.\n", plural(n, s.noun), ts(before))
			}
		},
	}
}
