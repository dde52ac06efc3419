package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/internal/dispatch"

	"github.com/queuety/queuety-go/internal/schedule"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

// Schedules returns the engine's schedules: saving, operating and ticking
// them (package schedule). The engine's TickSchedules sweep drives their
// tick.
func (e *Engine) Schedules() *schedule.Service { return e.schedules }

// newSchedules builds the schedules of e's store, with the engine
// transitions a firing needs.
func (e *Engine) newSchedules() *schedule.Service {
	return schedule.New(e.store, schedule.Config{
		Clock: e.clock, Logger: e.log, StartWorkflow: e.startScheduledWorkflow,
		WakeJobs: e.wake, WakeSchedules: e.wakeSchedules,
	})
}

// startScheduledWorkflow starts, in tx, the workflow that workflow
// schedule s fires for slot. A definition or payload that cannot be read
// or dispatched is the row's fault: schedule.Unreadable.
func (e *Engine) startScheduledWorkflow(ctx context.Context, tx driver.Tx, s *driver.Schedule, slot, now time.Time) (int64, error) {
	def, err := dispatch.DecodeDefinition(s.Workflow)
	if err != nil {
		return 0, schedule.Unreadable(fmt.Errorf("schedule %d: stored workflow definition: %w", s.ID, err))
	}
	def.IdempotencyKey = schedule.FiringKey(def.IdempotencyKey, s.ID, slot)
	state, err := workflowstate.DecodeObject("schedule payload", s.Payload)
	if err != nil {
		return 0, schedule.Unreadable(fmt.Errorf("schedule %d: %w", s.ID, err))
	}
	p, err := dispatch.Prepare(def, state)
	if err != nil {
		return 0, schedule.Unreadable(fmt.Errorf("schedule %d: %w", s.ID, err))
	}
	return e.dispatcher.InsertWorkflow(ctx, tx, p, now)
}
