package cli_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/cli"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/queuety"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the command table")

// complete sources the generated bash completion and returns the
// candidates bash offers for the words typed so far (the last one is the
// word being completed). The script asks the program itself, so bin's
// directory goes first on PATH. Without the bash-completion package the
// one function of it the script needs is defined.
func complete(t *testing.T, bin string, words ...string) []string {
	t.Helper()
	code := `
if [ -f /usr/share/bash-completion/bash_completion ]; then
	source /usr/share/bash-completion/bash_completion
else
	_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
source <(queuety-worker completion bash)
COMP_WORDS=(queuety-worker "$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
__start_queuety-worker 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", append([]string{"-c", code, "bash"}, words...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			got = append(got, f[0]) // the word, without a description
		}
	}
	return got
}

func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := buildBinary(t)

	assert.Equal(t, []string{"inspect"}, complete(t, bin, "workflow", "insp"), "a subcommand of a group")
	assert.Subset(t, complete(t, bin, "wo"), []string{"work", "workflow"}, "top-level commands")
	assert.Contains(t, complete(t, bin, "work", "--"), "--once", "a leaf's own flags")
	assert.Contains(t, complete(t, bin, "work", "--"), "--dsn", "a leaf's global flags")
	assert.Contains(t, complete(t, bin, "--dsn", "x", "workflow", "--json", "i"), "inspect", "flags between the words")
	assert.Empty(t, complete(t, bin, "work", "--nope"), "an unknown flag")
	assert.Equal(t, []string{"pending", "processing", "completed", "failed", "buried"}, complete(t, bin, "job", "list", "--status", ""), "a flag's values")
	assert.Equal(t, []string{"--status"}, complete(t, bin, "list", "--sta"), "the flags of a wp queuety spelling")
}

func TestCompletionOtherShells(t *testing.T) {
	for shell, want := range map[string]string{
		"zsh":        "#compdef queuety-worker",
		"fish":       "complete -c queuety-worker",
		"powershell": "Register-ArgumentCompleter -CommandName 'queuety-worker'",
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, cli.Run(context.Background(), []string{"completion", shell}, nil, &out, &errOut), errOut.String())
		assert.Contains(t, out.String(), want, shell)
		assert.Contains(t, out.String(), "__complete", "%s: the script asks the program", shell)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, cli.Run(context.Background(), []string{"completion", "tcsh"}, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown shell "tcsh"`)
}

// completions asks the program, as the completion scripts do, for the
// words that complete the last of args, and returns them without their
// descriptions.
func completions(t *testing.T, reg *queuety.Registry, args ...string) []string {
	t.Helper()
	r := run(t, reg, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, r.code, "%v: stderr:\n%s", args, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-1], ":"), "%v: no directive line in %q", args, r.stdout)
	var out []string
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		out = append(out, w)
	}
	return out
}

