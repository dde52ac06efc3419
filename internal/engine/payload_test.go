package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/dispatch"
	"github.com/queuety/queuety-go/internal/jobruntime"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/rowtime"
	"github.com/queuety/queuety-go/internal/workflowstate"
	"github.com/queuety/queuety-go/store/driver"
)

func TestDueTimes(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 300_000_000, time.UTC)
	assert.WithinDuration(t, time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC), rowtime.Due(now, 0), 0, "immediate job: it must be due at once")
	assert.WithinDuration(t, time.Date(2030, 1, 1, 10, 0, 31, 0, time.UTC), rowtime.Due(now, 30*time.Second), 0, "delayed job: a delay never ends early")
}

// An attempt limit above what the attempts column holds (Queuety PHP
// accepts any) is read as the column's limit wherever it is stored: in a
// payload's __queuety_runtime, in a workflow's _max_attempts, in a runtime
// workflow definition and on the row.
func TestMaxAttemptsClampedToColumn(t *testing.T) {
	payload, err := workflowstate.DecodeObject("payload", []byte(`{"__queuety_runtime":{"max_attempts":1000}}`))
	require.NoError(t, err)
	rt := jobruntime.Parse(payload)
	assert.Equal(t, MaxAttemptsLimit, (&Claimed{runtime: rt}).maxAttempts(), "effective limit from the runtime")
	assert.Equal(t, MaxAttemptsLimit, (&Claimed{runtime: jobruntime.Options{MaxAttempts: 1000}}).maxAttempts(), "effective limit, unclamped runtime")

	state, err := workflowstate.DecodeObject("state", []byte(`{"_max_attempts":70000}`))
	require.NoError(t, err)
	assert.Equal(t, MaxAttemptsLimit, workflowstate.MaxAttempts(state), "workflow _max_attempts")

	def, err := dispatch.DefinitionFromRuntime(mustDecode(t, `{"name":"w","max_attempts":1000000,"steps":[{"type":"single","class":"A"}]}`))
	require.NoError(t, err, "runtime definition")
	assert.Equal(t, MaxAttemptsLimit, def.MaxAttempts, "runtime definition max_attempts")
}

func mustDecode(t *testing.T, s string) *phpjson.Object {
	t.Helper()
	o, err := workflowstate.DecodeObject("test", []byte(s))
	require.NoError(t, err)
	return o
}

func TestParsePriority(t *testing.T) {
	for in, want := range map[string]driver.Priority{"0": driver.PriorityLow, "low": driver.PriorityLow, "1": driver.PriorityNormal, "NORMAL": driver.PriorityNormal,
		"2": driver.PriorityHigh, "high": driver.PriorityHigh, "3": driver.PriorityUrgent, " urgent ": driver.PriorityUrgent} {
		got, err := ParsePriority(in)
		assert.NoError(t, err, "ParsePriority(%q)", in)
		assert.Equal(t, want, got, "ParsePriority(%q)", in)
	}
	for _, in := range []string{"4", "-1", "critical", ""} {
		_, err := ParsePriority(in)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, "ParsePriority(%q)", in)
	}
}
