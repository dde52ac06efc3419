package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/queuety/queuety-go/internal/workflowstate"
)

type ctxKey struct{}

type attemptCtx struct {
	info RunningAttempt
	hb   heartbeater // held by value: one allocation for both
}

// HeartbeatThrottleDefault is the heartbeat throttle interval for jobs
// without a heartbeat timeout; with one, it is 0.8 × the timeout.
const HeartbeatThrottleDefault = 30 * time.Second

// heartbeater sends one attempt's heartbeats with client-side throttling.
type heartbeater struct {
	e      *Engine
	cj     *Claimed
	onLost func(error)

	mu          sync.Mutex
	interval    time.Duration
	lastSent    time.Time
	pending     []byte
	hasPending  bool
	timer       *time.Timer
	lastDetails []byte
	done        bool
}

func (h *heartbeater) beat(ctx context.Context, details []byte) error {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return ErrStaleAttempt
	}
	if details != nil {
		h.lastDetails = details
	}
	now := h.e.clock.Now()
	if !h.lastSent.IsZero() && now.Sub(h.lastSent) < h.interval {
		if details != nil || !h.hasPending {
			h.pending, h.hasPending = details, true
		}
		if h.timer == nil {
			wait := h.interval - now.Sub(h.lastSent)
			h.timer = time.AfterFunc(wait, h.flush)
		}
		h.mu.Unlock()
		return nil
	}
	h.lastSent = now
	// This send supersedes anything buffered in the previous window.
	h.pending, h.hasPending = nil, false
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.mu.Unlock()
	return h.send(ctx, details)
}

func (h *heartbeater) send(ctx context.Context, details []byte) error {
	err := h.e.Heartbeat(context.WithoutCancel(ctx), h.cj, details)
	if errors.Is(err, ErrStaleAttempt) {
		h.mu.Lock()
		h.done = true
		h.mu.Unlock()
		if h.onLost != nil {
			h.onLost(ErrLeaseLost)
		}
	}
	return err
}

// flush sends buffered details at the end of a throttle window.
func (h *heartbeater) flush() {
	h.mu.Lock()
	h.timer = nil
	if h.done || !h.hasPending {
		h.mu.Unlock()
		return
	}
	details := h.pending
	h.pending, h.hasPending = nil, false
	h.lastSent = h.e.clock.Now()
	h.mu.Unlock()
	if err := h.send(context.Background(), details); err != nil && !errors.Is(err, ErrStaleAttempt) {
		h.e.log.Warn("queuety: heartbeat flush failed", "job_id", h.cj.Job.ID, "err", err)
	}
}

// close stops the throttle timer and sends buffered details, before the
// attempt's result is recorded.
func (h *heartbeater) close(ctx context.Context) {
	h.mu.Lock()
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	pending, has := h.pending, h.hasPending && !h.done
	h.pending, h.hasPending = nil, false
	h.done = true
	h.mu.Unlock()
	if has && pending != nil {
		if err := h.e.Heartbeat(context.WithoutCancel(ctx), h.cj, pending); err != nil && !errors.Is(err, ErrStaleAttempt) {
			h.e.log.Warn("queuety: final heartbeat failed", "job_id", h.cj.Job.ID, "err", err)
		}
	}
}

// Attach returns a context for running cj's handler: it carries the
// RunningAttempt and the heartbeat channel. onLost is called (at most once per
// detection) when a heartbeat finds the attempt superseded. The returned
// function flushes buffered heartbeat details; call it when the handler
// returns and before Finish.
func (e *Engine) Attach(ctx context.Context, cj *Claimed, onLost func(error)) (context.Context, func()) {
	interval := HeartbeatThrottleDefault
	if hb := cj.runtime.Timeouts.Heartbeat; hb > 0 {
		interval = hb * 4 / 5
	}
	a := &attemptCtx{info: cj.Info(), hb: heartbeater{e: e, cj: cj, onLost: onLost, interval: interval}}
	ctx = context.WithValue(ctx, ctxKey{}, a)
	return ctx, func() { a.hb.close(ctx) }
}

// AttemptFrom returns the attempt running in ctx.
func AttemptFrom(ctx context.Context) (RunningAttempt, bool) {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return RunningAttempt{}, false
	}
	return a.info, true
}

// LastHeartbeat returns the details of the job's last heartbeat, recorded
// by this attempt or an earlier one, as JSON text; nil when there is none.
// A retry uses it to resume where the previous attempt stopped.
func LastHeartbeat(ctx context.Context) json.RawMessage {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return nil
	}
	a.hb.mu.Lock()
	defer a.hb.mu.Unlock()
	if a.hb.lastDetails != nil {
		return append(json.RawMessage(nil), a.hb.lastDetails...)
	}
	return append(json.RawMessage(nil), a.info.LastDetails...)
}

// Heartbeat reports that the running attempt is alive and, when details is
// not nil, stores details (anything that encodes as JSON) for a later
// attempt to read with LastHeartbeat. Calls are throttled on the client:
// the first is sent at once; calls within the throttle window (0.8 × the
// heartbeat timeout, or 30 s) only keep their details, which are sent when
// the window ends or the attempt finishes.
//
// It returns ErrStaleAttempt when the attempt no longer owns its job; the
// handler's ctx is then cancelled too.
func Heartbeat(ctx context.Context, details any) error {
	a, ok := ctx.Value(ctxKey{}).(*attemptCtx)
	if !ok {
		return ErrNoAttempt
	}
	var raw []byte
	if details != nil {
		b, err := workflowstate.EncodeUserJSON("heartbeat details", details)
		if err != nil {
			return err
		}
		raw = b
	}
	return a.hb.beat(ctx, raw)
}
