package cli

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func jobCommand() *Command {
	return &Command{
		Name:    "job",
		Summary: "list, show, retry, bury, delete, recover and purge jobs",
		Examples: []string{
			Program + " job list --status buried",
			Program + " job show 17",
			Program + " job retry 17",
			Program + " job retry-buried --queue emails",
			Program + " job bury 17",
			Program + " job recover",
			Program + " job purge --older-than 7",
		},
		Sub: []*Command{jobListCommand(), jobShowCommand(), jobRetryCommand(), jobRetryBuriedCommand(), jobBuryCommand(),
			jobDeleteCommand(), jobRecoverCommand(), jobPurgeCommand()},
	}
}

func jobListCommand() *Command {
	return &Command{
		Name:    "list",
		Summary: "list jobs, oldest first",
		Examples: []string{
			Program + " job list",
			Program + " job list --queue emails --status pending --limit 20",
			Program + " job list --workflow 42 --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			queue := fs.String("queue", "", "only jobs on this `queue`")
			status := fs.String("status", "", "only jobs with this `status`: "+joinStatuses(jobStatuses))
			handler := fs.String("handler", "", "only jobs for this `handler`")
			wf := fs.Int64("workflow", 0, "only the step jobs of this workflow `id`")
			after := fs.Int64("after", 0, "only jobs with an id above this `id` (for paging)")
			limit := fs.Int("limit", 100, "list at most this many jobs")
			return func(e *Env, _ []string) error {
				st, err := parseJobStatus(*status)
				if err != nil {
					return err
				}
				if err := checkLimit(*limit); err != nil {
					return err
				}
				if *wf < 0 || *after < 0 {
					return Usagef("--workflow and --after take ids")
				}
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				jobs, err := c.ListJobs(e.Ctx, driver.JobFilter{Queue: *queue, Status: st, Handler: *handler, WorkflowID: *wf, AfterID: *after, Limit: *limit})
				if err != nil {
					return err
				}
				err = printList(e, jobs, jobView, "No jobs match.",
					"ID\tQUEUE\tHANDLER\tSTATUS\tPRIORITY\tATTEMPTS\tAVAILABLE AT\tWORKFLOW\tERROR",
					func(w io.Writer, j *driver.Job) {
						wfCell := "-"
						if j.WorkflowID != 0 {
							wfCell = fmt.Sprintf("%d step %s", j.WorkflowID, intPtr(j.StepIndex))
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.Queue, cell(j.Handler, 40), j.Status, j.Priority,
							j.Attempts, j.MaxAttempts, dash(ts(j.AvailableAt)), wfCell, cell(j.ErrorMessage, 60))
					})
				if err != nil || e.Globals.JSON {
					return err
				}
				if len(jobs) == *limit {
					fmt.Fprintf(e.Stdout, "(first %d; use --after %d for the next page)\n", *limit, jobs[len(jobs)-1].ID)
				}
				return nil
			}
		},
	}
}

func jobShowCommand() *Command {
	return &Command{
		Name:     "show",
		Summary:  "show one job and its log rows",
		Args:     "ID",
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " job show 17", Program + " job show 17 --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("job", func(e *Env, c *queuety.Client, id int64) error {
				j, err := c.Job(e.Ctx, id)
				if err != nil {
					return err
				}
				logs, err := c.Logs(e.Ctx, driver.LogFilter{JobID: id})
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, map[string]any{"job": jobView(j), "logs": viewsOf(logs, logView)})
				}
				fmt.Fprintf(e.Stdout, "Job %d\n", j.ID)
				f := newFieldTable(e.Stdout)
				f.add("handler", j.Handler)
				f.add("queue", j.Queue)
				f.add("status", string(j.Status))
				f.add("priority", fmt.Sprintf("%s (%d)", j.Priority, int(j.Priority)))
				f.add("attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts))
				f.add("created at", ts(j.CreatedAt))
				f.add("available at", ts(j.AvailableAt))
				f.add("reserved at", ts(j.ReservedAt))
				f.add("completed at", ts(j.CompletedAt))
				f.add("failed at", ts(j.FailedAt))
				f.add("error", j.ErrorMessage)
				if j.WorkflowID != 0 {
					f.add("workflow", fmt.Sprintf("%d, step %s", j.WorkflowID, intPtr(j.StepIndex)))
				}
				if j.DependsOn != 0 {
					f.add("depends on", itoa(j.DependsOn))
				}
				f.add("schedule-to-start deadline", ts(j.ScheduleToStartAt))
				f.add("start-to-close deadline", ts(j.StartToCloseAt))
				f.add("schedule-to-close deadline", ts(j.ScheduleToCloseAt))
				f.add("heartbeat deadline", ts(j.HeartbeatDeadline))
				f.add("last heartbeat", ts(j.LastHeartbeatAt))
				if len(j.HeartbeatData) > 0 {
					f.add("heartbeat details", compactRaw(j.HeartbeatData))
				}
				f.add("payload", compactRaw(j.Payload))
				if err := f.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(e.Stdout)
				if len(logs) == 0 {
					fmt.Fprintln(e.Stdout, "No log rows.")
					return nil
				}
				fmt.Fprintln(e.Stdout, "Log")
				tw := newTable(e.Stdout)
				fmt.Fprintln(tw, "  AT\tEVENT\tATTEMPT\tDURATION\tERROR")
				for _, l := range logs {
					fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", ts(l.CreatedAt), l.Event, intPtr(l.Attempt), durationMS(l.DurationMS),
						cell(detailOrContext(l.ErrorMessage, l.Context), 100))
				}
				return tw.Flush()
			})
		},
	}
}

func jobRetryCommand() *Command {
	return &Command{
		Name:    "retry",
		Summary: "put a buried or failed job back in its queue with fresh attempts",
		Args:    "ID",
		Help: `Only plain jobs: for a workflow step, retry the workflow
(` + Program + ` workflow retry ID).`,
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " job retry 17"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("job", func(e *Env, c *queuety.Client, id int64) error {
				if err := c.RetryJob(e.Ctx, id); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "status": queuetytype.JobPending},
					"Job %d is pending again, with fresh attempts.\n", id)
			})
		},
	}
}

// defaultRetention is how long `job purge` keeps completed jobs without
// --older-than: Queuety's QUEUETY_RETENTION_DAYS default.
const defaultRetention = 7 * 24 * time.Hour

func jobPurgeCommand() *Command {
	return purgeCommand(purgeSpec{
		name: "purge", summary: "delete completed jobs that completed longer ago than --older-than (7 days)",
		help: `--older-than takes a number of days, as wp queuety purge does (7 is a
week), or a duration (168h, 7d; 0s deletes every completed job). Without
it, jobs completed more than 7 days ago are deleted, as wp queuety purge
does with Queuety's default retention.`,
		examples:   []string{Program + " job purge", Program + " job purge --older-than 30d --json"},
		defaultAge: defaultRetention,
		noun:       "completed job", what: "completed jobs",
		del: (*queuety.Client).PurgeCompleted, key: "completed_before", phrase: "that completed before",
	})
}
