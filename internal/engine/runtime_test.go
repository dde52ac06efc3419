package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowstate"
)

// The __queuety_runtime object is read by Queuety PHP too: its Queuety keys
// come first, in Queuety's order, and the Go engine's keys follow.
func TestRuntimeEncoding(t *testing.T) {
	cases := []struct {
		rt   runtimeOptions
		want string
	}{
		{runtimeOptions{MaxAttempts: 3}, `{"max_attempts":3}`},
		{runtimeOptions{MaxAttempts: 4, Backoff: BackoffSeconds(7, 11)}, `{"max_attempts":4,"backoff":[7,11]}`},
		{runtimeOptions{MaxAttempts: 2, Backoff: BackoffLinear}, `{"max_attempts":2,"backoff":"linear"}`},
		{runtimeOptions{MaxAttempts: 3, Timeouts: ActivityTimeouts{StartToClose: 1500 * time.Millisecond}},
			`{"max_attempts":3,"timeout_seconds":2,"start_to_close_ms":1500}`},
		{runtimeOptions{MaxAttempts: 3, Backoff: BackoffPolicy(time.Second, 2, time.Minute),
			Timeouts: ActivityTimeouts{ScheduleToStart: time.Minute, ScheduleToClose: time.Hour, Heartbeat: 10 * time.Second}},
			`{"max_attempts":3,"backoff_policy":{"initial_ms":1000,"coefficient":2,"max_ms":60000},"schedule_to_start_ms":60000,"schedule_to_close_ms":3600000,"heartbeat_timeout_ms":10000}`},
	}
	for _, c := range cases {
		got, err := phpjson.Marshal(c.rt.encode())
		if !assert.NoError(t, err, "encode %+v", c.rt) || !assert.Equal(t, c.want, string(got), "encode %+v", c.rt) {
			continue
		}
		payload := phpjson.NewObject()
		payload.Set(runtimeKey, c.rt.encode())
		back := parseRuntime(payload)
		again, err := phpjson.Marshal(back.encode())
		assert.NoError(t, err, "round trip of %s", c.want)
		assert.Equal(t, c.want, string(again), "round trip of %s", c.want)
	}
}

// Runtime options written by Queuety PHP are honoured; malformed ones are
// ignored, as PHP ignores them.
func TestParseRuntimeFromPHP(t *testing.T) {
	doc, err := phpjson.DecodeObject([]byte(`{"step_index":1,"__queuety_runtime":{"max_attempts":5,"backoff":"fixed","timeout_seconds":30,"rate_limit":[10,60]}}`))
	require.NoError(t, err)
	rt := parseRuntime(doc)
	assert.Equal(t, 5, rt.MaxAttempts, "max_attempts of %+v", rt)
	assert.Equal(t, BackoffFixed, rt.Backoff, "backoff of %+v", rt)
	assert.Equal(t, 30*time.Second, rt.startToClose(), "start-to-close of %+v", rt)
	for _, raw := range []string{`{"__queuety_runtime":"x"}`, `{"__queuety_runtime":{"backoff":"sometimes","max_attempts":"3"}}`, `[]`} {
		doc, err := phpjson.DecodeObject([]byte(raw))
		require.NoError(t, err, raw)
		rt := parseRuntime(doc)
		assert.Zero(t, rt.MaxAttempts, "max_attempts of %s parsed as %+v", raw, rt)
		assert.Nil(t, rt.Backoff, "backoff of %s parsed as %+v", raw, rt)
	}
}

func TestActivityTimeoutValidation(t *testing.T) {
	ok := ActivityTimeouts{ScheduleToStart: time.Second, StartToClose: time.Minute}
	require.NoError(t, validateTimeouts(ok))
	for _, bad := range []ActivityTimeouts{{StartToClose: 999 * time.Millisecond}, {Heartbeat: -time.Second}, {ScheduleToClose: time.Nanosecond}} {
		assert.ErrorIs(t, validateTimeouts(bad), ErrInvalidTimeout, "%+v", bad)
	}
}

func TestDueTimes(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 300_000_000, time.UTC)
	assert.WithinDuration(t, time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC), dueAt(now, 0), 0, "immediate job: it must be due at once")
	assert.WithinDuration(t, time.Date(2030, 1, 1, 10, 0, 31, 0, time.UTC), dueAt(now, 30*time.Second), 0, "delayed job: a delay never ends early")
}

// An attempt limit above what the attempts column holds (Queuety PHP
// accepts any) is read as the column's limit wherever it is stored: in a
// payload's __queuety_runtime, in a workflow's _max_attempts, in a runtime
// workflow definition and on the row.
func TestMaxAttemptsClampedToColumn(t *testing.T) {
	payload, err := workflowstate.DecodeObject("payload", []byte(`{"__queuety_runtime":{"max_attempts":1000}}`))
	require.NoError(t, err)
	rt := parseRuntime(payload)
	assert.Equal(t, MaxAttemptsLimit, rt.MaxAttempts, "runtime max_attempts")
	assert.Equal(t, int64(1000), rt.AskedMaxAttempts, "the value asked for is kept for the error message")
	assert.Equal(t, MaxAttemptsLimit, (&Claimed{runtime: rt}).maxAttempts(), "effective limit from the runtime")
	assert.Equal(t, MaxAttemptsLimit, (&Claimed{runtime: runtimeOptions{MaxAttempts: 1000}}).maxAttempts(), "effective limit, unclamped runtime")

	state, err := workflowstate.DecodeObject("state", []byte(`{"_max_attempts":70000}`))
	require.NoError(t, err)
	assert.Equal(t, MaxAttemptsLimit, workflowstate.MaxAttempts(state), "workflow _max_attempts")

	def, err := DefinitionFromRuntime(mustDecode(t, `{"name":"w","max_attempts":1000000,"steps":[{"type":"single","class":"A"}]}`))
	require.NoError(t, err, "runtime definition")
	assert.Equal(t, MaxAttemptsLimit, def.MaxAttempts, "runtime definition max_attempts")
}

func mustDecode(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	o, err := workflowstate.DecodeObject("test", []byte(s))
	require.NoError(t, err)
	return o
}
