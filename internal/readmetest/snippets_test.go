package readmetest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/readmetest"
)

func TestExtract(t *testing.T) {
	md := strings.Join([]string{
		"# Title",                  // 1
		"",                         // 2
		"```go",                    // 3
		"x := 1",                   // 4
		"```",                      // 5
		"Inline ```go x``` span.",  // 6
		"```sh",                    // 7
		"go test ./...",            // 8
		"```",                      // 9
		"- a list item:",           // 10
		"  ```golang",              // 11
		"  \tif x {",               // 12
		"  \t}",                    // 13
		"  ```",                    // 14
		"````markdown",             // 15
		"```go",                    // 16
		"not a snippet",            // 17
		"```",                      // 18
		"````",                     // 19
		"~~~ go title=\"main.go\"", // 20
		"package main",             // 21
		"~~~",                      // 22
	}, "\n")
	snips, err := readmetest.Extract("doc.md", []byte(md))
	require.NoError(t, err)
	assert.Equal(t, []readmetest.Snippet{
		{File: "doc.md", Line: 4, Code: "x := 1\n"},
		{File: "doc.md", Line: 12, Code: "\tif x {\n\t}\n"},
		{File: "doc.md", Line: 21, Code: "package main\n"},
	}, snips)
	assert.Equal(t, "doc.md:4", snips[0].String())
}

func TestExtractUnclosedFence(t *testing.T) {
	_, err := readmetest.Extract("doc.md", []byte("text\n\n```go\nx := 1\n"))
	require.EqualError(t, err, "doc.md:3: code fence is never closed")
}

// wrap wraps code as a snippet starting at line 10 of /md/doc.md.
func wrap(t *testing.T, code string) (snippet, prelude string) {
	t.Helper()
	w, err := readmetest.Wrap(readmetest.Snippet{File: "doc.md", Line: 10, Code: code}, "/md/doc.md")
	require.NoError(t, err)
	return string(w.Files[readmetest.SnippetFile]), string(w.Files[readmetest.PreludeFile])
}

func TestWrapStatements(t *testing.T) {
	src, prelude := wrap(t, "id, err := q.Dispatch(ctx, \"send_email\", nil) // a job\nfmt.Println(id)\n")
	assert.Contains(t, src, "package snippet\n")
	assert.Contains(t, src, "import (\n\t\"fmt\"\n)\n")
	assert.Contains(t, src, "func _() {\n//line /md/doc.md:10:1\n"+
		"id, err := q.Dispatch(ctx, \"send_email\", nil); _ = id; _ = err // a job\nfmt.Println(id)\n}\n")
	assert.Contains(t, prelude, "\tctx context.Context\n")
	assert.Contains(t, prelude, "\tq *queuety.Client\n")
	assert.Contains(t, prelude, "\"github.com/queuety/queuety-go/queuety\"")
	assert.NotContains(t, prelude, "err", "the snippet declares err itself")
}

func TestWrapDeclarations(t *testing.T) {
	src, prelude := wrap(t, "// A type.\ntype T struct{}\n\nfunc (T) M() {}\n\nvar reg = queuety.NewRegistry()\n\nfunc main() {\n\treg.HandleStep(\"a\", fetchData)\n}\n")
	assert.NotContains(t, src, "func _()", "a fragment without statements needs no function")
	assert.Contains(t, src, "//line /md/doc.md:11:1\ntype T struct{}\n\nfunc (T) M() {}\n\nvar reg = queuety.NewRegistry()\n")
	assert.Contains(t, src, "\t\"github.com/queuety/queuety-go/queuety\"\n")
	assert.Contains(t, prelude, "\tfetchData queuety.StepFunc\n")
	assert.NotContains(t, prelude, "reg")
}

// mixedFragment has imports, declarations and statements, and leaves
// variables and an import unused; it compiles once wrapped.
var mixedFragment = strings.Join([]string{
	`import (`, // 10
	`	"github.com/queuety/queuety-go/worker"`,
	`	unused "strings"`,
	`	"os"`,
	`)`,
	``,
	`func handler(ctx context.Context, s queuety.State) (queuety.State, error) { return s, nil }`, // 16
	``,
	`w := worker.New(q)`, // 18
	`var n int`,
	`func() { w.HandleStep("a", handler) }()`,
	`for i, v := range []int{1} {`,
	`}`,
	`if x, ok := any(n).(int); ok {`,
	`}`,
	`switch y := n; {`,
	`case true:`,
	`}`,
}, "\n") + "\n"

