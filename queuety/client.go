package queuety

import (
	"context"
	"fmt"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/engine"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// Client dispatches jobs and workflows and operates on them. It is safe for
// concurrent use. Create one with Open and share it.
type Client struct {
	engine    *engine.Engine
	store     driver.Store
	registry  *Registry // see WithRegistry
	templates templates // RegisterWorkflowTemplate
}

func newClient(s driver.Store, cfg config) *Client {
	if l, ok := s.(driver.LogSetter); ok && cfg.logger != nil {
		l.SetLogger(cfg.logger)
	}
	e := engine.New(s, engine.Config{
		Clock: cfg.clock, Logger: cfg.logger, DefaultBackoff: cfg.backoff, StaleTimeout: cfg.staleTimeout,
		LeaseTimeout:         cfg.leaseTimeout,
		DeadlineHandoff:      cfg.handoff,
		Observer:             cfg.observer,
		PHPBatchCallbacks:    cfg.phpBatchQueue,
		PHPWorkflowCallbacks: cfg.phpWorkflowQueue,
		WakeKey:              cfg.wakeKey,
		MaxForEachItems:      cfg.maxForEachItems,
	})
	return &Client{engine: e, store: s, registry: cfg.registry}
}

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
	doc, err := workflowstate.ToObject("payload", payload)
	if err != nil {
		return 0, err
	}
	return c.engine.Dispatcher().Dispatch(ctx, handler, doc, c.spec(handler, opts))
}

// DispatchMany enqueues many jobs with multi-row inserts, in one
// transaction, and returns their ids in order. Either every job is written
// or none.
//
// A request with the Unique option is handled as Queuety's
// dispatch(...)->unique() would handle the requests dispatched one after
// another: when a job with the same handler and payload is pending or
// processing, or an identical Unique request comes earlier in reqs, its
// place in the result holds that job's id and no new job is written.
func (c *Client) DispatchMany(ctx context.Context, reqs []JobRequest) ([]int64, error) {
	out := make([]dispatch.JobRequest, len(reqs))
	for i, r := range reqs {
		doc, err := workflowstate.ToObject("payload", r.Payload)
		if err != nil {
			return nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, err)
		}
		out[i] = dispatch.JobRequest{Handler: r.Handler, Payload: doc, Spec: c.spec(r.Handler, r.Options)}
	}
	return c.engine.Dispatcher().DispatchMany(ctx, out)
}

// StoreInfo describes the store the client runs on: its driver, server
// version, table prefix and address (without credentials), the warnings
// found when it was opened, and whether it runs one write transaction at
// a time.
func (c *Client) StoreInfo() queuetytype.StoreInfo { return c.store.Info() }

// Migrate creates or upgrades the store's tables. Open runs it unless
// SkipMigrate is given; it is safe to run again.
func (c *Client) Migrate(ctx context.Context) error { return c.store.Migrate(ctx) }
