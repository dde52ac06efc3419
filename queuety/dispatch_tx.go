package queuety

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// ErrNoSQLStore is returned by the transactional dispatches when the
// client's store is not built on database/sql.
var ErrNoSQLStore = fmt.Errorf("%w: the client's store does not run on database/sql", queuetytype.ErrInvalidArgument)

// DB returns the connection pool of the client's store (both stores
// shipped with queuety-go have one), or nil for a store without one.
//
// Begin the transactions you pass to DispatchTx, DispatchManyTx and
// DispatchWorkflowTx on it: they then reach the same database with the
// session settings the store chose. It is also how to share one SQLite
// file with the store, whose pool holds a single connection: while such a
// transaction is open, everything else on the client (and its workers)
// waits for it, so do not call the client's non-Tx methods inside it.
// Do not close the pool; Close the client.
func (c *Client) DB() *sql.DB {
	if s, ok := c.store.(driver.SQLStore); ok {
		return s.SQLDB()
	}
	return nil
}

// sqlTx wraps a caller's transaction as the store's row operations.
func (c *Client) sqlTx(tx *sql.Tx) (driver.Tx, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: nil *sql.Tx", queuetytype.ErrInvalidArgument)
	}
	s, ok := c.store.(driver.SQLStore)
	if !ok {
		return nil, ErrNoSQLStore
	}
	return s.WrapTx(tx), nil
}

// DispatchTx enqueues one job inside tx, a database/sql transaction the
// caller began and will commit or roll back, and returns its id. The job
// row is written on tx's connection (no transaction of its own, no retry),
// so it exists if and only if tx commits: enqueue work in the same
// transaction as the business rows it belongs to.
//
// tx must be on the client's database: begin it on DB(), or on your own
// *sql.DB for the same MySQL database (or SQLite file, with the same
// driver). The tables are the client's, named by its prefix. Options and
// validation are Dispatch's, Unique included: an identical job pending or
// processing, as tx sees the table, returns that job's id.
//
// No wake-up is sent for the job: idle workers notice it at their next
// look after the commit, within their idle poll interval
// (worker.IdlePollInterval, 10 s by default, while their cross-process
// wake-up is live). On an error, roll tx back.
func (c *Client) DispatchTx(ctx context.Context, tx *sql.Tx, handler string, payload any, opts ...JobOption) (int64, error) {
	dtx, err := c.sqlTx(tx)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch %q: %w", handler, err)
	}
	doc, err := workflowstate.ToObject("payload", payload)
	if err != nil {
		return 0, err
	}
	return c.engine.Dispatcher().DispatchIn(ctx, dtx, handler, doc, c.spec(handler, opts))
}

// DispatchManyTx enqueues jobs inside tx, as DispatchMany does (Unique
// included), and returns their ids in order. The rows exist if and only
// if tx commits; see DispatchTx for what tx must be.
func (c *Client) DispatchManyTx(ctx context.Context, tx *sql.Tx, reqs []JobRequest) ([]int64, error) {
	dtx, err := c.sqlTx(tx)
	if err != nil {
		return nil, fmt.Errorf("queuety: dispatch batch: %w", err)
	}
	out, err := c.engineRequests(reqs)
	if err != nil {
		return nil, err
	}
	return c.engine.Dispatcher().DispatchManyIn(ctx, dtx, out)
}

// DispatchWorkflowTx validates def and starts a workflow inside tx: the
// workflow row, its first step's job(s) and the workflow_started log
// exist if and only if tx commits. See DispatchTx for what tx must be and
// DispatchWorkflow for def and initial.
//
// With an idempotency key used before (as tx sees it), it returns the
// existing workflow's id and writes nothing. If another transaction
// stores the same key while tx is open, it returns an error and tx must be
// rolled back.
func (c *Client) DispatchWorkflowTx(ctx context.Context, tx *sql.Tx, def WorkflowDefinition, initial any) (int64, error) {
	dtx, err := c.sqlTx(tx)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	def, err = def.normalized()
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow: %w", err)
	}
	state, err := workflowstate.ToObject("initial state", initial)
	if err != nil {
		return 0, fmt.Errorf("queuety: dispatch workflow %q: %w", def.Name, err)
	}
	return c.engine.Dispatcher().DispatchWorkflowIn(ctx, dtx, def.engineDefinition(), state)
}

// engineRequests converts JobRequests into the engine's form.
func (c *Client) engineRequests(reqs []JobRequest) ([]dispatch.JobRequest, error) {
	out := make([]dispatch.JobRequest, len(reqs))
	for i, r := range reqs {
		doc, err := workflowstate.ToObject("payload", r.Payload)
		if err != nil {
			return nil, fmt.Errorf("queuety: dispatch batch item %d: %w", i, err)
		}
		out[i] = dispatch.JobRequest{Handler: r.Handler, Payload: doc, Spec: c.spec(r.Handler, r.Options)}
	}
	return out, nil
}
