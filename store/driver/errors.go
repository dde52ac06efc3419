package driver

import (
	"errors"

	"github.com/queuety/queuety-go/queuetytype"
)

// Errors a store returns. The engine and package queuety pass them on
// unchanged, so callers test for them with errors.Is.
var (
	// ErrNotFound means the job, workflow or schedule does not exist
	// (queuetytype.ErrNotFound).
	ErrNotFound = queuetytype.ErrNotFound
	// ErrDuplicate means a unique key already exists.
	ErrDuplicate = errors.New("queuety: duplicate key")
	// ErrInvalidArgument means a caller passed a value the engine cannot
	// store or act on (queuetytype.ErrInvalidArgument).
	ErrInvalidArgument = queuetytype.ErrInvalidArgument
	// ErrRowData marks an error caused by the values of a row rather than
	// by the statement or the connection: a value out of its column's
	// range, a value a CHECK constraint or trigger refuses, a value the
	// store cannot read into its Go type. Running the transaction again
	// fails the same way, so the engine narrows a claim that fails with it
	// down to the row and buries that row instead of retrying. A store
	// marks such errors (errors.Is reports them) without changing their
	// text.
	ErrRowData = errors.New("queuety: row data error")
	// ErrHeldJournalLeft marks a failed HeldClaimer.JournalHeld whose row
	// the server may have written (the client saw an error, perhaps after
	// the commit) and that the store could not delete either: unless the
	// store deletes it later, stale recovery counts an attempt for its
	// jobs once it expires.
	ErrHeldJournalLeft = errors.New("queuety: held claim journal row may be left")
)
