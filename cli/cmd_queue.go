package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func queueCommand() *Command {
	return &Command{
		Name:    "queue",
		Summary: "pause, resume and list queues",
		Examples: []string{
			Program + " queue pause emails",
			Program + " queue resume emails",
			Program + " queue list",
		},
		Sub: []*Command{
			queuePauseCommand(true),
			queuePauseCommand(false),
			{
				Name:     "list",
				Summary:  "list queues with their job counts and paused state",
				Examples: []string{Program + " queue list", Program + " queue list --json"},
				Setup: func(fs *flag.FlagSet) RunFunc {
					return onStore(func(e *Env, c *queuety.Client) error {
						rows, err := queueRows(e.Ctx, c)
						if err != nil {
							return err
						}
						return printList(e, rows, func(q *queueRow) *queueRow { return q }, "No queues: no jobs and no paused queues.",
							"QUEUE\tSTATE\tPAUSED AT\tPENDING\tPROCESSING\tTOTAL JOBS",
							func(w io.Writer, q *queueRow) {
								state := "active"
								if q.Paused {
									state = "paused"
								}
								fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\n", q.Queue, state, dash(q.PausedAt), q.Pending, q.Processing, q.Total)
							})
					})
				},
			},
		},
	}
}

func queuePauseCommand(pause bool) *Command {
	name, summary, done := "resume", "let workers claim a paused queue's jobs again", "resumed"
	help := `The queue must be known: it has jobs, or a paused or resumed state row. A
name with neither (a typo, say) is an error.`
	if pause {
		name, summary, done = "pause", "stop workers from claiming a queue's jobs (running jobs finish)", "paused"
		help = `The queue must be known: it has jobs, or a paused or resumed state row. A
name with neither (a typo, say) is an error, because pausing it would
silently create a paused queue nobody uses. --force pauses it anyway, to
hold its jobs from the moment they arrive.`
	}
	return &Command{
		Name:     name,
		Summary:  summary,
		Args:     "NAME",
		Help:     help,
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " queue " + name + " emails"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			force := new(bool)
			if pause {
				force = fs.Bool("force", false, "pause a queue that has no jobs and no state yet (pause it ahead of time)")
			}
			return func(e *Env, args []string) error {
				q := args[0]
				if strings.TrimSpace(q) == "" {
					return Usagef("queue NAME is empty")
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				if !*force {
					known, err := queueKnown(e.Ctx, c, q)
					if err != nil {
						return err
					}
					if !known {
						hint := "queue list shows the queues"
						if pause {
							hint += "; --force pauses it ahead of its first job"
						}
						return fmt.Errorf("queue %q: %w: it has no jobs and no paused or resumed state (%s)", q, queuetytype.ErrNotFound, hint)
					}
				}
				if pause {
					err = c.PauseQueue(e.Ctx, q)
				} else {
					err = c.ResumeQueue(e.Ctx, q)
				}
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"queue": q, "paused": pause}, "Queue %s %s.\n", q, done)
			}
		},
	}
}

// queueKnown reports whether a queue has a state row (paused or resumed)
// or at least one job.
func queueKnown(ctx context.Context, c *queuety.Client, queue string) (bool, error) {
	states, err := c.QueueStates(ctx)
	if err != nil {
		return false, err
	}
	for _, st := range states {
		if st.Queue == queue {
			return true, nil
		}
	}
	jobs, err := c.ListJobs(ctx, driver.JobFilter{Queue: queue, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(jobs) > 0, nil
}
