package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// slots returns a worker with n slots, busy of them taken, that waits
// gather for a batch.
func slots(n, busy int, gather time.Duration) *Worker {
	return &Worker{cfg: config{concurrency: n, batchSize: n, claimGather: gather}, busy: busy, freed: make(chan struct{}, 1)}
}

// release frees k slots one at a time, as finishing handlers do.
func (w *Worker) release(k int) {
	for range k {
		w.mu.Lock()
		w.busy--
		busy := w.busy
		w.mu.Unlock()
		w.slotFreed(busy)
	}
}

func TestGatherSlotsWaitsForAFullBatch(t *testing.T) {
	w := slots(10, 7, time.Hour)
	go w.release(7)
	assert.True(t, w.gatherSlots(context.Background()))
	assert.Equal(t, 0, w.busyCount(), "returned only once the whole batch was free")
}

func TestGatherSlotsClaimsWhatIsFreeAfterTheGatherTime(t *testing.T) {
	w := slots(10, 7, time.Millisecond)
	assert.True(t, w.gatherSlots(context.Background()))
	assert.Equal(t, 7, w.busyCount())
}

func TestGatherSlotsAllFree(t *testing.T) {
	w := slots(10, 0, time.Hour)
	assert.True(t, w.gatherSlots(context.Background()))
}

func TestGatherSlotsNoneFree(t *testing.T) {
	w := slots(4, 4, time.Hour)
	go w.release(1)
	for !w.gatherSlots(context.Background()) {
	}
	assert.Equal(t, 3, w.busyCount())

	full := slots(4, 4, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, full.gatherSlots(ctx), "no slot is free")
}
