package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

func workflowCommand() *Command {
	return &Command{
		Name:    "workflow",
		Summary: "list, inspect and operate workflows",
		Examples: []string{
			Program + " workflow list --status failed",
			Program + " workflow status 42",
			Program + " workflow inspect 42",
			Program + " workflow retry 42",
		},
		Sub: []*Command{
			workflowListCommand(),
			workflowStatusCommand(),
			workflowInspectCommand(),
			workflowOpCommand("retry", "restart a failed workflow at the step that failed (a new run; the execution deadline is not extended, so a workflow past it is refused)",
				"retried: it runs again from the step that failed", (*queuety.Client).RetryWorkflow),
			workflowOpCommand("cancel", "cancel a workflow: bury its open jobs and run its OnCancel callback",
				"cancelled", (*queuety.Client).CancelWorkflow),
			workflowOpCommand("pause", "pause a running workflow after its current step",
				"paused: the step in flight finishes, the next one waits for resume", (*queuety.Client).PauseWorkflow),
			workflowOpCommand("resume", "resume a paused workflow",
				"resumed", (*queuety.Client).ResumeWorkflow),
			workflowAnswerCommand("approve", "approve a workflow's approval or decision wait", (*queuety.Client).Approve),
			workflowAnswerCommand("reject", "reject a workflow's decision wait", (*queuety.Client).Reject),
			workflowAnswerCommand("input", "submit input to a workflow's input wait", (*queuety.Client).SubmitInput),
			workflowRewindCommand(),
			workflowForkCommand(),
			workflowStateAtCommand(),
			workflowTimelineCommand(),
			workflowExportCommand(),
			workflowTraceCommand(),
			workflowReplayCommand(),
			workflowArtifactsCommand(),
			workflowArtifactCommand(),
		},
	}
}

func workflowListCommand() *Command {
	return &Command{
		Name:    "list",
		Summary: "list workflows, newest first",
		Examples: []string{
			Program + " workflow list",
			Program + " workflow list --status waiting_for_signal --name data_import --limit 20 --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			status := fs.String("status", "", "only workflows with this `status`: "+joinStatuses(workflowStatuses))
			name := fs.String("name", "", "only workflows with this `name`")
			limit := fs.Int("limit", 100, "list at most this many workflows")
			return func(e *Env, _ []string) error {
				st, err := parseWorkflowStatus(*status)
				if err != nil {
					return err
				}
				if err := checkLimit(*limit); err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				wfs, err := c.ListWorkflows(e.Ctx, driver.WorkflowFilter{Status: st, Name: *name, Limit: *limit})
				if err != nil {
					return err
				}
				return printList(e, wfs, workflowView, "No workflows match.",
					"ID\tNAME\tSTATUS\tSTEPS DONE\tSTARTED AT\tENDED AT\tDEADLINE\tERROR",
					func(tw io.Writer, w *driver.Workflow) {
						ended := w.CompletedAt
						if ended.IsZero() {
							ended = w.FailedAt
						}
						fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", w.ID, cell(w.Name, 40), w.Status, w.CurrentStep, w.TotalSteps,
							dash(ts(w.StartedAt)), dash(ts(ended)), dash(ts(w.DeadlineAt)), cell(w.ErrorMessage, 60))
					})
			}
		},
	}
}

func workflowStatusCommand() *Command {
	return &Command{
		Name:     "status",
		Summary:  "show a workflow's status, progress and public state",
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " workflow status 42", Program + " workflow status 42 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("workflow", func(e *Env, c *queuety.Client, id int64) error {
				w, err := c.Workflow(e.Ctx, id)
				if err != nil {
					return err
				}
				state, err := c.State(e.Ctx, id)
				if err != nil {
					return err
				}
				v := workflowView(w)
				v.State = nonNilState(state)
				if e.Globals.JSON {
					return printJSON(e.Stdout, v)
				}
				fmt.Fprintf(e.Stdout, "Workflow %d (%s): %s\n", w.ID, w.Name, w.Status)
				f := newFieldTable(e.Stdout)
				f.add("steps done", fmt.Sprintf("%d of %d", w.CurrentStep, w.TotalSteps))
				f.add("started at", ts(w.StartedAt))
				f.add("completed at", ts(w.CompletedAt))
				f.add("failed at", ts(w.FailedAt))
				f.add("error", w.ErrorMessage)
				f.add("deadline", ts(w.DeadlineAt))
				if v.Run > 1 || !w.RunDeadlineAt.IsZero() {
					f.add("run", fmt.Sprintf("%d, started %s", v.Run, dash(v.RunStartedAt)))
					f.add("run deadline", v.RunDeadlineAt)
				}
				f.add("signal wait times out at", ts(w.WaitDeadlineAt))
				f.add("state", compactJSON(v.State))
				return f.Flush()
			})
		},
	}
}

