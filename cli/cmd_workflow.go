package cli

import (
	"flag"
	"fmt"
	"io"

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
			workflowRunCommand(),
			workflowTemplatesCommand(),
			workflowOpCommand("retry", "restart a failed workflow at the step that failed (a new run; the execution deadline is not extended, so a workflow past it is refused)",
				"retried: it runs again from the step that failed", (*queuety.Client).RetryWorkflow),
			workflowOpCommand("cancel", "cancel a workflow: bury its open jobs and run its OnCancel callback",
				"cancelled", (*queuety.Client).CancelWorkflow),
			workflowOpCommand("pause", "pause a running workflow after its current step",
				"paused: the step in flight finishes, the next one waits for resume", (*queuety.Client).PauseWorkflow),
			workflowOpCommand("resume", "resume a paused workflow",
				"resumed", (*queuety.Client).ResumeWorkflow),
			workflowAnswerCommand("approve", "approve a workflow's approval or decision wait", "approval", (*queuety.Client).Approve),
			workflowAnswerCommand("reject", "reject a workflow's decision wait", "rejected", (*queuety.Client).Reject),
			workflowAnswerCommand("input", "submit input to a workflow's input wait", "input", (*queuety.Client).SubmitInput),
			workflowRewindCommand(),
			workflowForkCommand(),
			workflowStateAtCommand(),
			workflowTimelineCommand(),
			workflowExportCommand(),
			workflowTraceCommand(),
			workflowReplayCommand(),
			workflowArtifactsCommand(),
			workflowArtifactCommand(),
			workflowPruneEventsCommand(),
			workflowPurgeCommand(),
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
				return withStore(e, func(c *queuety.Client) error {
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
				})
			}
		},
	}
}

func nonNilState(s queuety.State) queuety.State {
	if s == nil {
		return queuety.State{}
	}
	return s
}
