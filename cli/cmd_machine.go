package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	imachine "github.com/queuety/queuety-go/internal/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

func machineCommand() *Command {
	return &Command{
		Name:    "machine",
		Summary: "list and inspect state machines and send them events",
		Examples: []string{
			Program + " machine list --status waiting_event",
			Program + " machine status 7",
			Program + ` machine event 7 approve '{"approved": true}'`,
			Program + " machine timeline 7",
			Program + " machine trace 7",
			Program + " machine state-at 7 12",
		},
		Sub: []*Command{machineListCommand(), machineStatusCommand(), machineEventCommand(), machineTimelineCommand(), machineTraceCommand(),
			machineStateAtCommand()},
	}
}

// machineSummaryJSON is a listed machine's --json view, with Queuety's keys.
type machineSummaryJSON struct {
	ID                int64    `json:"id"`
	Name              string   `json:"name"`
	Status            string   `json:"status"`
	CurrentState      string   `json:"current_state"`
	DefinitionVersion *string  `json:"definition_version"`
	DefinitionHash    *string  `json:"definition_hash"`
	IdempotencyKey    *string  `json:"idempotency_key"`
	StartedAt         string   `json:"started_at"`
	UpdatedAt         string   `json:"updated_at"`
	CompletedAt       *string  `json:"completed_at"`
	FailedAt          *string  `json:"failed_at"`
	AvailableEvents   []string `json:"available_events"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func machineSummaryView(m *queuetytype.MachineSummary) machineSummaryJSON {
	return machineSummaryJSON{ID: m.ID, Name: m.Name, Status: string(m.Status), CurrentState: m.CurrentState,
		DefinitionVersion: strPtr(m.DefinitionVersion), DefinitionHash: strPtr(m.DefinitionHash), IdempotencyKey: strPtr(m.IdempotencyKey),
		StartedAt: ts(m.StartedAt), UpdatedAt: ts(m.UpdatedAt), CompletedAt: strPtr(ts(m.CompletedAt)), FailedAt: strPtr(ts(m.FailedAt)),
		AvailableEvents: m.AvailableEvents}
}

func machineListCommand() *Command {
	return &Command{
		Name:     "list",
		Summary:  "list state machines, newest first, with the events each accepts now",
		Examples: []string{Program + " machine list", Program + " machine list --status completed --limit 10 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			status := fs.String("status", "", "only machines with this status (running, waiting_event, completed, failed, paused, cancelled)")
			name := fs.String("name", "", "only machines with this name")
			limit := fs.Int("limit", 50, "at most this many")
			return func(e *Env, _ []string) error {
				st := queuetytype.MachineStatus(*status)
				if *status != "" && !st.Valid() {
					return Usagef("--status %q: want running, waiting_event, completed, failed, paused or cancelled", *status)
				}
				if *limit < 1 {
					return Usagef("--limit must be at least 1")
				}
				return withStore(e, func(c *queuety.Client) error {
					list, err := c.ListMachines(e.Ctx, queuetytype.MachineFilter{Status: st, Name: *name, Limit: *limit})
					if err != nil {
						return err
					}
					return printList(e, list, machineSummaryView, "No state machines.", "ID\tNAME\tSTATUS\tSTATE\tEVENTS\tVERSION\tUPDATED AT",
						func(w io.Writer, m *queuetytype.MachineSummary) {
							fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Name, m.Status, m.CurrentState,
								dash(strings.Join(m.AvailableEvents, ",")), dash(m.DefinitionVersion), dash(ts(m.UpdatedAt)))
						})
				})
			}
		},
	}
}

func printMachineStatus(e *Env, st *queuetytype.MachineState) error {
	if e.Globals.JSON {
		return printJSON(e.Stdout, st)
	}
	fmt.Fprintf(e.Stdout, "State machine %d (%s): %s in %s\n", st.ID, st.Name, st.Status, st.CurrentState)
	f := newFieldTable(e.Stdout)
	f.add("available events", dash(strings.Join(st.AvailableEvents, ", ")))
	f.add("action", st.CurrentAction)
	f.add("terminal status", string(st.TerminalStatus))
	f.add("state", compactJSON(st.State))
	f.add("version", st.DefinitionVersion)
	f.add("definition hash", st.DefinitionHash)
	f.add("idempotency key", st.IdempotencyKey)
	f.add("error", st.ErrorMessage)
	return f.Flush()
}

func machineStatusCommand() *Command {
	return &Command{
		Name:     "status",
		Summary:  "show a machine's status, public state and the events it accepts now",
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " machine status 7", Program + " machine status 7 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("machine", func(e *Env, c *queuety.Client, id int64) error {
				st, err := c.MachineStatus(e.Ctx, id)
				if err != nil {
					return err
				}
				return printMachineStatus(e, st)
			})
		},
	}
}

func machineEventCommand() *Command {
	return &Command{
		Name:    "event",
		Summary: "send an event with an optional JSON payload to a machine waiting for events",
		Args:    "ID EVENT [JSON]",
		Help: `The payload's keys (except those starting with "_") are merged into the
machine's state and the first transition of its current state for the
event whose guard allows it is taken. A rejected event is recorded on the
machine's timeline and reported as an error. Guards named in the
definition must be Go guards this binary knows; a machine whose guards are
Queuety PHP classes takes its events from PHP.`,
		Examples: []string{Program + " machine event 7 user_message '{\"message\": \"hello\"}'", Program + " machine event 7 approve"},
		MinArgs:  2, MaxArgs: 3,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				id, err := parseID("machine", args[0])
				if err != nil {
					return err
				}
				event := strings.TrimSpace(args[1])
				if event == "" {
					return Usagef("machine EVENT is empty")
				}
				payload, err := payloadArg(args, 2)
				if err != nil {
					return err
				}
				return withStore(e, func(c *queuety.Client) error {
					if err := c.MachineEvent(e.Ctx, id, event, payload); err != nil {
						return err
					}
					st, err := c.MachineStatus(e.Ctx, id)
					if err != nil {
						return err
					}
					return printMachineStatus(e, st)
				})
			}
		},
	}
}

func machineTimelineCommand() *Command {
	return &Command{
		Name:     "timeline",
		Summary:  "list a machine's events: transitions, guards, actions, rejections",
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " machine timeline 7", Program + " machine timeline 7 --limit 20 --offset 20 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			limit := fs.Int("limit", 100, "at most this many events (0: all)")
			offset := fs.Int("offset", 0, "skip this many events")
			return onCheckedID("machine", func() error {
				if *limit < 0 || *offset < 0 {
					return Usagef("--limit and --offset must not be negative")
				}
				return nil
			}, func(e *Env, c *queuety.Client, id int64) error {
				evs, err := c.MachineTimeline(e.Ctx, id, *limit, *offset)
				if err != nil {
					return err
				}
				return printList(e, evs, func(ev *queuetytype.MachineEvent) any { return imachine.EventJSON(ev) },
					fmt.Sprintf("No events for machine #%d.", id), "ID\tEVENT\tSTATE\tNAME\tHANDLER\tAT\tERROR",
					func(w io.Writer, ev *queuetytype.MachineEvent) {
						msg := ""
						if m, ok := imachine.EventJSON(ev).Get("error_message"); ok && m != nil {
							msg = fmt.Sprint(m)
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", ev.ID, ev.Event, ev.StateName, dash(ev.EventName),
							dash(ev.Handler), ts(ev.CreatedAt), cell(msg, 60))
					})
			})
		},
	}
}

func machineTraceCommand() *Command {
	return &Command{
		Name:    "trace",
		Summary: "print a machine's trace bundle as JSON (events grouped by state, action jobs, logs)",
		Args:    "ID",
		Help: `The bundle Queuety's machine_trace returns: the machine with its
definition, its events grouped by state, all its events, its entry action
jobs and their log rows, and the artifact and chunk references of its
events. It is JSON with or without --json.`,
		Examples: []string{Program + " machine trace 7"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("machine", func(e *Env, c *queuety.Client, id int64) error {
				doc, err := c.MachineTrace(e.Ctx, id)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.Stdout, string(doc))
				return err
			})
		},
	}
}

func machineStateAtCommand() *Command {
	return &Command{
		Name:     "state-at",
		Summary:  "show a machine's public state after one of its events",
		Args:     "ID EVENT_ID",
		MinArgs:  2,
		MaxArgs:  2,
		Examples: []string{Program + " machine state-at 7 12"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				id, err := parseID("machine", args[0])
				if err != nil {
					return err
				}
				ev, err := parseID("event", args[1])
				if err != nil {
					return err
				}
				return withStore(e, func(c *queuety.Client) error {
					st, err := c.MachineStateAt(e.Ctx, id, ev)
					if err != nil {
						return err
					}
					return printJSON(e.Stdout, st)
				})
			}
		},
	}
}
