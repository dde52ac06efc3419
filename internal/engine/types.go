package engine

import "github.com/queuety/queuety-go/queuetytype"

// The engine spells the public rows, options and errors of package
// queuetytype as its own.

// Sentinel errors (see package queuetytype).
var (
	ErrNotFound         = queuetytype.ErrNotFound
	ErrInvalidTimeout   = queuetytype.ErrInvalidTimeout
	ErrInvalidState     = queuetytype.ErrInvalidState
	ErrStaleAttempt     = queuetytype.ErrStaleAttempt
	ErrDeadlineExceeded = queuetytype.ErrDeadlineExceeded
	ErrWorkerShutdown   = queuetytype.ErrWorkerShutdown
	ErrLeaseLost        = queuetytype.ErrLeaseLost
	ErrNoAttempt        = queuetytype.ErrNoAttempt
	ErrNoWorkflowStep   = queuetytype.ErrNoWorkflowStep
)

// Public types (see package queuetytype for their fields).
type (
	TimeoutError         = queuetytype.TimeoutError
	PanicError           = queuetytype.PanicError
	HandlerNotFoundError = queuetytype.HandlerNotFoundError
	ContinueAsNewError   = queuetytype.ContinueAsNewError
	RunningAttempt       = queuetytype.JobInfo
	Artifact             = queuetytype.Artifact
	Backoff              = queuetytype.Backoff
	BackoffStrategy      = queuetytype.BackoffStrategy
	ActivityTimeouts     = queuetytype.ActivityTimeouts
	Rate                 = queuetytype.Rate
	JobResources         = queuetytype.JobResources
	JobSpec              = queuetytype.JobSpec
	ForEachResult        = queuetytype.ForEachResult
	ForEachInfo          = queuetytype.ForEachInfo
	ChildInfo            = queuetytype.ChildInfo
	Timeouts             = queuetytype.Timeouts
	JobInfoRow           = queuetytype.JobInfoRow
	TimelineEntry        = queuetytype.TimelineEntry
)

// Public constants (see package queuetytype).
const (
	BackoffExponential = queuetytype.BackoffExponential
	BackoffFixed       = queuetytype.BackoffFixed
	BackoffLinear      = queuetytype.BackoffLinear
	MaxBackoff         = queuetytype.MaxBackoff

	ForEachQuorum = queuetytype.ForEachQuorum
	WaitQuorum    = queuetytype.WaitQuorum

	DefaultQueue           = queuetytype.DefaultQueue
	DefaultMaxAttempts     = queuetytype.DefaultMaxAttempts
	MaxAttemptsLimit       = queuetytype.MaxAttemptsLimit
	DefaultStaleTimeout    = queuetytype.DefaultStaleTimeout
	DefaultLeaseTimeout    = queuetytype.DefaultLeaseTimeout
	DefaultDeadlineHandoff = queuetytype.DefaultDeadlineHandoff
	DefaultMaxForEachItems = queuetytype.DefaultMaxForEachItems
	DefaultArtifactKind    = queuetytype.DefaultArtifactKind
	StaleMessage           = queuetytype.StaleMessage
)

// ParsePriority accepts 0-3 or low/normal/high/urgent (any case).
func ParsePriority(s string) (queuetytype.Priority, error) { return queuetytype.ParsePriority(s) }

// State is a decoded JSON object as handlers see it: package queuety's
// State has this underlying type, so values convert both ways for free.
type State = map[string]any

// Payload is a plain job's payload.
type Payload = State
