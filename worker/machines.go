package worker

import (
	"context"

	"github.com/queuety/queuety-go/deadline"
)

// SweepMachineTimeouts is the name of the sweep that fires state machine
// timeouts (machine.Builder.Timeout), run at the wait-timer interval.
const SweepMachineTimeouts = "machine-timeouts"

// machineTimeouts fires due state machine timeouts, batch after batch,
// with the worker's guards.
func (w *Worker) machineTimeouts(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := w.c.FireMachineTimeouts(ctx, w.reg, deadline.BatchSize)
		total += n
		if err != nil || n < deadline.BatchSize {
			return total, err
		}
	}
}
