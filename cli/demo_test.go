package cli_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
)

// TestDemoProgress: a run longer than a second prints plain progress
// lines (stdout is no terminal: no carriage returns) with the jobs and
// workflows done and the job rate.
func TestDemoProgress(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "demo.db")
	// The deadline and sleep workflows keep the run over 2 s.
	r := run(t, nil, "demo", "--jobs", "20", "--workflows", "3", "--dsn", dsn)
	require.Equal(t, 0, r.code, "demo exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	lines := regexp.MustCompile(`(?m)^ +\d+\.\ds  \d+/20 jobs, [0-3]/3 workflows, \d+ jobs/s$`).FindAllString(r.stdout, -1)
	require.NotEmpty(t, lines, "progress lines in:\n%s", r.stdout)
	assert.LessOrEqual(t, len(lines), 30, "at most one progress line a second")
	assert.NotContains(t, r.stdout, "\r", "no carriage returns when stdout is no terminal")
	assert.Less(t, strings.Index(r.stdout, "Running..."), strings.Index(r.stdout, lines[0]), "progress after the start")
	assert.Less(t, strings.Index(r.stdout, lines[len(lines)-1]), strings.Index(r.stdout, "Summary"), "progress before the summary")
}

// TestDemoJSON: with --json the demo prints one JSON object and no text.
func TestDemoJSON(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "demo.db")
	r := run(t, nil, "--json", "demo", "--jobs", "20", "--workflows", "4", "--dsn", dsn)
	require.Equal(t, 0, r.code, "demo exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	var got struct {
		DSN   string `json:"dsn"`
		Store struct {
			Driver string `json:"driver"`
		} `json:"store"`
		Queue          string  `json:"queue"`
		ElapsedSeconds float64 `json:"elapsed_seconds"`
		Jobs           struct {
			Dispatched     int64 `json:"dispatched"`
			Done           int64 `json:"done"`
			FailedAttempts int64 `json:"failed_attempts"`
		} `json:"jobs"`
		Workflows struct {
			Dispatched, Completed, Failed int64
			Steps                         int64 `json:"steps_done"`
		} `json:"workflows"`
		Callbacks      int64            `json:"deadline_callbacks"`
		JobsPerSecond  float64          `json:"jobs_per_second"`
		StepsPerSecond float64          `json:"steps_per_second"`
		Interesting    map[string]int64 `json:"interesting_workflows"`
		Failed         []struct {
			ID int64 `json:"id"`
		} `json:"failed_workflows"`
		Hints []string `json:"look_around"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&got), "stdout is one JSON object:\n%s", r.stdout)
	assert.False(t, dec.More(), "nothing after the JSON object:\n%s", r.stdout)
	assert.Equal(t, dsn, got.DSN)
	assert.Equal(t, "sqlite", got.Store.Driver)
	assert.Equal(t, "demo", got.Queue)
	assert.Positive(t, got.ElapsedSeconds)
	assert.Equal(t, int64(20), got.Jobs.Dispatched)
	assert.Equal(t, int64(20), got.Jobs.Done)
	assert.Equal(t, int64(1), got.Jobs.FailedAttempts)
	assert.Equal(t, int64(4), got.Workflows.Dispatched)
	assert.Equal(t, int64(3), got.Workflows.Completed)
	assert.Equal(t, int64(1), got.Workflows.Failed)
	assert.Positive(t, got.Workflows.Steps)
	assert.Equal(t, int64(1), got.Callbacks)
	assert.Positive(t, got.JobsPerSecond)
	assert.Positive(t, got.StepsPerSecond)
	require.Len(t, got.Interesting, 3, "deadline, sleep and signal workflows")
	require.Len(t, got.Failed, 1)
	assert.Equal(t, got.Interesting["deadline"], got.Failed[0].ID, "the deadline workflow is the failed one")
	assert.NotEmpty(t, got.Hints)
	assert.NotContains(t, r.stderr, "workflows,", "no progress on stderr")
}

// TestDemoGoRunHints: started by `go run`, the demo's hints say how to
// run the program again with `go run`.
func TestDemoGoRunHints(t *testing.T) {
	// Not parallel: it replaces how the demo learns its start.
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	defer cli.SetDemoStart("/tmp/go-build2841/b001/exe/queuety-worker", root)()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "demo.db")
	r := run(t, nil, "demo", "--jobs", "2", "--workflows", "0", "--dsn", dsn)
	require.Equal(t, 0, r.code, "demo exit code\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "\n  go run ./cmd/queuety-worker --dsn "+dsn+" status\n")
	assert.NotContains(t, r.stdout, "  queuety-worker --dsn")
}

// TestDemoHintCommand: how the hints name the program, by where it runs.
func TestDemoHintCommand(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	exe := filepath.Join(t.TempDir(), "go-build123", "b001", "exe", "queuety-worker")
	const pkg = "github.com/queuety/queuety-go/cmd/queuety-worker"
	assert.Equal(t, "go run ./cmd/queuety-worker", cli.HintCommand(exe, root))
	assert.Equal(t, "go run "+pkg, cli.HintCommand(exe, filepath.Join(root, "cli")))
	assert.Equal(t, "go run "+pkg+"@latest", cli.HintCommand(exe, t.TempDir()))
	assert.Equal(t, "queuety-worker", cli.HintCommand("/usr/local/bin/queuety-worker", root))
	assert.Equal(t, "queuety-worker", cli.HintCommand(filepath.Join(t.TempDir(), "go-build9", "b001", "cli.test"), root))
}

// TestDemoRedactDSN: the DSN in the demo's JSON has no password.
func TestDemoRedactDSN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"mysql://app:s3cr:et@db:3306/q":            "mysql://app:xxxxx@db:3306/q",
		"app:p@ss@tcp(127.0.0.1:3306)/wp?prefix=x": "app:xxxxx@tcp(127.0.0.1:3306)/wp?prefix=x",
		"sqlite:///tmp/demo.db":                    "sqlite:///tmp/demo.db",
		"root@tcp(127.0.0.1:3306)/q":               "root@tcp(127.0.0.1:3306)/q",
	} {
		assert.Equal(t, want, cli.RedactDSN(in), in)
	}
}