func workflowInspectCommand() *Command {
	return &Command{
		Name:    "inspect",
		Summary: "describe a workflow in full: deadlines, steps and attempts, failures, timeline",
		Args:    "ID",
		Help: fmt.Sprintf(`Deadlines and timeouts are shown in ISO 8601 (PT5M), times in UTC RFC 3339.
--json prints the whole description. The timeline shows --limit entries
from --offset on, and each step lists up to --jobs of its jobs (those not
completed first, then the newest); the description counts the rest
(timeline_more, jobs_more). It lists the newest %d failures and the
newest %d signals (failures_more and signals_more count the older ones,
failure_counts every failure by category), with failure messages cut at
%d characters and signal payloads over %d bytes left out, with their
length.`, queuety.DescribeFailures, queuety.DescribeSignals, queuety.DescribeTextChars,
			queuety.DescribePayloadBytes),
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " workflow inspect 42", Program + " workflow inspect 42 --json", Program + " workflow inspect 42 --offset 500"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			limit := fs.Int("limit", queuety.DefaultTimelineEntries, fmt.Sprintf("timeline entries to show (at most %d)", queuety.MaxTimelineEntries))
			offset := fs.Int("offset", 0, fmt.Sprintf("timeline entries to skip (at most %d)", queuety.MaxTimelineOffset))
			jobs := fs.Int("jobs", queuety.DefaultJobsPerStep, fmt.Sprintf("jobs to list per step (at most %d)", queuety.MaxJobsPerStep))
			return onID("workflow", func(e *Env, c *queuety.Client, id int64) error {
				if err := pageFlags(*limit, *offset); err != nil {
					return err
				}
				if *jobs < 1 {
					return Usagef("--jobs must be at least 1, got %d", *jobs)
				}
				d, err := c.DescribeWorkflowWith(e.Ctx, id, queuety.DescribeOptions{TimelineLimit: *limit, TimelineOffset: *offset, JobsPerStep: *jobs})
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, d)
				}
				return printDescription(e.Stdout, d)
			})
		},
	}
}

// failureCounts lists failure counts by category, in category order:
// "application 3, timeout 1".
func failureCounts(counts map[driver.FailureCategory]int) string {
	cats := make([]string, 0, len(counts))
	for c := range counts {
		cats = append(cats, string(c))
	}
	sort.Strings(cats)
	parts := make([]string, len(cats))
	for i, c := range cats {
		parts[i] = fmt.Sprintf("%s %d", c, counts[driver.FailureCategory(c)])
	}
	return strings.Join(parts, ", ")
}

// pageFlags checks --limit and --offset.
func pageFlags(limit, offset int) error {
	if limit < 1 {
		return Usagef("--limit must be at least 1, got %d", limit)
	}
	if offset < 0 {
		return Usagef("--offset must not be negative, got %d", offset)
	}
	return nil
}

// timelineFooter says how many timeline entries a page left out after it.
func timelineFooter(w io.Writer, d *queuety.WorkflowDescription, indent string) {
	if d.TimelineMore > 0 {
		fmt.Fprintf(w, "%s… %d more entries not shown (of %d); --offset %d shows the next ones\n", indent, d.TimelineMore, d.TimelineTotal,
			d.TimelineTotal-d.TimelineMore)
	}
}

// printDescription renders a workflow description as text.
// maxJobRows is how many jobs of one step the text view lists (a for_each
// step can have thousands).
const maxJobRows = 20