// TestCompletionValues: the values of enumerable flags, the handlers of
// the registry and the queues of the store complete.
// It sets $QUEUETY_DSN, so it does not run in parallel.
func TestCompletionValues(t *testing.T) {
	assert.Equal(t, []string{"pending", "processing", "completed", "failed", "buried"}, completions(t, nil, "job", "list", "--status", ""))
	assert.Equal(t, []string{"pending", "processing", "completed", "failed", "buried"}, completions(t, nil, "list", "--status", ""), "a wp queuety spelling")
	assert.Contains(t, completions(t, nil, "workflow", "list", "--status", ""), "waiting_for_signal")
	assert.NotContains(t, completions(t, nil, "workflow", "list", "--status", ""), "buried")
	assert.Equal(t, []string{"debug", "info", "warn", "error"}, completions(t, nil, "status", "--log-level", ""))
	assert.Equal(t, []string{"debug", "info", "warn", "error"}, completions(t, nil, "--log-level", ""), "a global flag before the command")
	assert.Equal(t, []string{"text", "json"}, completions(t, nil, "work", "--log-format", ""))
	assert.Equal(t, []string{"table", "json"}, completions(t, nil, "job", "list", "--format", ""))
	assert.Equal(t, []string{"sqlite://", "mysql://"}, completions(t, nil, "status", "--dsn", ""))
	assert.Equal(t, []string{"low", "normal", "high", "urgent"}, completions(t, nil, "dispatch", "h", "--priority", ""))
	assert.Equal(t, []string{"allow", "skip", "buffer"}, completions(t, nil, "schedule", "add", "h", "--overlap", ""))
	assert.Contains(t, completions(t, nil, "log", "list", "--event", ""), "started")
	assert.Contains(t, completions(t, nil, "log", "--ev"), "--event", "the flags of a group's default subcommand")
	assert.Equal(t, []string{"bash", "zsh", "fish", "powershell"}, completions(t, nil, "completion", ""))
	assert.Contains(t, completions(t, nil, "help", "wo"), "workflow", "help completes commands")

	reg := queuety.NewRegistry()
	reg.HandleJob("send_email", func(context.Context, queuety.Payload) error { return nil })
	reg.HandleJob("sync_feed", func(context.Context, queuety.Payload) error { return nil })
	assert.Equal(t, []string{"send_email", "sync_feed"}, completions(t, reg, "dispatch", ""), "handlers of the registry")
	assert.Equal(t, []string{"send_email", "sync_feed"}, completions(t, reg, "job", "list", "--handler", ""))

	dsn := tempDSN(t)
	mysqlDSN, _ := migrated.DSN(t)
	for store, dsn := range map[string]string{"sqlite": dsn, "mysql": mysqlDSN} {
		mustRun(t, nil, "--dsn", dsn, "dispatch", "x", "--queue", "mail")
		mustRun(t, nil, "--dsn", dsn, "dispatch", "x", "--queue", "reports")
		assert.Equal(t, []string{"mail", "reports"}, completions(t, nil, "--dsn", dsn, "queue", "pause", ""), "%s: queues of the store", store)
		assert.Equal(t, []string{"mail", "reports"}, completions(t, nil, "pause", "--dsn", dsn, ""), "%s: queues of the store, by the wp queuety spelling", store)
		assert.Equal(t, []string{"mail", "reports"}, completions(t, nil, "work", "--dsn", dsn, "--queues", ""), store)
	}
	t.Setenv(cli.EnvDSN, dsn)
	assert.Equal(t, []string{"mail", "reports"}, completions(t, nil, "job", "list", "--queue", ""), "the store of $QUEUETY_DSN")
}

// TestCompletionStoreFailures: a store that cannot be opened completes
// nothing and prints nothing, neither its error nor its DSN.
func TestCompletionStoreFailures(t *testing.T) {
	for _, dsn := range []string{
		"sqlite://" + filepath.Join(t.TempDir(), "missing.db"),
		"mysql://queuety:s3cr3t-pass@127.0.0.1:1/queuety", // nothing listens on port 1
	} {
		r := run(t, nil, "__complete", "--dsn", dsn, "queue", "pause", "")
		assert.Equal(t, 0, r.code, "%s: stderr:\n%s", dsn, r.stderr)
		assert.Equal(t, ":4", strings.TrimSpace(r.stdout), "%s: no words, no files", dsn)
		assert.NotContains(t, r.stdout+r.stderr, "s3cr3t", "the password")
		assert.NotContains(t, r.stderr, "error", "%s", dsn)
		assert.NoFileExists(t, strings.TrimPrefix(dsn, "sqlite://"), "completion created the store")
	}
}

// TestCLIReference keeps docs/cli.md equal to the command table.
func TestCLIReference(t *testing.T) {
	var b bytes.Buffer
	cli.WriteMarkdown(&b)
	path := filepath.Join("..", "docs", "cli.md")
	if *update {
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cli -run TestCLIReference -update")
	assert.Equal(t, string(want), b.String(), "docs/cli.md is stale: run go test ./cli -run TestCLIReference -update")
}
