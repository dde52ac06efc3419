package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// buildBinary builds cmd/queuety-worker into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("uses SIGTERM")
	}
	bin := filepath.Join(t.TempDir(), "queuety-worker")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/queuety-worker")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return bin
}

// runBinary runs the binary to completion with a timeout.
func runBinary(t *testing.T, bin string, env []string, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v did not finish within %s\nstdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errOut.String())
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "%v", args)
	}
	return result{out.String(), errOut.String(), code}
}

func TestBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)

	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		tmp := t.TempDir()
		start := time.Now()
		r := runBinary(t, bin, []string{"TMPDIR=" + tmp}, 60*time.Second, "demo", "--jobs", "20", "--workflows", "3")
		require.Equal(t, 0, r.code, "demo exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.LessOrEqual(t, time.Since(start), 30*time.Second, "demo took too long")
		assert.Contains(t, r.stdout, "Deadline exceeded", "demo output")
		assert.Contains(t, r.stdout, "20 of 20 done", "demo output")
		// The demo's fresh database is in TMPDIR, and its hint works.
		m := regexp.MustCompile(`--dsn (sqlite://\S+) status`).FindStringSubmatch(r.stdout)
		require.NotNil(t, m, "no status hint in:\n%s", r.stdout)
		assert.True(t, strings.HasPrefix(strings.TrimPrefix(m[1], "sqlite://"), tmp), "demo database %s is not in TMPDIR %s", m[1], tmp)
		st := runBinary(t, bin, nil, 30*time.Second, "--dsn", m[1], "status")
		assert.Equal(t, 0, st.code, "status on the demo database: exit code\n%s%s", st.stdout, st.stderr)
		assert.Contains(t, st.stdout, "demo", "status on the demo database")
	})

	t.Run("work once", func(t *testing.T) {
		t.Parallel()
		dsn := tempDSN(t)
		// A workflow of internal steps only (a delay, then a signal wait),
		// which the binary runs without user handlers, and a plain job for a
		// handler it does not have, which it must leave alone.
		c := openClient(t, dsn)
		id, err := c.DispatchWorkflow(context.Background(), queuety.WorkflowDefinition{Name: "internal_only", Steps: []queuety.WorkflowStep{
			{Type: queuetytype.StepDelay, Delay: 0},
			{Type: queuetytype.StepWaitForSignal, Signal: "go"},
		}}, nil)
		require.NoError(t, err)
		r := runBinary(t, bin, nil, 60*time.Second, "--dsn", dsn, "dispatch", "App\\Jobs\\NotHere")
		require.Equal(t, 0, r.code, "dispatch: exit code; stderr %s", r.stderr)
		jobID, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
		require.NoError(t, err, "dispatch printed %q, not an id", r.stdout)

		r = runBinary(t, bin, nil, 60*time.Second, "work", "--once", "--max-time", "20s", "--dsn", dsn)
		require.Equal(t, 0, r.code, "work --once: exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		require.Contains(t, r.stdout, "work --once: claimed 2, succeeded 2, failed 0", "work --once\nstderr:\n%s", r.stderr)
		wf, err := c.Workflow(context.Background(), id)
		require.NoError(t, err, "workflow after work --once")
		assert.Equal(t, queuetytype.WorkflowWaitingForSignal, wf.Status, "workflow after work --once: %+v", wf)
		j, err := c.Job(context.Background(), jobID)
		require.NoError(t, err, "job without a handler")
		assert.Equal(t, queuetytype.JobPending, j.Status, "job without a handler: %+v", j)
		assert.Equal(t, 0, j.Attempts, "job without a handler: %+v", j)

		// A store that cannot be opened is a failure.
		r = runBinary(t, bin, nil, 60*time.Second, "work", "--once", "--dsn", "sqlite://"+filepath.Join(t.TempDir(), "no", "such", "dir", "q.db"))
		assert.Equal(t, 1, r.code, "work --once on a bad store: exit code\nstderr:\n%s", r.stderr)
		assert.Zero(t, strings.Count(strings.TrimSpace(r.stderr), "\n"), "work --once on a bad store: stderr is not one line:\n%s", r.stderr)
		assert.Contains(t, r.stderr, "cannot open the store", "work --once on a bad store")
	})

	t.Run("sigterm", func(t *testing.T) {
		t.Parallel()
		dsn := tempDSN(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "work", "--dsn", dsn, "--log-level", "info")
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan string, 100)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var log []string
		waitFor := func(want string, within time.Duration) {
			t.Helper()
			timer := time.NewTimer(within)
			defer timer.Stop()
			for {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "worker output ended before %q:\n%s", want, strings.Join(log, "\n"))
					log = append(log, l)
					if strings.Contains(l, want) {
						return
					}
				case <-timer.C:
					require.FailNow(t, "timed out waiting for worker output", "no %q within %s:\n%s", want, within, strings.Join(log, "\n"))
				}
			}
		}
		waitFor("worker started", 30*time.Second)
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		waitFor("worker stopped", 10*time.Second)
		for range lines { // drain until the pipe closes
		}
		err = cmd.Wait()
		assert.LessOrEqual(t, time.Since(sent), 10*time.Second, "exit after SIGTERM took too long")
		assert.NoError(t, err, "worker exit after SIGTERM\n%s", strings.Join(log, "\n"))
	})
}

// TestBinaryName: a program built on cli.Main says the name it runs as,
// the base name of os.Args[0], in its usage, errors and completion.
func TestBinaryName(t *testing.T) {
	bin := buildBinary(t)
	acme := filepath.Join(filepath.Dir(bin), "acme-worker")
	require.NoError(t, os.Rename(bin, acme))
	r := runBinary(t, acme, nil, time.Minute, "--help")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Usage: acme-worker COMMAND [ARGS] [flags]")
	assert.NotContains(t, r.stdout, "queuety-worker")
	r = runBinary(t, acme, nil, time.Minute, "wrok")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, `acme-worker: unknown command "wrok"; did you mean "work"? (see 'acme-worker help')`+"\n", r.stderr)
	r = runBinary(t, acme, nil, time.Minute, "completion", "fish")
	assert.Contains(t, r.stdout, "complete -c acme-worker")
}
