package cli

// The workflow verbs that work on its history: rewind, fork, state-at,
// export and replay.

import (
	"errors"
	"flag"
	"fmt"
	"github.com/queuety/queuety-go/queuetytype"
	"io"
	"os"
	"strconv"

	"github.com/queuety/queuety-go/queuety"
)

func workflowRewindCommand() *Command {
	return &Command{
		Name:    "rewind",
		Summary: "move a workflow back to right after a step and run on from there",
		Args:    "ID STEP",
		Help: `The state recorded after STEP (a step index) comes back, the workflow's open
jobs are buried as superseded, and the next step is enqueued: the workflow
runs again whatever its status was.`,
		Examples: []string{Program + " workflow rewind 42 1"},
		MinArgs:  2, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onIDAndStep(func(e *Env, c *queuety.Client, id int64, step int) error {
				if err := c.RewindWorkflow(e.Ctx, id, step); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "rewound_to_step": step, "current_step": step + 1},
					"Workflow %d rewound to after step %d; step %d runs next.\n", id, step, step+1)
			})
		},
	}
}

func workflowForkCommand() *Command {
	return &Command{
		Name:    "fork",
		Summary: "start a copy of a workflow that runs on from the same step",
		Args:    "ID",
		Help: `The copy ("<name>_fork_<unix time>") gets the workflow's state and position
and runs its current step again on its own; the original is untouched. A
failed or cancelled workflow forks at the step it stopped at. A completed
workflow has no step left to run and is refused.`,
		Examples: []string{Program + " workflow fork 42"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("workflow", func(e *Env, c *queuety.Client, id int64) error {
				forked, err := c.ForkWorkflow(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "forked_workflow_id": forked},
					"Workflow %d forked as workflow %d.\n", id, forked)
			})
		},
	}
}

func workflowStateAtCommand() *Command {
	return &Command{
		Name:     "state-at",
		Summary:  "print the public state a workflow had right after a step",
		Args:     "ID STEP",
		Examples: []string{Program + " workflow state-at 42 0"},
		MinArgs:  2, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onIDAndStep(func(e *Env, c *queuety.Client, id int64, step int) error {
				st, err := c.StateAt(e.Ctx, id, step)
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, st)
				}
				fmt.Fprintln(e.Stdout, compactJSON(nonNilState(st)))
				return nil
			})
		},
	}
}

// onIDAndStep makes the RunFunc of a command whose arguments are
// "ID STEP": it parses both, opens the store and calls run.
func onIDAndStep(run func(e *Env, c *queuety.Client, id int64, step int) error) RunFunc {
	return func(e *Env, args []string) error {
		id, step, err := idAndStep(args)
		if err != nil {
			return err
		}
		return withStore(e, func(c *queuety.Client) error { return run(e, c, id, step) })
	}
}

// idAndStep parses "ID STEP".
func idAndStep(args []string) (int64, int, error) {
	id, err := parseID("workflow", args[0])
	if err != nil {
		return 0, 0, err
	}
	step, err := strconv.Atoi(args[1])
	if err != nil || step < 0 {
		return 0, 0, Usagef("STEP must be a step index (0, 1, ...), got %q", args[1])
	}
	return id, step, nil
}

func workflowExportCommand() *Command {
	return &Command{
		Name:    "export",
		Summary: "write a workflow's history as JSON in Queuety's export format",
		Args:    "ID",
		Help: `Prints the workflow row and state, its jobs, events, logs, signals and wait
dependencies as one JSON document (Queuety's export_workflow format), or
writes it to --output. Queuety PHP's replay_workflow and "workflow replay"
read it.`,
		Examples: []string{Program + " workflow export 42 --output wf-42.json"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			output := fs.String("output", "", "write the export to this `file` instead of standard output")
			return onID("workflow", func(e *Env, c *queuety.Client, id int64) error {
				doc, err := c.ExportWorkflow(e.Ctx, id)
				if err != nil {
					return err
				}
				if *output == "" {
					_, err = fmt.Fprintln(e.Stdout, string(doc))
					return err
				}
				if err := os.WriteFile(*output, doc, 0o600); err != nil {
					return fmt.Errorf("write export: %w", err)
				}
				return printResult(e, map[string]any{"id": id, "output": *output, "bytes": len(doc)},
					"Workflow %d exported to %s (%d bytes).\n", id, *output, len(doc))
			})
		},
	}
}

func workflowReplayCommand() *Command {
	return &Command{
		Name:    "replay",
		Summary: "start a new workflow from an export (this tool's or Queuety PHP's)",
		Args:    "FILE",
		Help: `The new workflow ("<name>_replay_<unix time>") gets the export's state,
status, position and history, and a workflow_replayed event naming the
source; a running one runs on from its current step. FILE "-" reads
standard input.`,
		Examples: []string{Program + " workflow replay wf-42.json"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				var doc []byte
				var err error
				if args[0] == "-" {
					doc, err = io.ReadAll(os.Stdin)
				} else {
					doc, err = os.ReadFile(args[0])
				}
				if err != nil {
					return fmt.Errorf("read export: %w", err)
				}
				return withStore(e, func(c *queuety.Client) error {
					id, err := c.ReplayWorkflow(e.Ctx, doc)
					if errors.Is(err, queuetytype.ErrInvalidArgument) {
						return &dataError{fmt.Errorf("%s: %w", args[0], err)}
					}
					if err != nil {
						return err
					}
					return printResult(e, map[string]any{"id": id}, "Replayed as workflow %d.\n", id)
				})
			}
		},
	}
}
