// Package readmetest checks that the Go snippets in the repository's
// Markdown files compile against the real API.
//
// Extract finds the ```go fenced blocks of a Markdown file. Wrap turns one
// block into a compilable Go package: a block with a package clause is used
// as it is; any other block is a fragment, whose imports are inferred from a
// fixed table (KnownImports), whose undeclared names come from a small set of
// pre-declared variables (Predeclared), whose declarations (funcs, types,
// imports) stay at package level and whose statements go into a function
// body. Check writes every wrapped snippet into one temporary module that
// requires this one through a replace directive, and runs go build and go
// vet over all of them at once. The generated files carry //line
// directives, so errors name the Markdown file and line of the snippet.
package readmetest

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Snippet is one fenced Go code block of a Markdown file.
type Snippet struct {
	// File is the Markdown file's path, relative to the root given to
	// Check (or absolute).
	File string
	// Line is the 1-based line in File of the block's first code line.
	Line int
	// Code is the block's text, with the fence's indentation removed.
	Code string
}

// String names the snippet by its position, as "README.md:49".
func (s Snippet) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// fence is an opening code fence: its character (` or ~), its length, its
// indentation and the first word of its info string.
type fence struct {
	char   byte
	n      int
	indent int
	lang   string
}

// parseFence reads line as an opening fence; ok is false when it is not one.
func parseFence(line string) (f fence, ok bool) {
	rest := strings.TrimLeft(line, " ")
	f.indent = len(line) - len(rest)
	if rest == "" || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	f.char = rest[0]
	for f.n < len(rest) && rest[f.n] == f.char {
		f.n++
	}
	if f.n < 3 {
		return fence{}, false
	}
	info := strings.TrimSpace(rest[f.n:])
	if f.char == '`' && strings.Contains(info, "`") {
		return fence{}, false // an inline code span, not a fence
	}
	if fields := strings.Fields(info); len(fields) > 0 {
		f.lang = strings.ToLower(fields[0])
	}
	return f, true
}

// closes reports whether line closes the fence f: the same character, at
// least as many of it, nothing else but spaces.
func (f fence) closes(line string) bool {
	rest := strings.TrimSpace(line)
	if len(rest) < f.n {
		return false
	}
	return strings.Trim(rest, string(f.char)) == ""
}

// Extract returns the Go blocks (```go or ```golang, also ~~~ fences) of the
// Markdown text md, in order. file is recorded in each Snippet. A fence left
// open at the end of the text is an error, since everything after it would
// silently stop being Markdown.
func Extract(file string, md []byte) ([]Snippet, error) {
	var (
		out     []Snippet
		open    *fence
		start   int // line of the open fence
		body    []string
		lineNum int
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64*1024), 10*1024*1024)
	for sc.Scan() {
		lineNum++
		line := strings.TrimRight(sc.Text(), "\r")
		if open == nil {
			if f, ok := parseFence(line); ok {
				open, start, body = &f, lineNum, nil
			}
			continue
		}
		if open.closes(line) {
			if open.lang == "go" || open.lang == "golang" {
				out = append(out, Snippet{File: file, Line: start + 1, Code: strings.Join(body, "\n") + "\n"})
			}
			open = nil
			continue
		}
		// Content lines lose up to the fence's indentation.
		trimmed := strings.TrimLeft(line, " ")
		if cut := len(line) - len(trimmed); cut > open.indent {
			trimmed = line[open.indent:]
		}
		body = append(body, trimmed)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: code fence is never closed", file, start)
	}
	return out, nil
}

// MarkdownFiles returns the Markdown files under root whose snippets are
// checked, relative to root and sorted: every *.md file except those in
// testdata directories (copies of other projects' documents) and in
// directories whose name starts with "." or "_".
func MarkdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// ExtractFiles extracts the Go snippets of the named Markdown files, which
// are relative to root.
func ExtractFiles(root string, files []string) ([]Snippet, error) {
	var all []Snippet
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		snips, err := Extract(f, md)
		if err != nil {
			return nil, err
		}
		all = append(all, snips...)
	}
	return all, nil
}
