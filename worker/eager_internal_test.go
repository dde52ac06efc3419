package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestReserveSlotsNeverExceedsConcurrency checks that eager handoff is
// offered only free slots, none while stopping or with it turned off, and
// that unused reservations are given back.
func TestReserveSlotsNeverExceedsConcurrency(t *testing.T) {
	w := slots(4, 4, 0)
	assert.Zero(t, w.reserveSlots(3), "no free slot")
	w.busy = 2
	assert.Equal(t, 2, w.reserveSlots(3), "two free slots")
	assert.Equal(t, 4, w.busy, "reserved slots count as busy")
	assert.Zero(t, w.reserveSlots(1), "all slots reserved")
	w.startHanded(context.Background(), time.Time{}, 2, nil)
	assert.Equal(t, 2, w.busy, "unused reservations given back")
	w.wg.Wait() // the reservations' wait counts were given back too

	w.setStopping(true)
	assert.Zero(t, w.reserveSlots(1), "stopping")
	w.setStopping(false)
	w.cfg.noEager = true
	assert.Zero(t, w.reserveSlots(1), "eager handoff off")
}
