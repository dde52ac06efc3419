package cli

// The workflow verbs that change a running workflow: retry, cancel, pause,
// resume, signal and the answers to a wait (approve, reject, input).

import (
	"context"
	"flag"
	"strings"

	"github.com/queuety/queuety-go/queuety"
)

// workflowOpCommand builds retry, cancel, pause and resume.
func workflowOpCommand(name, summary, done string, op func(*queuety.Client, context.Context, int64) error) *Command {
	return &Command{
		Name:     name,
		Summary:  summary,
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " workflow " + name + " 42"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			var phpQueue *string
			if name == "cancel" {
				phpQueue = fs.String("php-callbacks", "", "hand the compensations and the on_cancel handler to Queuety PHP's bridge class QueuetyGo\\WorkflowCallback (php/) on this `queue`: it runs the PHP classes and hands the other names back to Go workers (use the queue the workers' --php-callbacks name)")
			}
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				var opts []queuety.Option
				if phpQueue != nil && *phpQueue != "" {
					opts = append(opts, queuety.WithPHPCallbacks(*phpQueue))
				}
				c, err := e.Open(opts...)
				if err != nil {
					return err
				}
				defer c.Close()
				if err := op(c, e.Ctx, id); err != nil {
					return err
				}
				w, err := c.Workflow(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "action": name, "status": w.Status},
					"Workflow %d %s (status %s).\n", id, done, w.Status)
			}
		},
	}
}

func signalCommand() *Command {
	return &Command{
		Name:    "signal",
		Summary: "send a named signal with an optional JSON payload to a workflow",
		Args:    "ID NAME [JSON]",
		Help: `The signal is stored whatever the workflow is doing. If the workflow waits
for it, the wait ends and the next step is enqueued; a signal sent before
the workflow reaches its wait counts when it gets there.`,
		Examples: []string{
			Program + " signal 42 approved",
			Program + ` signal 42 approved '{"by": "ada"}'`,
		},
		MinArgs: 2, MaxArgs: 3,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				name := args[1]
				if strings.TrimSpace(name) == "" {
					return Usagef("signal NAME is empty")
				}
				payload, err := payloadArg(args, 2)
				if err != nil {
					return err
				}
				return withStore(e, func(c *queuety.Client) error {
					if err := c.Signal(e.Ctx, id, name, payload); err != nil {
						return err
					}
					w, err := c.Workflow(e.Ctx, id)
					if err != nil {
						return err
					}
					return printResult(e, map[string]any{"id": id, "signal": name, "status": w.Status},
						"Signal %s sent to workflow %d (status %s).\n", name, id, w.Status)
				})
			}
		},
	}
}

// workflowAnswerCommand is `workflow approve|reject|input ID [JSON]`: a
// person's answer to a wait, sent as the signal that wait listens for.
// defaultSignal is Queuety PHP's name of that signal (its --signal
// default).
func workflowAnswerCommand(name, summary, defaultSignal string, answer func(*queuety.Client, context.Context, int64, any) (string, error)) *Command {
	return &Command{
		Name:    name,
		Summary: summary,
		Args:    "ID [JSON]",
		Help: `Answers the wait the workflow is in with the signal that wait listens for:
approve and reject a decision wait (its approve and reject signals),
approve an approval wait, input an input wait, and any wait that listens
for Queuety's default signal of the answer ("approval", "rejected",
"input"). JSON (or --data, as wp queuety takes it) is the answer's data,
stored as the signal's payload.

An answer the wait cannot take is refused and nothing is stored: reject of
an approval wait (only a decision can be rejected), approve of a plain
signal wait, or any answer to a workflow that is not waiting, including
one already answered (a second approve of the same wait). To send a signal
before the workflow reaches its wait, use 'signal ID NAME'.

--signal NAME sends the signal NAME instead, as wp queuety ` + name + ` --signal
does and as 'signal ID NAME' does: it is stored whatever the workflow is
doing (default of wp queuety: ` + defaultSignal + `).`,
		Examples: []string{
			Program + " workflow " + name + " 42",
			Program + " workflow " + name + ` 42 '{"by": "ada"}'`,
			Program + " workflow " + name + ` 42 --data '{"by": "ada"}' --signal ` + defaultSignal,
		},
		MinArgs: 1, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			data := fs.String("data", "", "the answer's data, a JSON object (instead of the JSON argument)")
			signalName := fs.String("signal", "", "send the signal of this `name` instead of the one the wait listens for")
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				if len(args) > 1 && *data != "" {
					return Usagef("give the data once: as the JSON argument or as --data")
				}
				if *data != "" {
					args = []string{args[0], *data}
				}
				payload, err := payloadArg(args, 1)
				if err != nil {
					return err
				}
				named := strings.TrimSpace(*signalName)
				if fs.Lookup("signal").Value.String() != "" && named == "" {
					return Usagef("--signal is empty")
				}
				return withStore(e, func(c *queuety.Client) error {
					signal := named
					if named != "" {
						err = c.Signal(e.Ctx, id, named, payload)
					} else {
						signal, err = answer(c, e.Ctx, id, payload)
					}
					if err != nil {
						return err
					}
					w, err := c.Workflow(e.Ctx, id)
					if err != nil {
						return err
					}
					return printResult(e, map[string]any{"id": id, "answer": name, "signal": signal, "status": w.Status},
						"Workflow %d: %s sent as signal %s (status %s).\n", id, name, signal, w.Status)
				})
			}
		},
	}
}
