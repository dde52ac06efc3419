package queuetytest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/queuety/queuety-go/queuetytype"
)

// maxShown caps the rows a failure message lists.
const maxShown = 25

// jobNoun is `job "handler"` (or `jobs`), or `job` for any handler.
func jobNoun(handler string, n int) string {
	noun := "job"
	if n != 1 {
		noun = "jobs"
	}
	if handler == "" {
		return noun
	}
	return fmt.Sprintf("%s %q", noun, handler)
}

// workflowNoun is `workflow "name"` (or `workflows`), or `workflow` for any
// name.
func workflowNoun(name string, n int) string {
	noun := "workflow"
	if n != 1 {
		noun = "workflows"
	}
	if name == "" {
		return noun
	}
	return fmt.Sprintf("%s %q", noun, name)
}

// handlerList quotes a set of handler names, sorted.
func handlerList(set map[string]bool) string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// jobListing lists every job of src, for a failure message.
func jobListing(t testing.TB, src Source) string {
	t.Helper()
	jobs, err := listJobs(context.Background(), src, queuetytype.JobFilter{})
	if err != nil {
		return fmt.Sprintf("(listing the jobs failed: %v)", err)
	}
	if len(jobs) == 0 {
		return "no jobs were dispatched"
	}
	return fmt.Sprintf("jobs dispatched (%d):\n%s", len(jobs), formatJobs(jobs))
}

// workflowListing lists every workflow of src, for a failure message.
func workflowListing(t testing.TB, src Source) string {
	t.Helper()
	wfs, err := listWorkflows(context.Background(), src, queuetytype.WorkflowFilter{})
	if err != nil {
		return fmt.Sprintf("(listing the workflows failed: %v)", err)
	}
	if len(wfs) == 0 {
		return "no workflows were dispatched"
	}
	return fmt.Sprintf("workflows dispatched (%d):\n%s", len(wfs), formatWorkflows(wfs))
}

// formatJobs lists jobs one a line, at most maxShown of them:
//
//	job 3: send_email queue=mail priority=low status=pending delay=10m0s payload={"to":"ana@example.com"}
func formatJobs(jobs []*queuetytype.Job) string {
	var b strings.Builder
	for i, j := range jobs {
		if i == maxShown {
			fmt.Fprintf(&b, "  ... and %d more\n", len(jobs)-maxShown)
			break
		}
		fmt.Fprintf(&b, "  job %d: %s", j.ID, j.Handler)
		if j.WorkflowID != 0 {
			fmt.Fprintf(&b, " (workflow %d", j.WorkflowID)
			if j.StepIndex != nil {
				fmt.Fprintf(&b, " step %d", *j.StepIndex)
			}
			b.WriteString(")")
		}
		fmt.Fprintf(&b, " queue=%s priority=%s status=%s delay=%s payload=%s\n",
			j.Queue, j.Priority, j.Status, jobDelay(j), publicJSON(j.Payload))
	}
	return b.String()
}

// formatWorkflows lists workflows one a line, at most maxShown of them:
//
//	workflow 1: data_import status=running step=1/4 queue=default priority=low state={"source":"x"}
func formatWorkflows(wfs []*queuetytype.Workflow) string {
	var b strings.Builder
	for i, wf := range wfs {
		if i == maxShown {
			fmt.Fprintf(&b, "  ... and %d more\n", len(wfs)-maxShown)
			break
		}
		state, _ := decodeObject(wf.State)
		queue, priority := workflowQueue(state)
		fmt.Fprintf(&b, "  workflow %d: %s status=%s step=%d/%d queue=%s priority=%s state=%s\n",
			wf.ID, wf.Name, wf.Status, wf.CurrentStep, wf.TotalSteps, queue, priority, publicJSON(wf.State))
	}
	return b.String()
}

// publicJSON is a stored JSON object without its private keys, as compact
// JSON with sorted keys.
func publicJSON(raw []byte) string {
	m, err := decodeObject(raw)
	if err != nil {
		return string(raw)
	}
	b, err := json.Marshal(publicOf(m))
	if err != nil {
		return string(raw)
	}
	return string(b)
}
