package cli_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/syncbuf"
)

// uiToken is a token strong enough for the ui command.
const uiToken = "9c1f0e6b7a2d4c58b3e1f09a6d7c2b41"

// TestUIUsage: a UI reachable from other machines needs credentials, weak
// ones are refused, and the flags are checked before anything is opened.
func TestUIUsage(t *testing.T) {
	t.Setenv(cli.EnvUIToken, "")
	t.Setenv(cli.EnvUIBasicAuth, "")
	dsn := tempDSN(t)
	wantFail(t, cli.ExitUsage, "reachable from other machines", "ui", "--dsn", dsn, "--listen", "0.0.0.0:0")
	wantFail(t, cli.ExitUsage, "reachable from other machines", "ui", "--dsn", dsn, "--listen", ":0")
	wantFail(t, cli.ExitUsage, "not both", "ui", "--dsn", dsn, "--token", uiToken, "--basic-auth", "a:"+uiToken)
	wantFail(t, cli.ExitUsage, "USER:PASS", "ui", "--dsn", dsn, "--basic-auth", "nopass")
	wantFail(t, cli.ExitUsage, "--base-path", "ui", "--dsn", dsn, "--base-path", "ops")
	wantFail(t, cli.ExitUsage, "--trusted-proxies", "ui", "--dsn", dsn, "--token", uiToken, "--trusted-proxies", "10.0.0.0/8,proxy")
	wantFail(t, cli.ExitUsage, "at least 16", "ui", "--dsn", dsn, "--token", "a")
	wantFail(t, cli.ExitUsage, "whitespace", "ui", "--dsn", dsn, "--token", " ")
	wantFail(t, cli.ExitUsage, "too few characters", "ui", "--dsn", dsn, "--token", strings.Repeat("ab", 10))
	wantFail(t, cli.ExitUsage, "password has 6 characters", "ui", "--dsn", dsn, "--basic-auth", "ops:secret")
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(uiToken+"\n"), 0o600))
	wantFail(t, cli.ExitUsage, "not both", "ui", "--dsn", dsn, "--token", uiToken, "--token-file", file)
	t.Setenv(cli.EnvUIToken, "short")
	r := wantFail(t, cli.ExitUsage, "at least 16", "ui", "--dsn", dsn)
	assert.NotContains(t, r.stderr, "short", "the error does not repeat the token")
}

// serveUI runs `ui` with args until the test ends and returns its URL and
// its stderr.
func serveUI(t *testing.T, args ...string) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer
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
	return url, &errOut
}

func status(t *testing.T, url string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// TestUIServes runs the command: open on loopback, and with credentials
// from a flag (with a warning that does not repeat them), a file and the
// environment.
func TestUIServes(t *testing.T) {
	t.Setenv(cli.EnvUIToken, "")
	t.Setenv(cli.EnvUIBasicAuth, "")
	dsn := tempDSN(t)
	url, _ := serveUI(t, "--dsn", dsn)
	assert.Equal(t, http.StatusOK, status(t, url))
	assert.Equal(t, http.StatusOK, status(t, url+"jobs"))
	assert.Equal(t, http.StatusForbidden, status(t, url, "X-Forwarded-For", "203.0.113.9"), "a request through a proxy")

	url, stderr := serveUI(t, "--dsn", dsn, "--token", uiToken, "--read-only", "--base-path", "/q")
	assert.Regexp(t, `/q/$`, url)
	assert.Equal(t, http.StatusUnauthorized, status(t, url))
	assert.Equal(t, http.StatusOK, status(t, url, bearer(uiToken)...))
	assert.Contains(t, stderr.String(), "visible to other users in the process list")
	assert.NotContains(t, stderr.String(), uiToken, "the warning does not show the token")

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(uiToken+"\n"), 0o600))
	url, stderr = serveUI(t, "--dsn", dsn, "--token-file", file)
	assert.Equal(t, http.StatusUnauthorized, status(t, url))
	assert.Equal(t, http.StatusOK, status(t, url, bearer(uiToken)...), "the token comes from the file")
	assert.NotContains(t, stderr.String(), "process list")

	const fromEnv = "e1d2c3b4a5968778695a4b3c"
	t.Setenv(cli.EnvUIToken, fromEnv)
	url, _ = serveUI(t, "--dsn", dsn)
	assert.Equal(t, http.StatusUnauthorized, status(t, url), "the token comes from the environment")
	assert.Equal(t, http.StatusOK, status(t, url, bearer(fromEnv)...))
	assert.Equal(t, http.StatusOK, status(t, url, "Authorization", "bearer "+fromEnv), "the scheme in any case")

	t.Setenv(cli.EnvUIToken, "")
	t.Setenv(cli.EnvUIBasicAuth, "ops:"+fromEnv)
	url, _ = serveUI(t, "--dsn", dsn)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.SetBasicAuth("ops", fromEnv)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "basic authentication from the environment")
	assert.Equal(t, http.StatusUnauthorized, status(t, url))
}
