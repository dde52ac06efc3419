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
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the command table")

// complete sources the generated bash completion and returns the
// candidates bash offers for the words typed so far (the last one is the
// word being completed).
func complete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	line := "queuety-worker " + strings.Join(words, " ")
	code := script + `
COMP_WORDS=(` + line + `)
[[ "` + line + `" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_queuety_worker
printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command("bash", "-c", code).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))
}

func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Run(context.Background(), []string{"completion", "bash"}, nil, &out, &errOut), errOut.String())
	script := out.String()

	assert.Equal(t, []string{"inspect"}, complete(t, script, "workflow", "insp"), "a subcommand of a group")
	assert.Subset(t, complete(t, script, "wo"), []string{"work", "workflow"}, "top-level commands")
	assert.Contains(t, complete(t, script, "work", "--"), "--once", "a leaf's own flags")
	assert.Contains(t, complete(t, script, "work", "--"), "--dsn", "a leaf's global flags")
	assert.Contains(t, complete(t, script, "--dsn", "x", "workflow", "--json", "i"), "inspect", "flags between the words")
	assert.Empty(t, complete(t, script, "work", "--nope"), "an unknown flag")
}

func TestCompletionOtherShells(t *testing.T) {
	for shell, want := range map[string]string{
		"zsh":  "bashcompinit",
		"fish": "complete -c queuety-worker -f -n '__fish_seen_subcommand_from workflow' -a inspect",
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, cli.Run(context.Background(), []string{"completion", shell}, nil, &out, &errOut), errOut.String())
		assert.Contains(t, out.String(), want, shell)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, cli.Run(context.Background(), []string{"completion", "tcsh"}, nil, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown shell "tcsh"`)
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
