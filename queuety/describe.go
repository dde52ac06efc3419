package queuety

import "github.com/queuety/queuety-go/internal/engine"

// The result of Client.DescribeWorkflow. Times are ISO 8601 strings in
// UTC, durations ISO 8601 durations; every type marshals to the JSON the
// CLI prints with --json.
type (
	// WorkflowDescription is everything known about one workflow: its
	// status, steps with their jobs and attempts, deadlines and timeouts,
	// failures and the timeline of events.
	WorkflowDescription = engine.WorkflowDescription
	// DeadlineInfo is the execution or run deadline of a workflow.
	DeadlineInfo = engine.DeadlineInfo
	// WaitInfo is an open signal wait.
	WaitInfo = engine.WaitInfo
	// StepInfo is one step of the definition with its status and jobs.
	StepInfo = engine.StepInfo
	// Timeouts are a step's configured timeouts.
	Timeouts = engine.Timeouts
	// JobInfoRow is one job of a step: status, attempts, deadlines.
	JobInfoRow = engine.JobInfoRow
	// JobDeadlines are a job's stored activity deadlines.
	JobDeadlines = engine.JobDeadlines
	// AttemptInfo is one attempt of a job.
	AttemptInfo = engine.AttemptInfo
	// FailureInfo is one recorded failure, with its category.
	FailureInfo = engine.FailureInfo
	// TimelineEntry is one event of the workflow's timeline.
	TimelineEntry = engine.TimelineEntry
	// SignalInfo is one received signal.
	SignalInfo = engine.SignalInfo
)
