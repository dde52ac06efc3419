package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/syncbuf"
	"github.com/queuety/queuety-go/queuety"
)

// jsonLines decodes every line of s as a JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoErrorf(t, json.Unmarshal([]byte(line), &rec), "log line is not JSON: %q", line)
		out = append(out, rec)
	}
	return out
}

// TestWorkServesMetricsAndLogsJSON runs `--log-format json work
// --metrics-listen 127.0.0.1:0`: it finds the metrics address in the JSON
// logs, scrapes /metrics until the dispatched job shows as completed, and
// checks that every line on stderr is a JSON log record.
func TestWorkServesMetricsAndLogsJSON(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	mustRun(t, nil, "--dsn", dsn, "dispatch", "hello", `{"n":1}`)
	reg := queuety.NewRegistry()
	reg.HandleJob("hello", func(context.Context, queuety.Payload) error { return nil })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Run(ctx, []string{"--log-format", "json", "--dsn", dsn, "work", "--metrics-listen", "127.0.0.1:0"}, reg, &stdout, &stderr)
	}()

	var addr string
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "queuety: serving metrics" {
				addr, _ = rec["addr"].(string)
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "the metrics address is logged; stderr:\n%s", &stderr)

	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if !assert.NoError(t, err) {
			return false
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err = p.TextToMetricFamilies(resp.Body)
		require.NoError(t, err, "parse the exposition")
		for _, m := range fams["queuety_jobs_completed_total"].GetMetric() {
			if m.GetCounter().GetValue() == 1 {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the job shows as completed")
	assert.Contains(t, fams, "queuety_queue_depth", "store gauges")
	assert.Contains(t, fams, "go_goroutines", "Go runtime metrics")

	cancel()
	select {
	case code := <-exited:
		assert.Equal(t, 0, code, "exit code; stderr:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("work did not stop")
	}
	recs := jsonLines(t, stderr.String())
	require.NotEmpty(t, recs, "log records")
	stopping := false
	for _, rec := range recs {
		assert.Contains(t, rec, "time", "record %v", rec)
		assert.Contains(t, rec, "level", "record %v", rec)
		assert.Contains(t, rec, "msg", "record %v", rec)
		if rec["msg"] == "queuety: worker stopping" {
			// Durations are written as Go duration strings ("30s"), not
			// integer nanoseconds.
			stopping = true
			grace, ok := rec["grace"].(string)
			require.True(t, ok, "grace is %T %v, want a duration string", rec["grace"], rec["grace"])
			_, err := time.ParseDuration(grace)
			assert.NoError(t, err, "grace %q", grace)
		}
	}
	assert.True(t, stopping, "the worker logged that it is stopping; stderr:\n%s", stderr.String())
	assert.Equal(t, "INFO", recs[0]["level"], "work logs at info")
}

// TestLogFormat checks --log-format on the warning a worker without
// handlers logs while jobs wait.
func TestLogFormat(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	mustRun(t, nil, "--dsn", dsn, "dispatch", "nobody_handles_this", "{}")
	r := run(t, nil, "--dsn", dsn, "--log-format", "text", "work", "--once", "--max-time", "1s")
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	assert.Contains(t, r.stderr, "level=WARN msg=", "text records")
	assert.Contains(t, r.stderr, "pending_jobs=1", "text records")

	r = run(t, nil, "--dsn", dsn, "--log-format", "json", "work", "--once", "--max-time", "1s")
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	recs := jsonLines(t, r.stderr)
	require.NotEmpty(t, recs, "records")
	var warned bool
	for _, rec := range recs {
		if rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "no handlers registered") {
			warned = true
			assert.Equal(t, 1.0, rec["pending_jobs"], "attributes are JSON fields")
		}
	}
	assert.True(t, warned, "the warning as a JSON record; stderr:\n%s", r.stderr)

	wantFail(t, 2, `--log-format "yaml": want text or json`, "--log-format", "yaml", "status")
}
