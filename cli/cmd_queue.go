package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/queuety/queuety-go/queuety"
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
	if pause {
		name, summary, done = "pause", "stop workers from claiming a queue's jobs (running jobs finish)", "paused"
	}
	return &Command{
		Name:     name,
		Summary:  summary,
		Args:     "NAME",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " queue " + name + " emails"},
		Setup: func(fs *flag.FlagSet) RunFunc {
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
