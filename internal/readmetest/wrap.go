package readmetest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"path"
	"slices"
	"sort"
	"strings"
)

// Wrapped is a snippet turned into the files of one Go package.
type Wrapped struct {
	Snippet Snippet
	// Files maps file names to contents. SnippetFile holds the snippet;
	// PreludeFile, when present, declares the Predeclared names it uses.
	Files map[string][]byte
}

// The names of the files of a wrapped snippet.
const (
	SnippetFile = "snippet.go"
	PreludeFile = "prelude.go"
)

// packageName is the package clause of wrapped fragments. It is not main,
// so go build type-checks and compiles them without linking.
const packageName = "snippet"

// importsMark stands for the inferred import block in a draft; it is a
// comment, so the draft parses without it.
const importsMark = "//readmetest:imports\n"

// Wrap turns s into a Go package. directiveFile is the file name the
// generated //line directives give, so compiler errors point into the
// Markdown file; use an absolute path (go vet reads a relative one as
// relative to the generated file).
//
// A snippet whose first token is a package clause is used as it is. Any
// other snippet is a fragment, split into import declarations, package-level
// declarations (func and type declarations, and var and const when the
// fragment has no statements) and statements, which go into the body of a
// function. Then Wrap
//   - adds the imports of KnownImports the fragment uses but does not import;
//   - declares, in PreludeFile, the Predeclared names it uses but does not
//     declare;
//   - makes the fragment's own unused imports blank imports;
//   - follows each variable declaration in a function body with `_ = name`,
//     on the same line, so that a fragment need not use all it declares.
//
// A fragment that does not parse is an error, positioned in the Markdown
// file.
func Wrap(s Snippet, directiveFile string) (Wrapped, error) {
	toks := scanTokens(s.Code)
	if len(toks) > 0 && toks[0].tok == token.PACKAGE {
		src := lineDirective(directiveFile, s.Line, 1) + s.Code
		return Wrapped{Snippet: s, Files: map[string][]byte{SnippetFile: []byte(src)}}, nil
	}

	draft := buildDraft(s, directiveFile, toks)
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, SnippetFile, draft, 0)
	if err != nil {
		return Wrapped{}, err
	}
	tf := fset.File(file.Pos())

	// Names the fragment refers to without declaring them, and those of
	// them used as pkg in pkg.Name.
	unresolved := map[string]bool{}
	for _, id := range file.Unresolved {
		unresolved[id.Name] = true
	}
	selBases := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
				selBases[id.Name] = true
			}
		}
		return true
	})

	var edits []edit

	// The fragment's own imports: keep what it uses, blank the rest.
	imported := map[string]bool{}
	for _, spec := range file.Imports {
		name := importName(spec)
		imported[name] = true
		if name == "_" || name == "." || selBases[name] {
			continue
		}
		if spec.Name != nil {
			edits = append(edits, edit{tf.Offset(spec.Name.Pos()), tf.Offset(spec.Name.End()), "_"})
		} else {
			edits = append(edits, edit{tf.Offset(spec.Path.Pos()), tf.Offset(spec.Path.Pos()), "_ "})
		}
	}

	// Declared variables count as used.
	edits = append(edits, useDeclaredVars(file, tf)...)

	// Inferred imports.
	var inferred []string
	for name := range selBases {
		if _, known := KnownImports[name]; known && !imported[name] {
			inferred = append(inferred, name)
		}
	}
	importBlock := importDecl(inferred)
	if i := strings.Index(draft, importsMark); i >= 0 {
		edits = append(edits, edit{i, i + len(importsMark), importBlock})
	}

	out := map[string][]byte{SnippetFile: []byte(applyEdits(draft, edits))}

	// The prelude: the predeclared names the fragment uses.
	var vars []string
	for name := range unresolved {
		if _, ok := Predeclared[name]; ok {
			vars = append(vars, name)
		}
	}
	if len(vars) > 0 {
		out[PreludeFile] = []byte(prelude(vars))
	}
	return Wrapped{Snippet: s, Files: out}, nil
}

// tokInfo is a scanned token and its byte offset in the snippet.
type tokInfo struct {
	off int
	tok token.Token
}

// scanTokens returns the tokens of code, with automatic semicolons. Scan
// errors are ignored: the parser reports them later with positions in the
// Markdown file.
func scanTokens(code string) []tokInfo {
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(code))
	var s scanner.Scanner
	s.Init(f, []byte(code), nil, 0)
	var toks []tokInfo
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			return toks
		}
		toks = append(toks, tokInfo{f.Offset(pos), tok})
	}
}

