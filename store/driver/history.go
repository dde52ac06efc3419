package driver

// The bounded reads of a workflow's history: pages of its events, signals,
// failures and artifacts, its step jobs a step at a time, and counts, so
// that describing or tracing a workflow with many events, signals,
// failures, artifacts or jobs reads a bounded number of rows and bytes.

// EventQuery selects workflow_events rows of one workflow for
// Tx.EventPage. Zero fields do not filter.
type EventQuery struct {
	WorkflowID int64
	// IDs keeps only these events.
	IDs []int64
	// StepIndex keeps only the events of this step.
	StepIndex *int
	// Events keeps only events of these types.
	Events []EventType
	// WithStateAfter keeps only events that have a state_after.
	WithStateAfter bool
	// Order is the order of the rows (default by id, oldest first).
	Order EventOrder
	// Offset skips that many rows; Limit returns at most that many
	// (0: no limit).
	Offset, Limit int
	// Light leaves out the JSON columns input, output, state_before,
	// state_after, context and artifacts (their lengths are in
	// WorkflowEvent.Omitted); error is still read.
	Light bool
	// MaxColumnBytes > 0 leaves out every JSON column read that is longer
	// than this many bytes (its length is in WorkflowEvent.Omitted).
	MaxColumnBytes int
}

// EventOrder is the order of EventPage's rows.
type EventOrder int

const (
	// EventsByID orders by id, oldest first (Queuety's timeline order).
	EventsByID EventOrder = iota
	// EventsNewestFirst orders by id, newest first.
	EventsNewestFirst
	// EventsByTime orders by created_at, then id.
	EventsByTime
)

// EventColumns are the JSON columns of workflow_events, in table order:
// the keys of WorkflowEvent.Omitted.
var EventColumns = []string{"input", "output", "state_before", "state_after", "context", "artifacts", "chunks", "error"}

// JobStepQuery selects a workflow's jobs for Tx.JobListByStep.
type JobStepQuery struct {
	WorkflowID int64
	// PerStep > 0 returns at most that many jobs of each step (the jobs of
	// no step count as one more): the ones not completed first, then the
	// newest.
	PerStep int
	// MaxPayloadBytes > 0 leaves out payloads longer than that (their
	// length is in Job.OmittedPayloadBytes); negative leaves out every
	// payload and heartbeat_data.
	MaxPayloadBytes int
}

// JobStepCount counts a workflow's jobs of one step in one status.
type JobStepCount struct {
	StepIndex int // -1 for the jobs of no step
	Status    JobStatus
	Count     int64
}

// SignalQuery selects signals of one workflow for Tx.SignalPage.
type SignalQuery struct {
	WorkflowID int64
	// IDs keeps only these signals.
	IDs []int64
	// Limit returns at most that many rows, the newest (0: no limit).
	Limit int
	// MaxPayloadBytes > 0 leaves out payloads longer than that; negative
	// leaves out every payload. A left-out payload is nil, its length in
	// Signal.OmittedPayloadBytes.
	MaxPayloadBytes int
}

// FailureCount counts a workflow's failures of one category.
type FailureCount struct {
	Category FailureCategory
	Count    int64
}

// ArtifactQuery selects artifacts of one workflow for Tx.ArtifactPage.
type ArtifactQuery struct {
	WorkflowID int64
	// IDs keeps only these artifacts.
	IDs []int64
	// Limit returns at most that many rows, the first by key (0: no
	// limit).
	Limit int
	// MaxValueBytes > 0 leaves out a content or metadata longer than that;
	// negative leaves out every content and metadata. What is left out is
	// nil, its length in Artifact.OmittedContentBytes or
	// OmittedMetadataBytes.
	MaxValueBytes int
}
