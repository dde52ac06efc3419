package locks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/store/driver"
)

// A counter row's owner reads as MySQL's CAST(owner AS UNSIGNED) reads it.
func TestCounterValue(t *testing.T) {
	for owner, want := range map[string]int64{"": 0, "7": 7, "12abc": 12, "abc": 0, "0042": 42} {
		assert.Equal(t, want, counterValue(owner), "owner %q", owner)
	}
}

func TestCheckKey(t *testing.T) {
	assert.NoError(t, CheckKey("k"))
	assert.NoError(t, CheckKey(strings.Repeat("k", MaxKey)))
	assert.ErrorIs(t, CheckKey(""), driver.ErrInvalidArgument)
	assert.ErrorIs(t, CheckKey(strings.Repeat("k", MaxKey+1)), driver.ErrInvalidArgument)
}

// An owner is 32 hex characters, as Queuety's bin2hex(random_bytes(16)),
// and two are never the same.
func TestNewOwner(t *testing.T) {
	a, b := NewOwner(), NewOwner()
	assert.Regexp(t, `^[0-9a-f]{32}$`, a)
	assert.NotEqual(t, a, b)
}
