package queuety

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// Client dispatches jobs and workflows and operates on them. It is safe for
// concurrent use. Create one with Open (or NewClient around a Store) and
// share it.
type Client struct {
	store  driver.Store
	cfg    config
	clock  Clock
	log    *slog.Logger
	engine *Engine
}

// NewClient wraps an open Store. Open is the usual way to get a Client.
func NewClient(s driver.Store, opts ...Option) *Client { return newClient(s, newConfig(opts)) }

func newClient(s driver.Store, cfg config) *Client {
	c := &Client{store: s, cfg: cfg, clock: cfg.clock, log: cfg.logger}
	c.engine = &Engine{c: c}
	return c
}

// Store returns the underlying store.
func (c *Client) Store() driver.Store { return c.store }

// Clock returns the clock the client uses.
func (c *Client) Clock() Clock { return c.clock }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// Engine returns the engine's state transitions, used by workers and
// sweepers.
func (c *Client) Engine() *Engine { return c.engine }

// StaleTimeout is the age at which an unrenewed claim counts as stale.
func (c *Client) StaleTimeout() time.Duration { return c.cfg.staleTimeout }

// Close closes the store.
func (c *Client) Close() error { return c.store.Close() }

// JobRequest is one job for DispatchMany.
type JobRequest struct {
	Handler string
	Payload any // a State, map or struct that encodes as a JSON object; nil for none
	Options []JobOption
}

// Dispatch enqueues one job for handler and returns its id. The payload
// must encode as a JSON object (a State, a map or a struct); nil means an
// empty payload. Invalid input returns an error wrapping
// ErrInvalidArgument and writes nothing.
//
// With the Unique option, an identical pending or processing job's id is
// returned instead of a new one.
func (c *Client) Dispatch(ctx context.Context, handler string, payload any, opts ...JobOption) (int64, error) {
	job, spec, err := c.buildJob(JobRequest{Handler: handler, Payload: payload, Options: opts})
	if err != nil {
		return 0, err
	}
	err = c.store.InTx(ctx, func(tx driver.Tx) error {
		if spec.Unique {
			id, err := tx.JobFindActiveByHash(ctx, job.Handler, job.PayloadHash)
			if err != nil {
				return err
			}
			if id != 0 {
				job.ID = id
				return nil
			}
		}
		job.ID = 0
		return tx.JobInsert(ctx, []*driver.Job{job})
	})
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch %q: %w", handler, err)
	}
	return job.ID, nil
}

// DispatchMany enqueues many jobs with one multi-row insert, in one
// transaction, and returns their ids in order. The Unique option is not
// supported here. Either every job is written or none.
func (c *Client) DispatchMany(ctx context.Context, reqs []JobRequest) ([]int64, error) {
	jobs := make([]*driver.Job, len(reqs))
	for i, r := range reqs {
		job, spec, err := c.buildJob(r)
		if err != nil {
			return nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, err)
		}
		if spec.Unique {
			return nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, invalidf("Unique is not supported in DispatchMany"))
		}
		jobs[i] = job
	}
	const chunk = 500 // keeps statements well below max_allowed_packet
	err := c.store.InTx(ctx, func(tx driver.Tx) error {
		for start := 0; start < len(jobs); start += chunk {
			if err := tx.JobInsert(ctx, jobs[start:min(start+chunk, len(jobs))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch batch: %w", err)
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// buildJob validates a request and turns it into a row.
func (c *Client) buildJob(r JobRequest) (*driver.Job, JobSpec, error) {
	spec := ResolveJobOptions(r.Options...)
	if err := validateHandlerName(r.Handler); err != nil {
		return nil, spec, err
	}
	if err := spec.Validate(); err != nil {
		return nil, spec, err
	}
	doc, err := toObject("payload", r.Payload)
	if err != nil {
		return nil, spec, err
	}
	for _, k := range doc.Keys() {
		if k == runtimeKey || k == callbackKey {
			return nil, spec, invalidf("payload key %q is reserved", k)
		}
	}
	rt := runtimeOptions{MaxAttempts: spec.MaxAttempts, Backoff: spec.Backoff, Timeouts: spec.Timeouts}
	if rt.Backoff != nil || rt.Timeouts != (ActivityTimeouts{}) {
		if rt.MaxAttempts == 0 {
			rt.MaxAttempts = DefaultMaxAttempts
		}
		doc.Set(runtimeKey, rt.encode())
	}
	payload, err := phpjson.Marshal(doc)
	if err != nil {
		return nil, spec, invalidf("payload does not encode as JSON: %v", err)
	}
	now := c.clock.Now()
	job := &driver.Job{
		Queue:       orDefault(spec.Queue, DefaultQueue),
		Handler:     r.Handler,
		Payload:     payload,
		Priority:    spec.Priority,
		Status:      JobPending,
		MaxAttempts: orDefaultInt(spec.MaxAttempts, DefaultMaxAttempts),
		AvailableAt: dueAt(now, spec.Delay),
		DependsOn:   spec.DependsOn,
		CostUnits:   1,
		CreatedAt:   floorSecond(now),
	}
	if spec.Unique {
		sum := sha256.Sum256(payload)
		job.PayloadHash = hex.EncodeToString(sum[:])
	}
	applyScheduleDeadlines(job, spec.Timeouts, now)
	return job, spec, nil
}

// applyScheduleDeadlines sets the deadlines that start at scheduling.
func applyScheduleDeadlines(job *driver.Job, t ActivityTimeouts, now time.Time) {
	if t.ScheduleToStart > 0 {
		job.ScheduleToStartAt = job.AvailableAt.Add(t.ScheduleToStart)
	}
	if t.ScheduleToClose > 0 {
		job.ScheduleToCloseAt = now.Add(t.ScheduleToClose)
	}
}

// dueAt is the stored available_at for a job dispatched at now with delay
// d: now for immediate jobs (so they are due at once), rounded up for
// delayed ones (never early).
func dueAt(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return floorSecond(now)
	}
	return ceilSecond(now.Add(d))
}

func validateHandlerName(h string) error {
	switch {
	case h == "":
		return invalidf("handler name is empty")
	case len(h) > 255:
		return invalidf("handler name is longer than 255 characters")
	}
	return nil
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
