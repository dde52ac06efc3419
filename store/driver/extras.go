package driver

import "time"

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
