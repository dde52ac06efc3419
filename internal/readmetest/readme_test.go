package readmetest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/readmetest"
)

// repoRoot is the directory of this repository's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// goCommand is the go command on PATH; the test is skipped without one.
func goCommand(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	return path
}

// TestMarkdownSnippetsCompile builds and vets every Go snippet of the
// repository's Markdown files (README.md, docs/, the examples' READMEs).
func TestMarkdownSnippetsCompile(t *testing.T) {
	goCmd := goCommand(t)
	root := repoRoot(t)

	files, err := readmetest.MarkdownFiles(root)
	require.NoError(t, err)
	require.Contains(t, files, "README.md")
	snippets, err := readmetest.ExtractFiles(root, files)
	require.NoError(t, err)

	var inReadme int
	for _, s := range snippets {
		if s.File == "README.md" {
			inReadme++
		}
	}
	require.NotZero(t, inReadme, "README.md has Go snippets")
	t.Logf("%d Go snippets in %d Markdown files (%d in README.md)", len(snippets), len(files), inReadme)

	trackSources(t, root)
	err = readmetest.Check(t.Context(), readmetest.Config{Root: root, WorkDir: t.TempDir(), Go: goCmd}, snippets)
	if err != nil {
		t.Fatal(err)
	}
}

// trackSources stats every Go file of the module. The snippets compile in a
// child go command, whose reads go test does not see; stating the files
// (and listing their directories) makes a cached pass of this test stale
// when the API the snippets use changes.
func trackSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			_, err = os.Stat(path)
		}
		return err
	})
	require.NoError(t, err)
}

// The snippets import this module by the path the import table uses.
func TestKnownImportsUseThisModule(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(gomod), "module github.com/queuety/queuety-go\n")
	require.Equal(t, "github.com/queuety/queuety-go/queuety", readmetest.KnownImports["queuety"])
}
