package jobruntime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/queuetytype"
)

// The __queuety_runtime object is read by Queuety PHP too: its Queuety keys
// come first, in Queuety's order, and the Go engine's keys follow.
func TestRuntimeEncoding(t *testing.T) {
	cases := []struct {
		rt   Options
		want string
	}{
		{Options{MaxAttempts: 3}, `{"max_attempts":3}`},
		{Options{MaxAttempts: 4, Backoff: BackoffSeconds(7, 11)}, `{"max_attempts":4,"backoff":[7,11]}`},
		{Options{MaxAttempts: 2, Backoff: queuetytype.BackoffLinear}, `{"max_attempts":2,"backoff":"linear"}`},
		{Options{MaxAttempts: 3, Timeouts: queuetytype.ActivityTimeouts{StartToClose: 1500 * time.Millisecond}},
			`{"max_attempts":3,"timeout_seconds":2,"start_to_close_ms":1500}`},
		{Options{MaxAttempts: 3, Backoff: BackoffPolicy(time.Second, 2, time.Minute),
			Timeouts: queuetytype.ActivityTimeouts{ScheduleToStart: time.Minute, ScheduleToClose: time.Hour, Heartbeat: 10 * time.Second}},
			`{"max_attempts":3,"backoff_policy":{"initial_ms":1000,"coefficient":2,"max_ms":60000},"schedule_to_start_ms":60000,"schedule_to_close_ms":3600000,"heartbeat_timeout_ms":10000}`},
	}
	for _, c := range cases {
		got, err := phpjson.Marshal(c.rt.Encode())
		if !assert.NoError(t, err, "encode %+v", c.rt) || !assert.Equal(t, c.want, string(got), "encode %+v", c.rt) {
			continue
		}
		payload := phpjson.NewObject()
		payload.Set(Key, c.rt.Encode())
		back := Parse(payload)
		again, err := phpjson.Marshal(back.Encode())
		assert.NoError(t, err, "round trip of %s", c.want)
		assert.Equal(t, c.want, string(again), "round trip of %s", c.want)
	}
}

// Runtime options written by Queuety PHP are honoured; malformed ones are
// ignored, as PHP ignores them.
func TestParseRuntimeFromPHP(t *testing.T) {
	doc, err := phpjson.DecodeObject([]byte(`{"step_index":1,"__queuety_runtime":{"max_attempts":5,"backoff":"fixed","timeout_seconds":30,"rate_limit":[10,60]}}`))
	require.NoError(t, err)
	rt := Parse(doc)
	assert.Equal(t, 5, rt.MaxAttempts, "max_attempts of %+v", rt)
	assert.Equal(t, queuetytype.BackoffFixed, rt.Backoff, "backoff of %+v", rt)
	assert.Equal(t, 30*time.Second, rt.StartToClose(), "start-to-close of %+v", rt)
	for _, raw := range []string{`{"__queuety_runtime":"x"}`, `{"__queuety_runtime":{"backoff":"sometimes","max_attempts":"3"}}`, `[]`} {
		doc, err := phpjson.DecodeObject([]byte(raw))
		require.NoError(t, err, raw)
		rt := Parse(doc)
		assert.Zero(t, rt.MaxAttempts, "max_attempts of %s parsed as %+v", raw, rt)
		assert.Nil(t, rt.Backoff, "backoff of %s parsed as %+v", raw, rt)
	}
}

func TestActivityTimeoutValidation(t *testing.T) {
	ok := queuetytype.ActivityTimeouts{ScheduleToStart: time.Second, StartToClose: time.Minute}
	require.NoError(t, ValidateTimeouts(ok))
	for _, bad := range []queuetytype.ActivityTimeouts{{StartToClose: 999 * time.Millisecond}, {Heartbeat: -time.Second}, {ScheduleToClose: time.Nanosecond}} {
		assert.ErrorIs(t, ValidateTimeouts(bad), queuetytype.ErrInvalidTimeout, "%+v", bad)
	}
}

// An attempt limit above what the attempts column holds (Queuety PHP
// accepts any) is read as the column's limit; the value asked for is kept
// for the error message.
func TestMaxAttemptsClampedToColumn(t *testing.T) {
	payload, err := workflowstate.DecodeObject("payload", []byte(`{"__queuety_runtime":{"max_attempts":1000}}`))
	require.NoError(t, err)
	rt := Parse(payload)
	assert.Equal(t, queuetytype.MaxAttemptsLimit, rt.MaxAttempts, "runtime max_attempts")
	assert.Equal(t, int64(1000), rt.AskedMaxAttempts, "the value asked for is kept for the error message")
	assert.Equal(t, queuetytype.MaxAttemptsLimit, ClampAttempts(70000), "clamped")
	assert.Equal(t, 0, ClampAttempts(0), "zero stays: not set")
}

// A step definition carries its runtime at its top level, its backoff also
// in a grouped retry object, and its rate limit also under resources.
func TestFromDefinition(t *testing.T) {
	def, err := phpjson.DecodeObject([]byte(`{"type":"single","class":"A","timeout_seconds":9,"retry":{"max_attempts":4,"backoff":[3,5]},"resources":{"rate_limit":{"max":2,"window":60}}}`))
	require.NoError(t, err)
	rt := FromDefinition(def)
	assert.Equal(t, 9*time.Second, rt.StartToClose(), "timeout_seconds of %+v", rt)
	assert.Equal(t, List{3, 5}, rt.Backoff, "grouped retry backoff of %+v", rt)
	assert.Equal(t, queuetytype.Rate{Max: 2, Window: time.Minute}, rt.RateLimit, "resources rate_limit of %+v", rt)

	def, err = phpjson.DecodeObject([]byte(`{"backoff":"fixed","retry":{"backoff":"linear"},"rate_limit":[1,1],"resources":{"rate_limit":[5,5]}}`))
	require.NoError(t, err)
	rt = FromDefinition(def)
	assert.Equal(t, queuetytype.BackoffFixed, rt.Backoff, "a top-level backoff wins over retry's")
	assert.Equal(t, queuetytype.Rate{Max: 1, Window: time.Second}, rt.RateLimit, "a top-level rate_limit wins over resources'")
}
