package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// workflowStatusJSON is `workflow status --json`: the workflow row, its
// public state, and what wp queuety workflow status prints besides.
type workflowStatusJSON struct {
	workflowJSON
	StepName          string                `json:"step_name,omitempty"`
	DefinitionVersion string                `json:"definition_version,omitempty"`
	DefinitionHash    string                `json:"definition_hash,omitempty"`
	IdempotencyKey    string                `json:"idempotency_key,omitempty"`
	Wait              *queuetytype.WaitInfo `json:"wait,omitempty"`
	Budget            map[string]int64      `json:"budget,omitempty"`
	ArtifactCount     int                   `json:"artifact_count"`
	ArtifactKeys      []string              `json:"artifact_keys"`
}

func workflowStatusCommand() *Command {
	return &Command{
		Name:    "status",
		Summary: "show a workflow's status, progress, wait, budget, artifacts and public state",
		Args:    "ID",
		Help: `Prints what wp queuety workflow status prints: the step in progress and its
name, the definition's version and hash, the idempotency key, the wait in
progress (signals or workflows waited for, its mode and timeout), the budget
(its limits and what the workflow used: transitions, cost units, started
workflows, public state bytes), the artifacts' count and keys, and the
public state.`,
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
				d, err := c.DescribeWorkflowWith(e.Ctx, id, queuetytype.DescribeOptions{TimelineLimit: 1, JobsPerStep: 1})
				if err != nil {
					return err
				}
				arts, err := c.Artifacts(e.Ctx, id, false)
				if err != nil {
					return err
				}
				v := workflowStatusJSON{workflowJSON: workflowView(w), StepName: d.CurrentStepName,
					DefinitionHash: d.DefinitionHash, IdempotencyKey: d.IdempotencyKey, Wait: d.Wait,
					ArtifactCount: len(arts), ArtifactKeys: []string{}}
				v.State = nonNilState(state)
				for _, a := range arts {
					v.ArtifactKeys = append(v.ArtifactKeys, a.Key)
				}
				v.DefinitionVersion, v.Budget = versionAndBudget(w.State)
				if e.Globals.JSON {
					return printJSON(e.Stdout, v)
				}
				fmt.Fprintf(e.Stdout, "Workflow %d (%s): %s\n", w.ID, w.Name, w.Status)
				f := newFieldTable(e.Stdout)
				f.add("steps done", fmt.Sprintf("%d of %d", w.CurrentStep, w.TotalSteps))
				f.add("step name", v.StepName)
				f.add("version", v.DefinitionVersion)
				f.add("definition hash", v.DefinitionHash)
				f.add("idempotency key", v.IdempotencyKey)
				f.add("started at", ts(w.StartedAt))
				f.add("completed at", ts(w.CompletedAt))
				f.add("failed at", ts(w.FailedAt))
				f.add("error", w.ErrorMessage)
				f.add("deadline", ts(w.DeadlineAt))
				if v.Run > 1 || !w.RunDeadlineAt.IsZero() {
					f.add("run", fmt.Sprintf("%d, started %s", v.Run, dash(v.RunStartedAt)))
					f.add("run deadline", v.RunDeadlineAt)
				}
				if v.Wait != nil {
					wait := v.Wait.Type + ": " + strings.Join(v.Wait.WaitingFor, ", ")
					if v.Wait.Mode != "" {
						wait += " (" + v.Wait.Mode + ")"
					}
					f.add("waiting for", wait)
					f.add("wait times out at", v.Wait.TimeoutAt)
				} else {
					f.add("signal wait times out at", ts(w.WaitDeadlineAt))
				}
				if v.Budget != nil {
					f.add("budget", budgetLine(v.Budget))
				}
				f.add("artifacts", fmt.Sprintf("%d %s", v.ArtifactCount, strings.Join(v.ArtifactKeys, ", ")))
				f.add("state", compactJSON(v.State))
				return f.Flush()
			})
		},
	}
}

// versionAndBudget reads the definition version and the budget summary
// (Queuety's: the limits set, and the transitions, cost units and started
// workflows counted, and the public state's size in bytes) from a stored
// state; the budget is nil when the workflow has none.
func versionAndBudget(raw []byte) (string, map[string]int64) {
	doc, err := workflowstate.DecodeObject("state", raw)
	if err != nil {
		return "", nil
	}
	version := ""
	if v, ok := doc.Get("_definition_version"); ok {
		if s, ok := v.(string); ok {
			version = strings.TrimSpace(s)
		}
	}
	if !workflowstate.HasBudget(doc) {
		return version, nil
	}
	b := map[string]int64{}
	for _, k := range workflowstate.BudgetKeys {
		if n := workflowstate.BudgetLimit(doc, k); n > 0 {
			b[k] = n
		}
	}
	for _, k := range []string{"transitions", "cost_units", "started_workflows"} {
		b[k] = workflowstate.Counter(doc, k)
	}
	b["public_state_bytes"] = int64(len(workflowstate.EncodePublicJSON(doc)))
	return version, b
}

// budgetLine writes a budget summary as "used/limit" pairs.
func budgetLine(b map[string]int64) string {
	var parts []string
	for _, p := range [][2]string{
		{"transitions", "max_transitions"}, {"cost units", "max_cost_units"},
		{"started workflows", "max_started_workflows"}, {"public state bytes", "max_state_bytes"},
	} {
		used := b[strings.ReplaceAll(p[0], " ", "_")] // "cost units": cost_units
		if limit, ok := b[p[1]]; ok {
			parts = append(parts, fmt.Sprintf("%s %d/%d", p[0], used, limit))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", p[0], used))
		}
	}
	if n, ok := b["max_for_each_items"]; ok {
		parts = append(parts, fmt.Sprintf("for-each items at most %d", n))
	}
	return strings.Join(parts, ", ")
}