// printProgress lists what the composite steps did: for-each branches,
// repeat loops and started workflows.
func printProgress(w io.Writer, d *queuety.WorkflowDescription) error {
	tw := newTable(w)
	shown := false
	for _, s := range d.Steps {
		var line string
		switch {
		case s.ForEach != nil:
			fe := s.ForEach
			mode := fe.Mode
			if fe.Quorum > 0 {
				mode = fmt.Sprintf("%s %d", mode, fe.Quorum)
			}
			line = fmt.Sprintf("for_each (%s)\t%d items: %d succeeded, %d failed, %d open, settled %t", mode, fe.Items, fe.Succeeded, fe.Failed, fe.Open, fe.Settled)
		case s.Iterations != nil:
			line = fmt.Sprintf("repeat\tjumped back %d times", *s.Iterations)
		case len(s.Children) > 0:
			var kids []string
			for _, k := range s.Children {
				kids = append(kids, fmt.Sprintf("%d %s (%s)", k.ID, k.Name, k.Status))
			}
			line = fmt.Sprintf("%s\t%s", s.Type, cell(strings.Join(kids, ", "), 200))
		default:
			continue
		}
		if !shown {
			fmt.Fprintf(w, "\nProgress\n")
			shown = true
		}
		fmt.Fprintf(tw, "  %d %s\t%s\n", s.Index, cell(s.Name, 30), line)
	}
	return tw.Flush()
}

