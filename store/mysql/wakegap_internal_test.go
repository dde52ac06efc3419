package mysql

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSendWait: a store keeps sending every notifyGap after a read that
// missed the listeners (one between two sleeps, a worker whose listener
// is not live yet), and only once its reads have found none for
// quietAfter does it send once a second.
func TestSendWait(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	last := now.Add(-time.Millisecond)
	assert.Zero(t, sendWait(now, time.Time{}, time.Time{}), "the first send goes at once")
	assert.Equal(t, notifyGap-time.Millisecond, sendWait(now, last, time.Time{}), "after a send that found a listener")
	assert.Equal(t, notifyGap-time.Millisecond, sendWait(now, last, last), "after one read that found none")
	assert.Equal(t, notifyGap-time.Millisecond, sendWait(now, last, now.Add(-quietAfter+time.Millisecond)),
		"after reads that found none for less than quietAfter")
	assert.Equal(t, notifyQuiet-time.Millisecond, sendWait(now, last, now.Add(-quietAfter)),
		"after reads that found none for quietAfter")
	assert.Negative(t, sendWait(now, now.Add(-2*time.Second), now.Add(-time.Minute)), "a quiet second already passed")
}
