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

	"github.com/queuety/queuety-go/queuety"
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
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %s\nstdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errOut.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
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
		if r.code != 0 {
			t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("demo took %s", took)
		}
		if !strings.Contains(r.stdout, "Deadline exceeded") || !strings.Contains(r.stdout, "20 of 20 done") {
			t.Errorf("demo output:\n%s", r.stdout)
		}
		// The demo's fresh database is in TMPDIR, and its hint works.
		m := regexp.MustCompile(`--dsn (sqlite://\S+) status`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no status hint in:\n%s", r.stdout)
		}
		if !strings.HasPrefix(strings.TrimPrefix(m[1], "sqlite://"), tmp) {
			t.Errorf("demo database %s is not in TMPDIR %s", m[1], tmp)
		}
		st := runBinary(t, bin, nil, 30*time.Second, "--dsn", m[1], "status")
		if st.code != 0 || !strings.Contains(st.stdout, "demo") {
			t.Errorf("status on the demo database: exit %d\n%s%s", st.code, st.stdout, st.stderr)
		}
	})

	t.Run("work once", func(t *testing.T) {
		t.Parallel()
		dsn := tempDSN(t)
		// A workflow of internal steps only (a delay, then a signal wait),
		// which the binary runs without user handlers, and a plain job for a
		// handler it does not have, which it must leave alone.
		c := openClient(t, dsn)
		id, err := c.DispatchWorkflow(context.Background(), queuety.WorkflowDefinition{Name: "internal_only", Steps: []queuety.WorkflowStep{
			{Type: queuety.StepDelay, Delay: 0},
			{Type: queuety.StepWaitForSignal, Signal: "go"},
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := runBinary(t, bin, nil, 60*time.Second, "--dsn", dsn, "dispatch", "App\\Jobs\\NotHere")
		if r.code != 0 {
			t.Fatalf("dispatch: exit %d %s", r.code, r.stderr)
		}
		jobID, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
		if err != nil {
			t.Fatalf("dispatch printed %q, not an id", r.stdout)
		}

		r = runBinary(t, bin, nil, 60*time.Second, "work", "--once", "--max-time", "20s", "--dsn", dsn)
		if r.code != 0 || !strings.Contains(r.stdout, "work --once: claimed 2, succeeded 2, failed 0") {
			t.Fatalf("work --once: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		wf, err := c.Workflow(context.Background(), id)
		if err != nil || wf.Status != queuety.WorkflowWaitingForSignal {
			t.Errorf("workflow after work --once: %+v (%v)", wf, err)
		}
		j, err := c.Job(context.Background(), jobID)
		if err != nil || j.Status != queuety.JobPending || j.Attempts != 0 {
			t.Errorf("job without a handler: %+v (%v)", j, err)
		}

		// A store that cannot be opened is a failure.
		r = runBinary(t, bin, nil, 60*time.Second, "work", "--once", "--dsn", "sqlite://"+filepath.Join(t.TempDir(), "no", "such", "dir", "q.db"))
		if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "cannot open the store") {
			t.Errorf("work --once on a bad store: exit %d\nstderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("sigterm", func(t *testing.T) {
		t.Parallel()
		dsn := tempDSN(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "work", "--dsn", dsn, "--log-level", "info")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
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
					if !ok {
						t.Fatalf("worker output ended before %q:\n%s", want, strings.Join(log, "\n"))
					}
					log = append(log, l)
					if strings.Contains(l, want) {
						return
					}
				case <-timer.C:
					t.Fatalf("no %q within %s:\n%s", want, within, strings.Join(log, "\n"))
				}
			}
		}
		waitFor("worker started", 30*time.Second)
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitFor("worker stopped", 10*time.Second)
		for range lines { // drain until the pipe closes
		}
		err = cmd.Wait()
		if took := time.Since(sent); took > 10*time.Second {
			t.Errorf("exit took %s after SIGTERM", took)
		}
		if err != nil {
			t.Errorf("worker exit after SIGTERM: %v\n%s", err, strings.Join(log, "\n"))
		}
	})
}
