package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/syncbuf"
)

// runWorkMetrics runs `work --metrics-listen` with args until the test
// ends and returns the metrics address and the JSON log on stderr.
func runWorkMetrics(t *testing.T, dsn string, args ...string) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Run(ctx, append([]string{"--log-format", "json", "--dsn", dsn, "work"}, args...), nil, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-exited:
			assert.Equal(t, 0, code, "exit code; stderr:\n%s", stderr.String())
		case <-time.After(30 * time.Second):
			t.Error("work did not stop")
		}
	})
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
	// The worker is up (its store opened) before the test goes on, so
	// the cancel at the end stops a running worker, not one still opening.
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"queuety: worker started"`) },
		30*time.Second, 10*time.Millisecond, "the worker starts; stderr:\n%s", &stderr)
	return addr, &stderr
}

// TestMetricsAuth checks that /metrics requires the token or the basic
// authentication it is given (from the environment or a flag), and that
// serving it without either on an address other machines can reach is
// logged as a warning.
func TestMetricsAuth(t *testing.T) {
	dsn := tempDSN(t)
	t.Setenv(cli.EnvMetricsToken, uiToken)
	t.Setenv(cli.EnvMetricsBasicAuth, "")
	addr, stderr := runWorkMetrics(t, dsn, "--metrics-listen", "127.0.0.1:0")
	url := "http://" + addr + "/metrics"
	assert.Equal(t, http.StatusUnauthorized, status(t, url))
	assert.Equal(t, http.StatusUnauthorized, status(t, url, bearer("wrong")...))
	assert.Equal(t, http.StatusOK, status(t, url, bearer(uiToken)...))
	assert.Equal(t, http.StatusOK, status(t, url, "Authorization", "BEARER "+uiToken))
	assert.NotContains(t, stderr.String(), "without authentication")

	t.Setenv(cli.EnvMetricsToken, "")
	addr, _ = runWorkMetrics(t, dsn, "--metrics-listen", "127.0.0.1:0", "--metrics-basic-auth", "prom:"+uiToken)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	req.SetBasicAuth("prom", uiToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, http.StatusUnauthorized, status(t, "http://"+addr+"/metrics"))

	// No authentication on every interface: served, with a warning.
	addr, stderr = runWorkMetrics(t, dsn, "--metrics-listen", "0.0.0.0:0")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status(t, "http://127.0.0.1:"+port+"/metrics"))
	assert.Contains(t, stderr.String(), "served without authentication on an address other machines can reach")

	wantFail(t, cli.ExitUsage, "at least 16", "--dsn", dsn, "work", "--once", "--metrics-listen", "127.0.0.1:0", "--metrics-token", "short")
	wantFail(t, cli.ExitUsage, "need --metrics-listen", "--dsn", dsn, "work", "--once", "--metrics-token", uiToken)
}
