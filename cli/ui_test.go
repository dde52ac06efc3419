package cli_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
)

// TestUIUsage: a UI reachable from other machines needs credentials, and
// the flags are checked before anything is opened.
func TestUIUsage(t *testing.T) {
	t.Setenv(cli.EnvUIToken, "")
	dsn := tempDSN(t)
	wantFail(t, cli.ExitUsage, "reachable from other machines", "ui", "--dsn", dsn, "--listen", "0.0.0.0:0")
	wantFail(t, cli.ExitUsage, "reachable from other machines", "ui", "--dsn", dsn, "--listen", ":0")
	wantFail(t, cli.ExitUsage, "not both", "ui", "--dsn", dsn, "--token", "t", "--basic-auth", "a:b")
	wantFail(t, cli.ExitUsage, "USER:PASS", "ui", "--dsn", dsn, "--basic-auth", "nopass")
	wantFail(t, cli.ExitUsage, "--base-path", "ui", "--dsn", dsn, "--base-path", "ops")
}

// serveUI runs `ui` with args until the test ends and returns its URL.
func serveUI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, append([]string{"ui", "--listen", "127.0.0.1:0"}, args...), nil, &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, cli.ExitOK, code, "stderr: %s", errOut.String())
		case <-time.After(30 * time.Second):
			t.Error("ui did not stop")
		}
	})
	addr := regexp.MustCompile(`Queuety UI on (http://\S+) `)
	var url string
	require.Eventually(t, func() bool {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			return true
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "no address printed; stderr: %s", errOut.String())
	return url
}

func status(t *testing.T, url, bearer string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// TestUIServes runs the command: open on loopback, and with a token.
func TestUIServes(t *testing.T) {
	t.Setenv(cli.EnvUIToken, "")
	dsn := tempDSN(t)
	url := serveUI(t, "--dsn", dsn)
	assert.Equal(t, http.StatusOK, status(t, url, ""))
	assert.Equal(t, http.StatusOK, status(t, url+"jobs", ""))

	url = serveUI(t, "--dsn", dsn, "--token", "s3cret", "--read-only", "--base-path", "/q")
	assert.Regexp(t, `/q/$`, url)
	assert.Equal(t, http.StatusUnauthorized, status(t, url, ""))
	assert.Equal(t, http.StatusOK, status(t, url, "s3cret"))

	t.Setenv(cli.EnvUIToken, "from-env")
	url = serveUI(t, "--dsn", dsn)
	assert.Equal(t, http.StatusUnauthorized, status(t, url, ""), "the token comes from the environment")
	assert.Equal(t, http.StatusOK, status(t, url, "from-env"))
}
