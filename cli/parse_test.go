package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDidYouMean: a mistyped command, subcommand or flag names the
// nearest ones.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wrok"}, `queuety-worker: unknown command "wrok"; did you mean "work"? (see 'queuety-worker help')`},
		{[]string{"workflow", "stauts", "5"}, `queuety-worker workflow: unknown command "stauts"; did you mean "status"? (see 'queuety-worker workflow -h')`},
		{[]string{"job", "lsit"}, `did you mean "list"?`},
		{[]string{"pasue", "emails"}, `did you mean "pause"?`}, // a wp queuety spelling
		{[]string{"status", "--josn"}, `queuety-worker status: flag provided but not defined: --josn; did you mean --json? (see 'queuety-worker status -h')`},
		{[]string{"status", "--jsn"}, `did you mean --dsn or --json?`},
		{[]string{"work", "--onse"}, `did you mean --once?`},
		{[]string{"job", "list", "--stat", "failed"}, `did you mean --status?`},
		{[]string{"help", "workflow", "inspekt"}, `help: unknown command "workflow inspekt"; did you mean "inspect"?`},
	} {
		r := wantFail(t, 2, tc.want, tc.args...)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %q", tc.args, r.stderr)
	}
	// Nothing near: the known words are listed, as before.
	wantFail(t, 2, `unknown command "frobnicate" (known: work, flush, migrate,`, "frobnicate")
}

// TestGoStyleFlags: the spellings of the flag package, which the command
// line has always accepted and cron lines use, still work: single-dash
// long flags (with or without =), flags after the positional arguments,
// -help, and "--" ending the flags.
func TestGoStyleFlags(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	out := mustRun(t, nil, "-dsn", dsn, "-json", "dispatch", "h", `{"a": 1}`, "-queue", "mail", "-priority=high")
	id := decode[map[string]any](t, out)["id"]
	require.NotNil(t, id, out)
	jobs := decode[[]map[string]any](t, mustRun(t, nil, "job", "list", "-dsn="+dsn, "-queue", "mail", "-json"))
	require.Len(t, jobs, 1)
	assert.Equal(t, "h", jobs[0]["handler"])

	out = mustRun(t, nil, "work", "-once", "-max-time=2s", "-dsn", dsn, "-log-level", "error")
	assert.Contains(t, out, "work --once: claimed 0", "the job has no handler here")
	out = mustRun(t, nil, "-dsn", dsn, "work", "-once", "-json=true", "-max-time", "1s")
	assert.Contains(t, out, `"claimed": 0`)

	// A flag's value that looks like a flag is the value.
	wantFail(t, 2, "--limit must be at least 1, got -1", "-dsn", dsn, "job", "list", "-limit", "-1")
	// After --, words are arguments.
	out = mustRun(t, nil, "--dsn", dsn, "dispatch", "--json", "--", "-weird")
	assert.Contains(t, out, `"id"`)
	for _, h := range []string{"-h", "-help", "--help", "--h"} {
		assert.Contains(t, mustRun(t, nil, "work", h), "Usage: queuety-worker work [flags]", h)
	}
	// wp queuety's log group: flags only run log list.
	assert.Contains(t, mustRun(t, nil, "-dsn", dsn, "log", "-job", "1"), "")
	assert.Contains(t, mustRun(t, nil, "log", "-h"), "Usage: queuety-worker log COMMAND", "help of the group, not of its default")
}

// TestHelpEnvironment: the program's help lists the environment
// variables it reads, and --version (or -version) prints what version
// prints.
func TestHelpEnvironment(t *testing.T) {
	t.Parallel()
	out := mustRun(t, nil, "--help")
	require.Contains(t, out, "\nEnvironment:\n")
	for _, v := range []string{"QUEUETY_DSN", "QUEUETY_MAX_EXECUTION_TIME", "QUEUETY_WEBHOOK_ALLOW", "QUEUETY_METRICS_TOKEN", "QUEUETY_UI_BASIC_AUTH", "GOGC"} {
		assert.Contains(t, out[strings.Index(out, "\nEnvironment:\n"):], "  "+v+" ", "help lists %s", v)
	}
	assert.Equal(t, mustRun(t, nil, "version"), mustRun(t, nil, "-version"))
}
