package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/observe"
	"github.com/queuety/queuety-go/store/driver"
)

// Clock tells the dispatches the time: every row they write is stamped
// with it.
type Clock interface {
	Now() time.Time
}

// Config holds what a Service needs beside its store. The engine fills
// every field in New; the functions are the engine's rules, written once
// there.
type Config struct {
	// Clock tells the time.
	Clock Clock
	// Observer hears every dispatch (nil: none).
	Observer observe.Observer
	// NoteJobs returns ctx carrying a note of the jobs a dispatch's
	// transaction inserts, and a function called after they committed, so
	// idle claim loops start them without a poll (default: nothing).
	NoteJobs func(ctx context.Context) (context.Context, func())
	// EnqueueStep enqueues the job (or jobs) of step idx of wf: a new
	// workflow's first step.
	EnqueueStep func(ctx context.Context, tx driver.Tx, wf *driver.Workflow, state *phpjson.Object, steps []*workflowdef.Step, idx int, now time.Time) error
	// Batches writes the rows of a batch or a chain.
	Batches *batch.Service
}

// Service writes dispatched jobs, batches, chains and workflows, each
// dispatch in one transaction. It is safe for concurrent use.
type Service struct {
	store driver.Store
	cfg   Config
}

// New returns the dispatches of store.
func New(store driver.Store, cfg Config) *Service {
	if cfg.NoteJobs == nil {
		cfg.NoteJobs = func(ctx context.Context) (context.Context, func()) { return ctx, func() {} }
	}
	return &Service{store: store, cfg: cfg}
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", driver.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
