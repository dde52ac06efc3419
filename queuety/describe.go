package queuety

import "github.com/queuety/queuety-go/internal/engine"

// WorkflowDescription is the result of Client.DescribeWorkflow: everything
// known about one workflow — its status, steps with their jobs and
// attempts, deadlines and timeouts, failures with their category, and the
// timeline of events. Times are ISO 8601 strings in UTC and durations ISO
// 8601 durations; it marshals to the JSON the CLI prints with --json.
type WorkflowDescription = engine.WorkflowDescription
