package driver

import "time"

// Webhook is one row of Queuety's webhooks table: a URL that is sent an
// HTTP POST when Event happens, with its signing secret from the Go
// engine's own table (Queuety PHP has no secrets).
type Webhook struct {
	ID        int64
	Event     string
	URL       string
	CreatedAt time.Time
	// Secret is the key the worker signs POSTs with ("whsec_..."), or ""
	// when the webhook has none (one Queuety PHP registered). It is a
	// credential: never log or print it.
	Secret string
	// Signed reports that the webhook has a secret, also where Secret is
	// left out (queuety.Client.Webhooks).
	Signed bool
}

// Artifact is one row of Queuety's artifacts table: a named output of a
// workflow, stored outside its state. (WorkflowID, Key) is unique.
type Artifact struct {
	ID         int64
	WorkflowID int64
	Key        string
	Kind       string // "json", "text", "markdown", ...
	// Content is the stored text: JSON text for kind json (any case),
	// the text itself or JSON text for other kinds. Nil when a list was
	// read without content.
	Content []byte
	// Metadata is the stored JSON text, or nil for SQL NULL.
	Metadata  []byte
	StepIndex *int // the workflow step that stored it, if any
	CreatedAt time.Time
	UpdatedAt time.Time

	// OmittedContentBytes and OmittedMetadataBytes are the lengths of the
	// content and metadata Tx.ArtifactPage left out (nil), or 0.
	OmittedContentBytes, OmittedMetadataBytes int64
}
