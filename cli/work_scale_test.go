package cli_test

import (
	"testing"
)

// TestWorkScaleAndExecutionFlags: the adaptive-concurrency and
// execution-time flags of work reject bad input with a usage error, and a
// valid set runs a once-mode worker.
func TestWorkScaleAndExecutionFlags(t *testing.T) {
	dsn := tempDSN(t)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--min-workers needs --max-workers", []string{"--min-workers", "2"}},
		{"--max-workers replaces --concurrency", []string{"--max-workers", "4", "--concurrency", "8"}},
		{"--max-workers must be at least 1", []string{"--max-workers", "0"}},
		{"--min-workers must be between 1 and --max-workers (4), got 5", []string{"--min-workers", "5", "--max-workers", "4"}},
		{"--scale-interval must be positive", []string{"--max-workers", "4", "--scale-interval", "0"}},
		{"--max-execution-time must not be negative", []string{"--max-execution-time", "-1s"}},
	} {
		wantFail(t, 2, c.want, append([]string{"--dsn", dsn, "work", "--once"}, c.args...)...)
	}
	r := run(t, nil, "--dsn", dsn, "work", "--once", "--max-time", "1s", "--min-workers", "2", "--max-workers", "4", "--max-execution-time", "300")
	if r.code != 0 {
		t.Fatalf("work --once with scale flags: exit %d\n%s", r.code, r.stderr)
	}
}

// TestWorkMaxExecutionTimeEnv: $QUEUETY_MAX_EXECUTION_TIME, Queuety's
// constant, is read in seconds when the flag is not given.
func TestWorkMaxExecutionTimeEnv(t *testing.T) {
	dsn := tempDSN(t)
	t.Setenv("QUEUETY_MAX_EXECUTION_TIME", "soon")
	wantFail(t, 2, "$QUEUETY_MAX_EXECUTION_TIME: want whole seconds", "--dsn", dsn, "work", "--once", "--max-time", "1s")
	t.Setenv("QUEUETY_MAX_EXECUTION_TIME", "300")
	if r := run(t, nil, "--dsn", dsn, "work", "--once", "--max-time", "1s"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}