func TestWrapMixed(t *testing.T) {
	src, _ := wrap(t, mixedFragment)
	assert.Contains(t, src, "//line /md/doc.md:10:1\nimport (")
	assert.Contains(t, src, "\t_ \"strings\"\n\t_ \"os\"\n", "unused imports become blank")
	assert.Contains(t, src, "//line /md/doc.md:16:1\nfunc handler(")
	assert.Contains(t, src, "func _() {\n//line /md/doc.md:18:1\nw := worker.New(q); _ = w\nvar n int; _ = n\n")
	assert.Contains(t, src, "func() { w.HandleStep(\"a\", handler) }()\n", "a function literal is a statement")
	assert.Contains(t, src, "for i, v := range []int{1} {_ = i; _ = v; \n")
	assert.Contains(t, src, "if x, ok := any(n).(int); ok {_ = x; _ = ok; \n")
	assert.Contains(t, src, "case true:_ = y; \n")
}

func TestWrapPackageClause(t *testing.T) {
	src, prelude := wrap(t, "package main\n\nfunc main() {}\n")
	assert.Equal(t, "//line /md/doc.md:10:1\npackage main\n\nfunc main() {}\n", src)
	assert.Empty(t, prelude)
}

func TestWrapSyntaxError(t *testing.T) {
	_, err := readmetest.Wrap(readmetest.Snippet{File: "doc.md", Line: 10, Code: "x := 1\ny := (2\n"}, "/md/doc.md")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/md/doc.md:11:", "the position is in the Markdown file")
}

// Names that fragments use without declaring are either packages or
// variables, never both.
func TestPreludeNamesAreDistinct(t *testing.T) {
	for name := range readmetest.Predeclared {
		assert.NotContains(t, readmetest.KnownImports, name)
	}
}

// A broken snippet fails the check, at its line in the Markdown file, and
// the snippets around it do not.
func TestCheckReportsBrokenSnippets(t *testing.T) {
	goCmd := goCommand(t)
	md := strings.Join([]string{
		"# Guide", // 1
		"",
		"```go",
		"w := worker.New(q, worker.Queues(\"mail\"))", // 4
		"stats, err := w.RunOnce(ctx, time.Minute)",   // 5: fine
		"```",
		"",
		"```go",
		"err = w.RunOnce(ctx, time.Minute)", // 9: two values
		"```",
		"",
		"```go",
		"func main() {", // 13
		"\treg := queuety.NewRegistry()",
		"\treg.HandleStep(\"fetch\", fetchRows)", // 15: undefined
		"}",
		"```",
		"",
		"```go",
		"id, err := q.Dispatch(ctx, \"a\", nil", // 20: does not parse
		"```",
	}, "\n") + "\n"
	snips, err := readmetest.Extract("guide.md", []byte(md))
	require.NoError(t, err)
	require.Len(t, snips, 4)

	root := repoRoot(t)
	err = readmetest.Check(t.Context(), readmetest.Config{Root: root, WorkDir: t.TempDir(), Go: goCmd}, snips)
	require.Error(t, err)
	msg := err.Error()
	t.Log(msg)
	assert.Contains(t, msg, "guide.md:9:7: assignment mismatch: 1 variable but w.RunOnce returns 2 values")
	assert.Contains(t, msg, "guide.md:15:26: undefined: fetchRows")
	assert.Contains(t, msg, "# guide.md:20 does not parse\nguide.md:20:")
	assert.NotContains(t, msg, "guide.md:5:")
	assert.NotContains(t, msg, root, "positions are relative to the root")
}

// go vet runs too, once everything builds.
func TestCheckRunsVet(t *testing.T) {
	goCmd := goCommand(t)
	snips := []readmetest.Snippet{
		{File: "guide.md", Line: 3, Code: "id, err := q.Dispatch(ctx, \"a\", nil)\n"},
		{File: "guide.md", Line: 7, Code: "fmt.Printf(\"%d jobs\\n\", \"three\")\n"},
		{File: "guide.md", Line: 10, Code: mixedFragment},
	}
	err := readmetest.Check(t.Context(), readmetest.Config{Root: repoRoot(t), WorkDir: t.TempDir(), Go: goCmd}, snips)
	require.Error(t, err)
	var reported []string
	for line := range strings.Lines(err.Error()) {
		if strings.HasPrefix(line, "guide.md:") {
			reported = append(reported, strings.TrimSpace(line))
		}
	}
	assert.Equal(t, []string{`guide.md:7:13: fmt.Printf format %d has arg "three" of wrong type string`}, reported,
		"the fragments with unused variables and imports build and vet")
}
