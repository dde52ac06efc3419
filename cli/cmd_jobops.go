package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

func jobRetryBuriedCommand() *Command {
	return &Command{
		Name:    "retry-buried",
		Summary: "put every buried job (of a queue or handler) back in its queue with fresh attempts",
		Help: `Each job is retried as 'job retry' retries one: pending, due now, with its
attempt count reset and a 'retried' log row. Buried workflow steps are left
alone: retry their workflows ('workflow retry ID'). wp queuety retry-buried
keeps the attempt count, so there a job retried after running out of
attempts is buried again at its next failure.`,
		Examples: []string{
			Program + " job retry-buried",
			Program + " job retry-buried --queue emails --handler send_email --json",
		},
		Setup: func(fs *flag.FlagSet) RunFunc {
			queue := fs.String("queue", "", "only buried jobs on this `queue`")
			handler := fs.String("handler", "", "only buried jobs of this `handler`")
			return onStore(func(e *Env, c *queuety.Client) error {
				f := queuetytype.BuriedFilter{Queue: strings.TrimSpace(*queue), Handler: strings.TrimSpace(*handler)}
				n, err := c.RetryBuried(e.Ctx, f)
				if err != nil {
					return err
				}
				steps, err := countJobs(e, c, driver.JobFilter{Status: queuetytype.JobBuried, Queue: f.Queue, Handler: f.Handler})
				if err != nil {
					return err
				}
				if e.Globals.JSON {
					return printJSON(e.Stdout, map[string]any{"retried": n, "queue": f.Queue, "handler": f.Handler, "workflow_steps_left": steps})
				}
				fmt.Fprintf(e.Stdout, "Retried %s.\n", plural(n, "buried job"))
				if steps > 0 {
					fmt.Fprintf(e.Stdout, "%s of workflows left buried: retry their workflows ('%s workflow retry ID').\n",
						plural(steps, "step job"), Program)
				}
				return nil
			})
		},
	}
}

// countJobs counts the jobs matching f, a page at a time.
func countJobs(e *Env, c *queuety.Client, f driver.JobFilter) (int64, error) {
	var n int64
	f.Limit = 1000
	for {
		jobs, err := c.ListJobs(e.Ctx, f)
		if err != nil {
			return n, err
		}
		n += int64(len(jobs))
		if len(jobs) < f.Limit {
			return n, nil
		}
		f.AfterID = jobs[len(jobs)-1].ID
	}
}

func jobBuryCommand() *Command {
	return &Command{
		Name:    "bury",
		Summary: "bury a job by hand so no worker runs it (its error says why)",
		Args:    "ID",
		Help: `The job becomes buried with failed_at now and the error "` + queuetytype.ManualBuryMessage + `"
(or --message), as wp queuety bury writes it. Completed and buried jobs
cannot be buried. A step of a running workflow is treated as a step that
ran out of attempts: the workflow fails (restart it with 'workflow retry'),
or a for_each branch counts as failed. wp queuety bury leaves such a
workflow running with no job to run.`,
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " job bury 17", Program + ` job bury 17 --message "poison payload" --json`},
		Setup: func(fs *flag.FlagSet) RunFunc {
			msg := fs.String("message", queuetytype.ManualBuryMessage, "the error `message` stored on the job")
			return onID("job", func(e *Env, c *queuety.Client, id int64) error {
				if strings.TrimSpace(*msg) == "" {
					return Usagef("--message is empty")
				}
				if err := c.BuryJob(e.Ctx, id, *msg); err != nil {
					return err
				}
				j, err := c.Job(e.Ctx, id)
				if err != nil {
					return err
				}
				out := map[string]any{"id": id, "status": j.Status, "error_message": j.ErrorMessage, "failed_at": ts(j.FailedAt)}
				text := fmt.Sprintf("Job %d buried: %s", id, j.ErrorMessage)
				if j.WorkflowID != 0 {
					wf, err := c.Workflow(e.Ctx, j.WorkflowID)
					if err != nil {
						return err
					}
					out["workflow_id"], out["workflow_status"] = wf.ID, wf.Status
					text += fmt.Sprintf(" (workflow %d is %s)", wf.ID, wf.Status)
				}
				return printResult(e, out, "%s\n", text)
			})
		},
	}
}

func jobDeleteCommand() *Command {
	return &Command{
		Name:    "delete",
		Summary: "delete a job row (its log rows are kept)",
		Args:    "ID",
		Help: `A pending or processing step of a workflow that has not ended cannot be
deleted (the workflow would wait for it for good): cancel or rewind the
workflow instead.`,
		MinArgs:  1,
		MaxArgs:  1,
		Examples: []string{Program + " job delete 17"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			return onID("job", func(e *Env, c *queuety.Client, id int64) error {
				if err := c.DeleteJob(e.Ctx, id); err != nil {
					return err
				}
				return printResult(e, map[string]any{"id": id, "deleted": true}, "Job %d deleted.\n", id)
			})
		},
	}
}

func jobRecoverCommand() *Command {
	return &Command{
		Name:    "recover",
		Summary: "take back jobs stuck in processing whose worker died (stale claims)",
		Help: `A processing job whose claim was not renewed for --stale-timeout (Queuety's
QUEUETY_STALE_TIMEOUT; a Go worker's claim after its 10 s lease) is retried
with backoff while attempts remain, or buried with "` + queuetytype.StaleMessage + `"
(failing its workflow), with the log rows Queuety writes. A processing job
with no reserved_at (no claim time, so no worker holds it) is taken back at
once. Running workers do this every few seconds; the command is for stores
no worker watches.`,
		Examples: []string{Program + " job recover", Program + " job recover --stale-timeout 15m --json"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			stale := durationFlag(fs, "stale-timeout", queuetytype.DefaultStaleTimeout, "how long a claim may go without renewal before it is stale")
			return func(e *Env, _ []string) error {
				if *stale < time.Second {
					return Usagef("--stale-timeout must be at least 1s, got %s", *stale)
				}
				c, err := e.Open(queuety.WithStaleTimeout(*stale))
				if err != nil {
					return err
				}
				defer c.Close()
				n, err := c.RecoverStale(e.Ctx)
				if err != nil {
					return err
				}
				return printResult(e, map[string]any{"recovered": n, "stale_timeout_seconds": int64(stale.Seconds())},
					"Recovered %s.\n", plural(n, "stale job"))
			}
		},
	}
}