// segKind says where a piece of a fragment goes.
type segKind int

const (
	segStmt   segKind = iota // into the function body
	segDecl                  // at package level
	segImport                // at package level, before all else
	segVar                   // var or const: a statement if the fragment has any, else a declaration
)

// segment is a byte range [start, end) of a fragment.
type segment struct {
	kind       segKind
	start, end int
}

// segments splits a fragment into top-level pieces: each starts at a token
// that begins a statement or declaration at nesting depth 0 and ends before
// the next semicolon at that depth. Consecutive pieces of the same kind are
// merged, keeping the comments between them.
func segments(code string, toks []tokInfo) []segment {
	var segs []segment
	depth := 0
	atStart := true
	for i, t := range toks {
		switch t.tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			if atStart {
				segs = append(segs, segment{kind: segStmt, start: t.off})
				atStart = false
			}
			depth++
			continue
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth = max(depth-1, 0)
			continue
		case token.SEMICOLON:
			if depth == 0 {
				if len(segs) > 0 && !atStart {
					segs[len(segs)-1].end = t.off
				}
				atStart = true
			}
			continue
		}
		if !atStart || depth != 0 {
			continue
		}
		atStart = false
		kind := segStmt
		switch t.tok {
		case token.IMPORT:
			kind = segImport
		case token.TYPE:
			kind = segDecl
		case token.VAR, token.CONST:
			kind = segVar
		case token.FUNC:
			if isFuncDecl(toks[i+1:]) {
				kind = segDecl
			}
		}
		segs = append(segs, segment{kind: kind, start: t.off})
	}
	if n := len(segs); n > 0 && segs[n-1].end == 0 {
		segs[n-1].end = len(code)
	}

	hasStmt := slices.ContainsFunc(segs, func(s segment) bool { return s.kind == segStmt })
	var merged []segment
	for _, s := range segs {
		if s.kind == segVar {
			s.kind = segDecl
			if hasStmt {
				s.kind = segStmt
			}
		}
		if n := len(merged); n > 0 && merged[n-1].kind == s.kind {
			merged[n-1].end = s.end
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// isFuncDecl reports whether the tokens after a statement-initial func
// make a declaration: a name (func F) or a receiver and a name (func (r T)
// M), not a function literal (func() {...}() or func(x int) T {...}).
func isFuncDecl(rest []tokInfo) bool {
	if len(rest) == 0 {
		return false
	}
	if rest[0].tok == token.IDENT {
		return true
	}
	if rest[0].tok != token.LPAREN {
		return false
	}
	depth := 0
	for i, t := range rest {
		switch t.tok {
		case token.LPAREN:
			depth++
		case token.RPAREN:
			depth--
			if depth == 0 {
				return i+2 < len(rest) && rest[i+1].tok == token.IDENT && rest[i+2].tok == token.LPAREN
			}
		}
	}
	return false
}

// buildDraft lays out a fragment as a Go file: imports, declarations, then
// a function holding the statements, each piece behind a //line directive
// giving its position in the Markdown file. importsMark stands where the
// inferred imports go.
func buildDraft(s Snippet, directiveFile string, toks []tokInfo) string {
	segs := segments(s.Code, toks)
	var b strings.Builder
	fmt.Fprintf(&b, "// Go snippet from %s, wrapped to compile on its own.\n\npackage %s\n\n%s", s, packageName, importsMark)
	emit := func(kind segKind) {
		for _, seg := range segs {
			if seg.kind != kind {
				continue
			}
			line, col := position(s, seg.start)
			b.WriteString(lineDirective(directiveFile, line, col))
			b.WriteString(s.Code[seg.start:seg.end])
			b.WriteString("\n")
		}
	}
	emit(segImport)
	emit(segDecl)
	if slices.ContainsFunc(segs, func(seg segment) bool { return seg.kind == segStmt }) {
		b.WriteString("\nfunc _() {\n")
		emit(segStmt)
		b.WriteString("}\n")
	}
	return b.String()
}

// position returns the Markdown line and the column of byte offset off of
// the snippet's code.
func position(s Snippet, off int) (line, col int) {
	before := s.Code[:off]
	line = s.Line + strings.Count(before, "\n")
	col = off - strings.LastIndex(before, "\n")
	return line, col
}

// lineDirective returns a //line directive that places the next line at
// file:line:col.
func lineDirective(file string, line, col int) string {
	return fmt.Sprintf("//line %s:%d:%d\n", file, line, col)
}

// importName is the name an import spec binds: its explicit name, else the
// last element of its path that is not a major version (v2, v3, ...).
func importName(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	p := strings.Trim(spec.Path.Value, "`\"")
	name := path.Base(p)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = path.Base(path.Dir(p))
	}
	return name
}

// importDecl is the import declaration of the named KnownImports, or "".
func importDecl(names []string) string {
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("import (\n")
	for _, n := range names {
		p := KnownImports[n]
		if path.Base(p) == n {
			fmt.Fprintf(&b, "\t%q\n", p)
		} else {
			fmt.Fprintf(&b, "\t%s %q\n", n, p)
		}
	}
	b.WriteString(")\n\n")
	return b.String()
}

// prelude is PreludeFile for the named Predeclared variables.
func prelude(vars []string) string {
	sort.Strings(vars)
	var imports []string
	for _, v := range vars {
		for _, imp := range Predeclared[v].Imports {
			if !slices.Contains(imports, imp) {
				imports = append(imports, imp)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n%s", packageName, importDecl(imports))
	b.WriteString("// Names the snippet uses without declaring them.\nvar (\n")
	for _, v := range vars {
		fmt.Fprintf(&b, "\t%s %s\n", v, Predeclared[v].Type)
	}
	b.WriteString(")\n")
	return b.String()
}

// edit replaces the draft's bytes [start, end) with text.
type edit struct {
	start, end int
	text       string
}

// applyEdits applies non-overlapping edits to src.
func applyEdits(src string, edits []edit) string {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	for _, e := range edits {
		src = src[:e.start] + e.text + src[e.end:]
	}
	return src
}

// useDeclaredVars returns the edits that mark every variable declared in a
// function body as used: `; _ = x` right after a declaring statement (on its
// line, so line numbers stay), and `_ = x;` at the start of the block of an
// if, for or range statement, or of each clause of a switch or select,
// that declares x in its header.
func useDeclaredVars(file *ast.File, tf *token.File) []edit {
	var edits []edit
	uses := func(names []string, sep string) string {
		var b strings.Builder
		for _, n := range names {
			if sep == ";" {
				fmt.Fprintf(&b, "; _ = %s", n)
			} else {
				fmt.Fprintf(&b, "_ = %s; ", n)
			}
		}
		return b.String()
	}
	after := func(pos token.Pos, names []string) {
		if len(names) > 0 {
			off := tf.Offset(pos)
			edits = append(edits, edit{off, off, uses(names, ";")})
		}
	}
	before := func(pos token.Pos, names []string) { // pos is just after a { or :
		if len(names) > 0 {
			off := tf.Offset(pos)
			edits = append(edits, edit{off, off, uses(names, "{")})
		}
	}
	// A switch's body holds only clauses: its header's variables are used
	// in each of them.
	inClauses := func(body *ast.BlockStmt, names []string) {
		for _, c := range body.List {
			before(c.(*ast.CaseClause).Colon+1, names)
		}
	}
	list := func(stmts []ast.Stmt) {
		for _, st := range stmts {
			for {
				l, ok := st.(*ast.LabeledStmt)
				if !ok {
					break
				}
				st = l.Stmt
			}
			after(st.End(), declared(st))
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			list(n.List)
		case *ast.CaseClause:
			list(n.Body)
		case *ast.CommClause:
			list(n.Body)
			if n.Comm != nil {
				before(n.Colon+1, declared(n.Comm))
			}
		case *ast.IfStmt:
			if n.Init != nil {
				before(n.Body.Lbrace+1, declared(n.Init))
			}
		case *ast.ForStmt:
			if n.Init != nil {
				before(n.Body.Lbrace+1, declared(n.Init))
			}
		case *ast.SwitchStmt:
			if n.Init != nil {
				inClauses(n.Body, declared(n.Init))
			}
		case *ast.TypeSwitchStmt:
			if n.Init != nil {
				inClauses(n.Body, declared(n.Init))
			}
			inClauses(n.Body, declared(n.Assign))
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				var names []string
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
				before(n.Body.Lbrace+1, names)
			}
		}
		return true
	})
	return edits
}

// declared returns the variables a statement declares: the new names on the
// left of :=, or the names of a var declaration.
func declared(st ast.Stmt) []string {
	var names []string
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok != token.DEFINE {
			return nil
		}
		for _, e := range st.Lhs {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
				names = append(names, id.Name)
			}
		}
	case *ast.DeclStmt:
		gd, ok := st.Decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			return nil
		}
		for _, spec := range gd.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if id.Name != "_" {
					names = append(names, id.Name)
				}
			}
		}
	}
	return names
}
