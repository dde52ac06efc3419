package cli

// The read-only workflow views: inspect, timeline and trace, and the text
// rendering of a workflow description.

import (
	"flag"
	"fmt"
	"github.com/queuety/queuety-go/queuetytype"
	"io"
	"sort"
	"strings"

	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

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
length.`, queuetytype.DescribeFailures, queuetytype.DescribeSignals, queuetytype.DescribeTextChars,
			queuetytype.DescribePayloadBytes),
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " workflow inspect 42", Program + " workflow inspect 42 --json", Program + " workflow inspect 42 --offset 500"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			limit := fs.Int("limit", queuetytype.DefaultTimelineEntries, fmt.Sprintf("timeline entries to show (at most %d)", queuetytype.MaxTimelineEntries))
			offset := fs.Int("offset", 0, fmt.Sprintf("timeline entries to skip (at most %d)", queuetytype.MaxTimelineOffset))
			jobs := fs.Int("jobs", queuetytype.DefaultJobsPerStep, fmt.Sprintf("jobs to list per step (at most %d)", queuetytype.MaxJobsPerStep))
			check := func() error {
				if err := pageFlags(*limit, *offset); err != nil {
					return err
				}
				if *jobs < 1 {
					return Usagef("--jobs must be at least 1, got %d", *jobs)
				}
				return nil
			}
			return onCheckedID("workflow", check, func(e *Env, c *queuety.Client, id int64) error {
				d, err := c.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineLimit: *limit, TimelineOffset: *offset, JobsPerStep: *jobs})
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

// checkPage is the onCheckedID check of --limit and --offset.
func checkPage(limit, offset *int) func() error {
	return func() error { return pageFlags(*limit, *offset) }
}

// timelineFooter says how many timeline entries a page left out after it.
func timelineFooter(w io.Writer, d *queuetytype.WorkflowDescription, indent string) {
	if d.TimelineMore > 0 {
		fmt.Fprintf(w, "%s… %d more entries not shown (of %d); --offset %d shows the next ones\n", indent, d.TimelineMore, d.TimelineTotal,
			d.TimelineTotal-d.TimelineMore)
	}
}

// maxJobRows is how many jobs of one step the text view lists (a for_each
// step can have thousands).
const maxJobRows = 20

// printProgress lists what the composite steps did: for-each branches,
// repeat loops and started workflows.
func printProgress(w io.Writer, d *queuetytype.WorkflowDescription) error {
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

// printDescription renders a workflow description as text.
func printDescription(w io.Writer, d *queuetytype.WorkflowDescription) error {
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
	seen := map[queuetytype.TimeoutKind]bool{}
	for _, a := range j.History {
		if a.TimeoutKind != "" && !seen[a.TimeoutKind] {
			seen[a.TimeoutKind] = true
			kinds = append(kinds, string(a.TimeoutKind))
		}
	}
	return strings.Join(kinds, ",")
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
			limit := fs.Int("limit", 100, fmt.Sprintf("entries to show (at most %d)", queuetytype.MaxTimelineEntries))
			offset := fs.Int("offset", 0, fmt.Sprintf("entries to skip (at most %d)", queuetytype.MaxTimelineOffset))
			return onCheckedID("workflow", checkPage(limit, offset), func(e *Env, c *queuety.Client, id int64) error {
				d, err := c.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineLimit: *limit, TimelineOffset: *offset, JobsPerStep: 1})
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
			})
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
			limit := fs.Int("limit", queuetytype.DefaultTraceEvents, fmt.Sprintf("events per page (at most %d)", queuetytype.MaxTraceEvents))
			offset := fs.Int("offset", 0, "events to skip")
			return onCheckedID("workflow", checkPage(limit, offset), func(e *Env, c *queuety.Client, id int64) error {
				doc, err := c.TraceWorkflowWith(e.Ctx, id, queuetytype.TraceOptions{Limit: *limit, Offset: *offset})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.Stdout, string(doc))
				return err
			})
		},
	}
}