func printDescription(w io.Writer, d *queuety.WorkflowDescription) error {
	fmt.Fprintf(w, "Workflow %d (%s): %s\n", d.ID, d.Name, d.Status)
	f := newFieldTable(w)
	cur := fmt.Sprintf("%d of %d", d.CurrentStep, d.TotalSteps)
	if d.CurrentStepName != "" && d.CurrentStep < d.TotalSteps {
		cur = fmt.Sprintf("%d (%s) of %d", d.CurrentStep, d.CurrentStepName, d.TotalSteps)
	}
	f.add("current step", cur)
	f.add("queue", d.Queue)
	f.add("priority", fmt.Sprintf("%s (%d)", d.Priority, int(d.Priority)))
	f.add("max attempts", itoa(d.MaxAttempts))
	f.add("started at", isoTS(d.StartedAt))
	f.add("completed at", isoTS(d.CompletedAt))
	f.add("failed at", isoTS(d.FailedAt))
	f.add("error", d.Error)
	f.add("on deadline", d.OnDeadline)
	f.add("on cancel", d.OnCancel)
	f.add("idempotency key", d.IdempotencyKey)
	if d.ParentID != 0 {
		f.add("parent", fmt.Sprintf("workflow %d, step %s", d.ParentID, intPtr(d.ParentStep)))
	}
	if d.StartedBy != 0 {
		f.add("started by", fmt.Sprintf("workflow %d", d.StartedBy))
	}
	f.add("state", compactJSON(nonNilState(d.State)))
	if err := f.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nDeadlines\n")
	tw := newTable(w)
	dl := d.Deadlines
	if dl.ExecutionTimeoutSeconds > 0 || dl.ExecutionDeadline != "" {
		fmt.Fprintf(tw, "  execution timeout\t%s\tdeadline %s\n", isoSeconds(dl.ExecutionTimeoutSeconds), dash(isoTS(dl.ExecutionDeadline)))
	} else {
		fmt.Fprintf(tw, "  execution timeout\tnone\t\n")
	}
	run := fmt.Sprintf("run %d, started %s", dl.Run, dash(isoTS(dl.RunStartedAt)))
	if dl.RunTimeoutSeconds > 0 || dl.RunDeadline != "" {
		fmt.Fprintf(tw, "  run timeout\t%s\tdeadline %s (%s)\n", isoSeconds(dl.RunTimeoutSeconds), dash(isoTS(dl.RunDeadline)), run)
	} else {
		fmt.Fprintf(tw, "  run timeout\tnone\t(%s)\n", run)
	}
	if d.Wait != nil {
		wait := fmt.Sprintf("%s for %s", d.Wait.Type, strings.Join(d.Wait.WaitingFor, ", "))
		if d.Wait.Mode != "" {
			wait += " (" + d.Wait.Mode + ")"
		}
		timeout := "no timeout"
		if d.Wait.TimeoutAt != "" {
			timeout = "times out at " + isoTS(d.Wait.TimeoutAt)
		}
		fmt.Fprintf(tw, "  waiting\t%s\t%s\n", wait, timeout)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if err := printProgress(w, d); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nSteps\n")
	tw = newTable(w)
	fmt.Fprintln(tw, "  #\tNAME\tTYPE\tSTATUS\tHANDLER\tTIMEOUTS\tJOB\tJOB STATUS\tATTEMPTS\tTIMEOUT KIND\tERROR")
	for _, s := range d.Steps {
		head := fmt.Sprintf("  %d\t%s\t%s\t%s\t%s\t%s", s.Index, cell(s.Name, 30), s.Type, s.Status,
			cell(strings.Join(s.Handlers, ", "), 40), stepTimeouts(s.Timeouts))
		if len(s.Jobs) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", head)
			continue
		}
		for i, j := range s.Jobs {
			if i == maxJobRows {
				lists := "--json lists all"
				if s.JobsMore > 0 {
					lists = fmt.Sprintf("--json lists %d, --jobs more", len(s.Jobs))
				}
				fmt.Fprintf(tw, "  \t\t\t\t\t\t… %d more jobs (%s)\t\t\t\t\n", len(s.Jobs)-i+s.JobsMore, lists)
				break
			}
			if i > 0 {
				head = "  \t\t\t\t\t"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d/%d\t%s\t%s\n", head, j.ID, j.Status, j.Attempts, j.MaxAttempts,
				dash(timeoutKinds(j)), cell(j.Error, 60))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	var attempts int
	for _, s := range d.Steps {
		for _, j := range s.Jobs {
			attempts += len(j.History)
		}
	}
	if attempts > 0 {
		fmt.Fprintf(w, "\nAttempts\n")
		tw = newTable(w)
		fmt.Fprintln(tw, "  STEP\tJOB\tATTEMPT\tOUTCOME\tTIMEOUT KIND\tSTARTED AT\tENDED AT\tDURATION\tERROR")
		for _, s := range d.Steps {
			for _, j := range s.Jobs {
				for _, a := range j.History {
					fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Index, j.ID, a.Attempt, a.Outcome, dash(string(a.TimeoutKind)),
						dash(isoTS(a.StartedAt)), dash(isoTS(a.EndedAt)), durationMS(a.DurationMS), cell(a.Error, 60))
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nFailures\n")
	if d.FailuresTotal == 0 && len(d.Failures) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		fmt.Fprintf(w, "  %d in all: %s\n", d.FailuresTotal, failureCounts(d.FailureCounts))
		tw = newTable(w)
		fmt.Fprintln(tw, "  AT\tCATEGORY\tTIMEOUT KIND\tNON-RETRYABLE\tRUN\tSTEP\tJOB\tATTEMPT\tDEADLINE\tMESSAGE")
		for _, f := range d.Failures {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%t\t%d\t%s\t%s\t%s\t%s\t%s\n", isoTS(f.At), f.Category, dash(string(f.TimeoutKind)), f.NonRetryable,
				f.Run, intPtr(f.StepIndex), idCell(f.JobID), idCell(f.Attempt), dash(isoTS(f.Deadline)), cell(f.Message, 80))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if d.FailuresMore > 0 {
			fmt.Fprintf(w, "  … %d older failures not listed (the newest %d of %d are)\n", d.FailuresMore, len(d.Failures), d.FailuresTotal)
		}
	}

	if d.SignalsTotal > 0 || len(d.Signals) > 0 {
		fmt.Fprintf(w, "\nSignals\n")
		tw = newTable(w)
		fmt.Fprintln(tw, "  RECEIVED AT\tNAME\tPAYLOAD")
		for _, s := range d.Signals {
			payload := cell(compactRaw(s.Payload), 80)
			if s.PayloadOmittedBytes > 0 {
				payload = fmt.Sprintf("(%d bytes, not shown)", s.PayloadOmittedBytes)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", isoTS(s.ReceivedAt), s.Name, payload)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if d.SignalsMore > 0 {
			fmt.Fprintf(w, "  … %d older signals not listed (the newest %d of %d are)\n", d.SignalsMore, len(d.Signals), d.SignalsTotal)
		}
	}

	fmt.Fprintf(w, "\nTimeline\n")
	tw = newTable(w)
	fmt.Fprintln(tw, "  AT\tSOURCE\tEVENT\tSTEP\tJOB\tATTEMPT\tDETAIL")
	for _, t := range d.Timeline {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", isoTS(t.At), t.Source, t.Event, intPtr(t.StepIndex), idCell(t.JobID), intPtr(t.Attempt),
			cell(detailOrContext(t.Detail, t.Context), 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	timelineFooter(w, d, "  ")
	return nil
}

func nonNilState(s queuety.State) queuety.State {
	if s == nil {
		return queuety.State{}
	}
	return s
}

// isoSeconds formats whole seconds as an ISO 8601 duration.
func isoSeconds(n int64) string {
	if n <= 0 {
		return "-"
	}
	out := "PT"
	if h := n / 3600; h > 0 {
		out += fmt.Sprintf("%dH", h)
		n %= 3600
	}
	if m := n / 60; m > 0 {
		out += fmt.Sprintf("%dM", m)
		n %= 60
	}
	if n > 0 || out == "PT" {
		out += fmt.Sprintf("%dS", n)
	}
	return out
}

// stepTimeouts lists a step's configured timeouts.
func stepTimeouts(t *engine.Timeouts) string {
	if t == nil {
		return "-"
	}
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("schedule_to_start", t.ScheduleToStart)
	add("start_to_close", t.StartToClose)
	add("schedule_to_close", t.ScheduleToClose)
	add("heartbeat", t.Heartbeat)
	add("signal", t.Signal)
	return dash(strings.Join(parts, " "))
}

// timeoutKinds lists the timeout kinds a job's attempts ended with.
func timeoutKinds(j engine.JobInfoRow) string {
	var kinds []string
	seen := map[queuety.TimeoutKind]bool{}
	for _, a := range j.History {
		if a.TimeoutKind != "" && !seen[a.TimeoutKind] {
			seen[a.TimeoutKind] = true
			kinds = append(kinds, string(a.TimeoutKind))
		}
	}
	return strings.Join(kinds, ",")
}

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
			run := func(e *Env, c *queuety.Client, id int64) error {
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
				return run(e, c, id)
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
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.Signal(e.Ctx, id, name, payload); err != nil {
					return err
				}
				w, err := c.Workflow(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "signal": name, "status": w.Status},
					"Signal %s sent to workflow %d (status %s).\n", name, id, w.Status)
			}
		},
	}
}

// workflowAnswerCommand is `workflow approve|reject|input ID [JSON]`: a
// person's answer to a wait, sent as the signal that wait listens for.
func workflowAnswerCommand(name, summary string, answer func(*queuety.Client, context.Context, int64, any) (string, error)) *Command {
	return &Command{
		Name:    name,
		Summary: summary,
		Args:    "ID [JSON]",
		Help: `Answers the wait the workflow is in with the signal that wait listens for:
approve and reject a decision wait (its approve and reject signals),
approve an approval wait, input an input wait, and any wait that listens
for Queuety's default signal of the answer ("approval", "rejected",
"input"). JSON is the answer's data, stored as the signal's payload.

An answer the wait cannot take is refused and nothing is stored: reject of
an approval wait (only a decision can be rejected), approve of a plain
signal wait, or any answer to a workflow that is not waiting, including
one already answered (a second approve of the same wait). To send a signal
before the workflow reaches its wait, use 'signal ID NAME'.`,
		Examples: []string{
			Program + " workflow " + name + " 42",
			Program + " workflow " + name + ` 42 '{"by": "ada"}'`,
		},
		MinArgs: 1, MaxArgs: 2,
		Setup: func(fs *flag.FlagSet) RunFunc {
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				payload, err := payloadArg(args, 1)
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				signal, err := answer(c, e.Ctx, id, payload)
				if err != nil {
					return err
				}
				w, err := c.Workflow(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "answer": name, "signal": signal, "status": w.Status},
					"Workflow %d: %s sent as signal %s (status %s).\n", id, name, signal, w.Status)
			}
		},
	}
}

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
			return func(e *Env, args []string) error {
				id, step, err := idAndStep(args)
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.RewindWorkflow(e.Ctx, id, step); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "rewound_to_step": step, "current_step": step + 1},
					"Workflow %d rewound to after step %d; step %d runs next.\n", id, step, step+1)
			}
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
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				forked, err := c.ForkWorkflow(e.Ctx, id)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "forked_workflow_id": forked},
					"Workflow %d forked as workflow %d.\n", id, forked)
			}
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
			return func(e *Env, args []string) error {
				id, step, err := idAndStep(args)
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				st, err := c.StateAt(e.Ctx, id, step)
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, st)
				}
				fmt.Fprintln(e.Stdout, compactJSON(nonNilState(st)))
				return nil
			}
		},
	}
}

