package apicheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxQueuetyDocLines bounds `go doc -short` of package queuety: the
// package is the user API only, short enough to read in one listing.
const maxQueuetyDocLines = 120

// TestQueuetyDocIsShort fails when `go doc -short ./queuety` lists more
// than maxQueuetyDocLines lines.
func TestQueuetyDocIsShort(t *testing.T) {
	cmd := exec.Command("go", "doc", "-short", "./queuety")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go doc -short ./queuety: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > maxQueuetyDocLines {
		t.Errorf("go doc -short ./queuety lists %d lines, at most %d allowed:\n%s", len(lines), maxQueuetyDocLines, out)
	}
}

// TestQueuetytypeFieldsDocumented fails when an exported field of an
// exported struct in package queuetytype has neither a doc comment nor a
// line comment, so go doc of every type says what each field means.
func TestQueuetytypeFieldsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "queuetytype", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			// A field without a comment of its own is covered by the
			// comment just above it in the same run of fields (a
			// comment that names several fields, like "A and B are ...").
			covered := false
			prevLine := 0
			for _, fld := range st.Fields.List {
				line := fset.Position(fld.Pos()).Line
				switch {
				case fld.Doc != nil || fld.Comment != nil:
					covered = fld.Doc != nil
				case covered && line == prevLine+1:
				default:
					for _, id := range fld.Names {
						if id.IsExported() {
							missing = append(missing, ts.Name.Name+"."+id.Name)
						}
					}
					covered = false
				}
				prevLine = fset.Position(fld.End()).Line
			}
			return true
		})
	}
	if len(missing) > 0 {
		t.Errorf("exported fields without a comment: %s", strings.Join(missing, ", "))
	}
}
