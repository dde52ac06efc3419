package queuety

import "github.com/queuety/queuety-go/internal/engine"

// WorkflowDescription is the result of Client.DescribeWorkflow: everything
// known about one workflow — its status, steps with their jobs and
// attempts, deadlines and timeouts, failures with their category, and the
// timeline of events. Times are ISO 8601 strings in UTC and durations ISO
// 8601 durations; it marshals to the JSON the CLI prints with --json.
type WorkflowDescription = engine.WorkflowDescription

// DescribeOptions selects the page of a workflow's timeline and the jobs
// per step that Client.DescribeWorkflowWith reads.
type DescribeOptions = engine.DescribeOptions

// TraceOptions selects the page of a workflow's events that
// Client.TraceWorkflowWith returns.
type TraceOptions = engine.TraceOptions

// Bounds of workflow descriptions and traces.
const (
	// DefaultTimelineEntries is how many timeline entries a description
	// holds by default.
	DefaultTimelineEntries = engine.DefaultTimelineEntries
	// MaxTimelineEntries is the most timeline entries a description holds.
	MaxTimelineEntries = engine.MaxTimelineEntries
	// MaxTimelineOffset is the largest timeline offset a description
	// reads from.
	MaxTimelineOffset = engine.MaxTimelineOffset
	// DefaultJobsPerStep is how many jobs of each step a description lists
	// by default.
	DefaultJobsPerStep = engine.DefaultJobsPerStep
	// MaxJobsPerStep is the most jobs of each step a description lists.
	MaxJobsPerStep = engine.MaxJobsPerStep
	// DescribeFailures is how many of a workflow's failures (the newest) a
	// description lists; it counts them all.
	DescribeFailures = engine.DescribeFailures
	// DescribeSignals is how many of a workflow's signals (the newest) a
	// description lists; it counts them all.
	DescribeSignals = engine.DescribeSignals
	// DescribeTextChars bounds a failure message a description lists;
	// a longer one is cut.
	DescribeTextChars = engine.DescribeTextChars
	// DescribePayloadBytes bounds a signal payload a description lists;
	// a longer one is left out.
	DescribePayloadBytes = engine.DescribePayloadBytes
	// DefaultTraceEvents is how many events a trace page holds by default.
	DefaultTraceEvents = engine.DefaultTraceEvents
	// MaxTraceEvents is the most events a trace page holds.
	MaxTraceEvents = engine.MaxTraceEvents
	// TraceEventBytes bounds the JSON of the events of one trace page.
	TraceEventBytes = engine.TraceEventBytes
	// TraceValueBytes bounds one JSON value of a trace; longer ones are
	// left out.
	TraceValueBytes = engine.TraceValueBytes
	// TraceJobsPerStep is how many jobs of each step a trace lists.
	TraceJobsPerStep = engine.TraceJobsPerStep
	// TraceLogs is how many log rows (the newest) a trace lists.
	TraceLogs = engine.TraceLogs
	// TraceSignals is how many signals (the newest) a trace lists.
	TraceSignals = engine.TraceSignals
	// TraceSignalBytes bounds the payloads of a trace's signals together;
	// those past it are left out.
	TraceSignalBytes = engine.TraceSignalBytes
	// TraceArtifacts is how many artifacts (the first by key) a trace
	// lists.
	TraceArtifacts = engine.TraceArtifacts
	// TraceArtifactBytes bounds the contents and metadata of a trace's
	// artifacts together; those past it are left out.
	TraceArtifactBytes = engine.TraceArtifactBytes
)