func workflowTimelineCommand() *Command {
	return &Command{
		Name:    "timeline",
		Summary: "print a workflow's events and log rows in time order",
		Args:    "ID",
		Help: `Prints --limit entries from --offset on (Queuety's workflow timeline pages
the same way) and says how many more there are; with --json the entries
are a JSON list and that note goes to standard error.`,
		Examples: []string{Program + " workflow timeline 42", Program + " workflow timeline 42 --offset 100", Program + " workflow timeline 42 --json"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			limit := fs.Int("limit", 100, fmt.Sprintf("entries to show (at most %d)", queuety.MaxTimelineEntries))
			offset := fs.Int("offset", 0, fmt.Sprintf("entries to skip (at most %d)", queuety.MaxTimelineOffset))
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				if err := pageFlags(*limit, *offset); err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				d, err := c.DescribeWorkflowWith(e.Ctx, id, queuety.DescribeOptions{TimelineLimit: *limit, TimelineOffset: *offset, JobsPerStep: 1})
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					timelineFooter(e.Stderr, d, "")
					return printJSON(e.Stdout, d.Timeline)
				}
				tw := newTable(e.Stdout)
				fmt.Fprintln(tw, "AT\tSOURCE\tEVENT\tSTEP\tJOB\tATTEMPT\tDETAIL")
				for _, te := range d.Timeline {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", isoTS(te.At), te.Source, te.Event, intPtr(te.StepIndex),
						idCell(te.JobID), intPtr(te.Attempt), cell(te.Detail, 80))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				timelineFooter(e.Stdout, d, "")
				return nil
			}
		},
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
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
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
			}
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
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				id, err := c.ReplayWorkflow(e.Ctx, doc)
				if errors.Is(err, queuety.ErrInvalidArgument) {
					return &dataError{fmt.Errorf("%s: %w", args[0], err)}
				}
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id}, "Replayed as workflow %d.\n", id)
			}
		},
	}
}

