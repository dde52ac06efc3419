package jobruntime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/queuety/queuety-go/queuetytype"
)

func TestBackoffDelays(t *testing.T) {
	s := time.Second
	cases := []struct {
		name string
		b    queuetytype.Backoff
		want []time.Duration // delays after attempts 1, 2, 3, ...
	}{
		{"exponential (Queuety default)", queuetytype.BackoffExponential, []time.Duration{60 * s, 120 * s, 240 * s, 480 * s, 960 * s, 1920 * s, 3600 * s, 3600 * s}},
		{"fixed", queuetytype.BackoffFixed, []time.Duration{60 * s, 60 * s, 60 * s}},
		{"linear", queuetytype.BackoffLinear, []time.Duration{60 * s, 120 * s, 180 * s}},
		{"list, last repeats", BackoffSeconds(5, 30), []time.Duration{5 * s, 30 * s, 30 * s}},
		{"policy", BackoffPolicy(time.Second, 2, 5*time.Second), []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s}},
		{"policy defaults", BackoffPolicy(time.Second, 0, 0), []time.Duration{s, 2 * s, 4 * s}},
	}
	for _, c := range cases {
		for i, want := range c.want {
			assert.Equal(t, want, c.b.Delay(i+1), "%s: delay after attempt %d", c.name, i+1)
		}
		assert.NoError(t, ValidateBackoff(c.b), c.name)
	}
	assert.Equal(t, queuetytype.MaxBackoff, queuetytype.BackoffExponential.Delay(200), "exponential after 200 attempts")
}

func TestBackoffValidation(t *testing.T) {
	for name, b := range map[string]queuetytype.Backoff{
		"unknown strategy":  queuetytype.BackoffStrategy("random"),
		"empty list":        BackoffSeconds(),
		"negative seconds":  BackoffSeconds(1, -1),
		"tiny initial":      BackoffPolicy(time.Microsecond, 2, time.Second),
		"coefficient < 1":   BackoffPolicy(time.Second, 0.5, time.Minute),
		"maximum < initial": BackoffPolicy(time.Minute, 2, time.Second),
	} {
		assert.ErrorIs(t, ValidateBackoff(b), queuetytype.ErrInvalidArgument, name)
	}
}

func TestParseBackoff(t *testing.T) {
	for in, want := range map[string]string{"exponential": "exponential", " Fixed ": "fixed", "10,30,60": "[10 30 60]", "5": "[5]"} {
		b, err := ParseBackoff(in)
		if assert.NoError(t, err, "ParseBackoff(%q)", in) {
			assert.Equal(t, want, b.String(), "ParseBackoff(%q)", in)
		}
	}
	for _, in := range []string{"", "10x,20y", "soon", "1,-2"} {
		_, err := ParseBackoff(in)
		assert.ErrorIs(t, err, queuetytype.ErrInvalidArgument, "ParseBackoff(%q)", in)
	}
}
