package cli

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/syncbuf"
)

// TestHTTPServersTimeOut runs the ui command with short timeouts and
// checks that a client that sends its request body slowly, or sends
// nothing after its headers, does not hold the connection.
func TestHTTPServersTimeOut(t *testing.T) {
	defer func(h, r, i time.Duration) { httpReadHeaderTimeout, httpReadTimeout, httpIdleTimeout = h, r, i }(
		httpReadHeaderTimeout, httpReadTimeout, httpIdleTimeout)
	httpReadHeaderTimeout, httpReadTimeout, httpIdleTimeout = 200*time.Millisecond, 500*time.Millisecond, time.Second

	dsn := "sqlite://" + filepath.Join(t.TempDir(), "queuety.db")
	var migrateOut syncbuf.Buffer
	require.Equal(t, ExitOK, Run(context.Background(), []string{"--dsn", dsn, "migrate"}, nil, &migrateOut, &migrateOut), "migrate: %s", &migrateOut)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--dsn", dsn, "ui", "--listen", "127.0.0.1:0"}, nil, &out, &errOut)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("ui did not stop")
		}
	}()
	var addr string
	re := regexp.MustCompile(`Queuety UI on http://(\S+)/ `)
	require.Eventually(t, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "no address printed; stderr: %s", &errOut)

	// A POST whose body never comes: the read times out and the server
	// closes the connection well before the test's own deadline.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken=", addr)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		res.Body.Close()
	}
	took := time.Since(start)
	assert.Less(t, took, 5*time.Second, "a request with a stalled body is cut off by the read timeout (err %v)", err)

	// Headers that never end.
	conn2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn2.Close()
	start = time.Now()
	_, err = fmt.Fprintf(conn2, "GET / HTTP/1.1\r\nHost: %s\r\n", addr)
	require.NoError(t, err)
	require.NoError(t, conn2.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn2.Read(make([]byte, 1))
	assert.Less(t, time.Since(start), 5*time.Second, "stalled headers are cut off (err %v)", err)
}
