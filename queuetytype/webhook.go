package queuetytype

import "time"

// Webhook is one row of Queuety's webhooks table: a URL that is sent an
// HTTP POST when Event happens, with its signing secret from the Go
// engine's own table (Queuety PHP has no secrets).
type Webhook struct {
	ID        int64     // the row's id
	Event     string    // the event that triggers it ("job.completed", ...)
	URL       string    // where the POST goes
	CreatedAt time.Time // when it was registered
	// Secret is the key the worker signs POSTs with ("whsec_..."), or ""
	// when the webhook has none (one Queuety PHP registered). It is a
	// credential: never log or print it.
	Secret string
	// Signed reports that the webhook has a secret, also where Secret is
	// left out (a listing of webhooks).
	Signed bool
}

// Artifact is a stored artifact, decoded the way Queuety's ArtifactStore
// returns it: a named output of a workflow, stored outside its state.
type Artifact struct {
	ID         int64  // the row's id
	WorkflowID int64  // the workflow it belongs to
	Key        string // its key, unique within the workflow
	Kind       string // "json", "text", "markdown", ...
	StepIndex  *int   // the workflow step that stored it, if any
	// Metadata is the decoded metadata; empty, never nil.
	Metadata map[string]any
	// Content is the decoded content when it was read (HasContent): for
	// kind json the JSON value (map[string]any, []any, string, int64,
	// float64, bool or nil; nil too when the stored text is not JSON), for
	// other kinds the stored text as a string.
	Content    any
	HasContent bool      // whether Content was read
	CreatedAt  time.Time // UTC, whole seconds
	UpdatedAt  time.Time // when it was last stored
}