func workflowTraceCommand() *Command {
	return &Command{
		Name:    "trace",
		Summary: "print a workflow's trace bundle as JSON (events grouped by step, jobs, logs, signals)",
		Args:    "ID",
		Help: `The bundle Queuety's workflow_trace returns: the workflow, its events grouped
by step with each step's latest outcome, and its events, jobs, logs,
signals and wait dependencies. It is JSON with or without --json.

It holds one page of the events: --limit of them from --offset on, ending
early before their JSON passes 16 MiB; a JSON value over 1 MiB is null,
with its length under the event's "omitted". Jobs (200 per step) and log
rows (the newest 1,000) are bounded too. The bundle's "page" object counts
what was left out; its next_offset is the --offset of the next page.
"workflow export" writes the whole history.`,
		Examples: []string{Program + " workflow trace 42", Program + " workflow trace 42 --offset 500"},
		MinArgs:  1, MaxArgs: 1,
		Setup: func(fs *flag.FlagSet) RunFunc {
			limit := fs.Int("limit", queuety.DefaultTraceEvents, fmt.Sprintf("events per page (at most %d)", queuety.MaxTraceEvents))
			offset := fs.Int("offset", 0, "events to skip")
			return func(e *Env, args []string) error {
				id, err := parseID("workflow", args[0])
				if err != nil {
					return err
				}
				if err := pageFlags(*limit, *offset); err != nil {
					return err
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				doc, err := c.TraceWorkflowWith(e.Ctx, id, queuety.TraceOptions{Limit: *limit, Offset: *offset})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.Stdout, string(doc))
				return err
			}
		},
	}
}
