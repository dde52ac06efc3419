package cli

import (
	"flag"
	"fmt"
	"strings"
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
					return func(e *Env, _ []string) error {
						c, err := e.Open()
						if err != nil {
							return err
						}
						defer c.Close()
						rows, err := queueRows(e.Ctx, c)
						if err != nil {
							return err
						}
						if e.Globals.JSON {
							return printJSON(e.Stdout, nonNil(rows))
						}
						if len(rows) == 0 {
							fmt.Fprintln(e.Stdout, "No queues: no jobs and no paused queues.")
							return nil
						}
						tw := newTable(e.Stdout)
						fmt.Fprintln(tw, "QUEUE\tSTATE\tPAUSED AT\tPENDING\tPROCESSING\tTOTAL JOBS")
						for _, q := range rows {
							state := "active"
							if q.Paused {
								state = "paused"
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", q.Queue, state, dash(q.PausedAt), q.Pending, q.Processing, q.Total)
						}
						return tw.Flush()
					}
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
				if e.Globals.JSON {
					return printJSON(e.Stdout, map[string]any{"queue": q, "paused": pause})
				}
				fmt.Fprintf(e.Stdout, "Queue %s %s.\n", q, done)
				return nil
			}
		},
	}
}
