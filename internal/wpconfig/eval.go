package wpconfig

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Options controls how Parse evaluates the expressions that set the database
// settings. The zero value reads the process environment and the file system.
type Options struct {
	// LookupEnv returns the value of an environment variable and whether it
	// is set. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// ReadFile reads the file named by a *_FILE environment variable for
	// getenv_docker(). Nil means os.ReadFile.
	ReadFile func(path string) ([]byte, error)
}

func (o Options) withDefaults() Options {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
	return o
}

// lineError is an error about one line of wp-config.php. Parse reports it as
// "line N: ...", ParseFile as "path:N: ...".
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

func errorAt(line int, format string, args ...any) error {
	return &lineError{line: line, err: fmt.Errorf(format, args...)}
}

// unsupportedError is the message of an expression the reader cannot
// evaluate. It matches ErrUnsupported in errors.Is.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string        { return e.msg }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// reason is why parseExpr or eval gave up on an expression: it becomes an
// unsupportedError naming the setting and the expression.
type reason string

func (r reason) Error() string { return string(r) }

// quotedReason is a reason that quotes the source text. Errors about the
// password, or a constant it is made of, give the plain form instead.
type quotedReason struct{ quoted, plain string }

func (r quotedReason) Error() string { return r.quoted }

// maxDepth bounds the nesting of parentheses and calls in one expression.
const maxDepth = 64

// maxValue bounds the length of a concatenation, so that constants built
// from each other cannot grow without limit.
const maxValue = 1 << 16

// A PHP value as far as the evaluator needs one: a string, false (getenv()
// of an unset variable) or null ($_ENV['X'] of an unset variable).
type valueKind int

const (
	vString valueKind = iota
	vFalse
	vNull
)

type value struct {
	kind valueKind
	s    string
}

// String converts v as PHP does: false and null become "".
func (v value) String() string { return v.s }

// truthy reports whether PHP considers v true: "" and "0" are false.
func (v value) truthy() bool { return v.kind == vString && v.s != "" && v.s != "0" }

func str(s string) value { return value{kind: vString, s: s} }

// node is a parsed expression.
type node interface{}

type (
	strNode      struct{ s string }
	concatNode   struct{ l, r node }
	elvisNode    struct{ l, r node } // l ?: r
	coalesceNode struct{ l, r node } // l ?? r
	constNode    struct{ name string }
	callNode     struct {
		fn   string // lower case: getenv or getenv_docker
		args []node
	}
	superNode struct {
		name string // $_ENV or $_SERVER
		key  node
	}
)

// exprParser parses one expression, the subset of PHP real wp-config.php
// files use for their database settings:
//
//	expr     = coalesce { "?:" coalesce }
//	coalesce = concat [ "??" coalesce ]
//	concat   = primary { "." primary }
//	primary  = string | "(" expr ")" | ["\"] getenv "(" expr ")"
//	         | ["\"] getenv_docker "(" expr "," expr ")"
//	         | ["\"] CONSTANT | ( $_ENV | $_SERVER ) "[" expr "]"
//
// The precedence is PHP 8's: "." binds tighter than "??", which binds
// tighter than "?:".
type exprParser struct {
	toks  []token
	pos   int
	depth int
}

func parseExpr(toks []token) (node, error) {
	p := &exprParser{toks: toks}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, p.unexpected()
	}
	return n, nil
}

func (p *exprParser) punct(offset int, c byte) bool {
	i := p.pos + offset
	return i < len(p.toks) && isPunct(p.toks[i], c)
}

func (p *exprParser) unexpected() error {
	if p.pos >= len(p.toks) {
		return reason("the expression ends too early")
	}
	t := p.toks[p.pos]
	switch {
	case isPunct(t, '?'):
		return reason("the ternary operator ? : is not evaluated, only ?: and ??")
	case t.kind == tokVar:
		return reason(fmt.Sprintf("variable %s is not evaluated, only $_ENV[...] and $_SERVER[...]", t.text))
	}
	return quotedReason{quoted: fmt.Sprintf("unexpected %s", t.text), plain: "unexpected token"}
}

func (p *exprParser) expr() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, reason("the expression is nested too deeply")
	}
	n, err := p.coalesce()
	for err == nil && p.punct(0, '?') && p.punct(1, ':') {
		p.pos += 2
		var r node
		if r, err = p.coalesce(); err == nil {
			n = elvisNode{n, r}
		}
	}
	return n, err
}

func (p *exprParser) coalesce() (node, error) {
	n, err := p.concat()
	if err != nil || !p.punct(0, '?') || !p.punct(1, '?') {
		return n, err
	}
	p.pos += 2
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, reason("the expression is nested too deeply")
	}
	r, err := p.coalesce()
	if err != nil {
		return nil, err
	}
	return coalesceNode{n, r}, nil
}

func (p *exprParser) concat() (node, error) {
	n, err := p.primary()
	for err == nil && p.punct(0, '.') {
		p.pos++
		var r node
		if r, err = p.primary(); err == nil {
			n = concatNode{n, r}
		}
	}
	return n, err
}

func (p *exprParser) primary() (node, error) {
	if p.pos >= len(p.toks) {
		return nil, p.unexpected()
	}
	t := p.toks[p.pos]
	switch {
	case t.kind == tokString:
		p.pos++
		return strNode{t.value}, nil
	case t.kind == tokInterp:
		return nil, quotedReason{
			quoted: fmt.Sprintf("the double-quoted string %s interpolates variables (use single quotes, or escape the $ as \\$)", t.text),
			plain:  "a double-quoted string interpolates variables (use single quotes, or escape the $ as \\$)",
		}
	case isPunct(t, '('):
		p.pos++
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.punct(0, ')') {
			return nil, p.unexpected()
		}
		p.pos++
		return n, nil
	case t.kind == tokVar && (t.text == "$_ENV" || t.text == "$_SERVER"):
		p.pos++
		if !p.punct(0, '[') {
			return nil, reason(fmt.Sprintf("%s is only evaluated as %s['NAME']", t.text, t.text))
		}
		p.pos++
		key, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.punct(0, ']') {
			return nil, p.unexpected()
		}
		p.pos++
		return superNode{name: t.text, key: key}, nil
	case isPunct(t, '\\') && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tokIdent:
		p.pos++
		return p.primary()
	case t.kind == tokIdent:
		p.pos++
		if !p.punct(0, '(') {
			return constNode{t.text}, nil
		}
		return p.call(t.text)
	}
	return nil, p.unexpected()
}

// call parses the argument list of a call of fn; p.pos is at the '('.
func (p *exprParser) call(fn string) (node, error) {
	want := map[string]int{"getenv": 1, "getenv_docker": 2}
	lower := strings.ToLower(fn)
	n, known := want[lower]
	if !known {
		return nil, reason(fmt.Sprintf("function %s() is not evaluated, only getenv() and getenv_docker()", fn))
	}
	p.pos++ // (
	var args []node
	for !p.punct(0, ')') {
		if len(args) > 0 {
			if !p.punct(0, ',') {
				return nil, p.unexpected()
			}
			p.pos++
			if p.punct(0, ')') { // trailing comma
				break
			}
		}
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	p.pos++ // )
	if len(args) != n {
		return nil, reason(fmt.Sprintf("%s() is evaluated with %d argument(s), not %d", lower, n, len(args)))
	}
	return callNode{fn: lower, args: args}, nil
}

// evaluator evaluates the defines and $table_prefix found by scan.
type evaluator struct {
	src   []byte
	opts  Options
	defs  []definition   // every define() with a literal name, in file order
	first map[string]int // index in defs of the first define of each name
	done  map[int]result
	busy  map[int]bool
	// secret marks the definitions, by their first token, that make up
	// DB_PASSWORD: its own and those of the constants it refers to,
	// however indirectly. Errors about them never quote their text.
	secret map[int]bool
}

type result struct {
	v   value
	err error
}

func newEvaluator(src []byte, opts Options, defs []definition) *evaluator {
	ev := &evaluator{src: src, opts: opts.withDefaults(), defs: defs,
		first: make(map[string]int), done: make(map[int]result), busy: make(map[int]bool), secret: make(map[int]bool)}
	for i, d := range defs {
		if _, seen := ev.first[d.name]; !seen {
			ev.first[d.name] = i
		}
	}
	ev.markSecret("DB_PASSWORD")
	return ev
}

// markSecret marks the definition of constant name, and of every constant
// its value refers to, as making up the password.
func (ev *evaluator) markSecret(name string) {
	d, ok := ev.lookup(name)
	if !ok || ev.secret[d.at] {
		return
	}
	ev.secret[d.at] = true
	for _, t := range d.toks {
		if t.kind == tokIdent {
			ev.markSecret(t.text)
		}
	}
}

// lookup returns the first define of name, if any.
func (ev *evaluator) lookup(name string) (definition, bool) {
	i, ok := ev.first[name]
	if !ok {
		return definition{}, false
	}
	return ev.defs[i], true
}

// value evaluates the define or assignment d. usedBy names the setting that
// referenced it, for errors about constants other than the settings.
func (ev *evaluator) value(d definition, usedBy string) (string, error) {
	key := d.at
	if r, ok := ev.done[key]; ok {
		return r.v.String(), r.err
	}
	if ev.busy[key] {
		return "", errorAt(d.line, "%s refers to itself", d.name)
	}
	ev.busy[key] = true
	v, err := ev.evalDefinition(d, usedBy)
	delete(ev.busy, key)
	ev.done[key] = result{v, err}
	return v.String(), err
}

func (ev *evaluator) evalDefinition(d definition, usedBy string) (value, error) {
	who := d.name
	if usedBy != "" {
		who = fmt.Sprintf("%s (used by %s)", d.name, usedBy)
	}
	if len(d.toks) == 0 {
		return value{}, &lineError{line: d.line, err: &unsupportedError{who + " is set by an empty value"}}
	}
	n, err := parseExpr(d.toks)
	var v value
	if err == nil {
		v, err = ev.eval(n, d)
	}
	var r reason
	var q quotedReason
	switch {
	case err == nil:
		return v, nil
	case ev.secret[d.at] && (errors.As(err, &r) || errors.As(err, &q)):
		why := string(r)
		if why == "" {
			why = q.plain
		}
		return value{}, &lineError{line: d.line, err: &unsupportedError{
			fmt.Sprintf("%s is set by an expression the reader does not evaluate (not shown: it makes up the password): %s", who, why)}}
	case errors.As(err, &r) || errors.As(err, &q):
		return value{}, &lineError{line: d.line, err: &unsupportedError{
			fmt.Sprintf("%s is set by an expression the reader does not evaluate: %s (%v)", who, ev.text(d.toks), err)}}
	case errors.As(err, new(*lineError)):
		return value{}, err // about another constant, already positioned
	default:
		return value{}, &lineError{line: d.line, err: fmt.Errorf("%s: %w", who, err)}
	}
}

// text returns the source of toks with runs of white space collapsed,
// shortened to a readable length.
func (ev *evaluator) text(toks []token) string {
	first, last := toks[0], toks[len(toks)-1]
	s := strings.Join(strings.Fields(string(ev.src[first.off:last.off+len(last.text)])), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}

func (ev *evaluator) eval(n node, d definition) (value, error) {
	switch n := n.(type) {
	case strNode:
		return str(n.s), nil
	case concatNode:
		l, err := ev.eval(n.l, d)
		if err != nil {
			return value{}, err
		}
		r, err := ev.eval(n.r, d)
		if err != nil {
			return value{}, err
		}
		if len(l.s)+len(r.s) > maxValue {
			return value{}, reason(fmt.Sprintf("the value is longer than %d bytes", maxValue))
		}
		return str(l.s + r.s), nil
	case elvisNode:
		l, err := ev.eval(n.l, d)
		if err != nil || l.truthy() {
			return l, err
		}
		return ev.eval(n.r, d)
	case coalesceNode:
		l, err := ev.eval(n.l, d)
		if err != nil || l.kind != vNull {
			return l, err
		}
		return ev.eval(n.r, d)
	case constNode:
		c, ok := ev.lookup(n.name)
		if !ok || c.at >= d.at {
			return value{}, reason(fmt.Sprintf("constant %s is not defined earlier in the file", n.name))
		}
		s, err := ev.value(c, d.name)
		return str(s), err
	case superNode:
		key, err := ev.eval(n.key, d)
		if err != nil {
			return value{}, err
		}
		if v, ok := ev.opts.LookupEnv(key.String()); ok {
			return str(v), nil
		}
		return value{kind: vNull}, nil
	case callNode:
		args := make([]string, len(n.args))
		for i, a := range n.args {
			v, err := ev.eval(a, d)
			if err != nil {
				return value{}, err
			}
			args[i] = v.String()
		}
		if n.fn == "getenv" {
			if v, ok := ev.opts.LookupEnv(args[0]); ok {
				return str(v), nil
			}
			return value{kind: vFalse}, nil
		}
		return ev.getenvDocker(args[0], args[1])
	}
	panic(fmt.Sprintf("wpconfig: unknown node %T", n))
}

// getenvDocker is the helper of the official WordPress Docker image's
// wp-config-docker.php:
//
//	function getenv_docker($env, $default) {
//		if ($fileEnv = getenv($env . '_FILE')) {
//			return rtrim(file_get_contents($fileEnv), "\r\n");
//		} else if (($val = getenv($env)) !== false) {
//			return $val;
//		} else {
//			return $default;
//		}
//	}
func (ev *evaluator) getenvDocker(name, def string) (value, error) {
	if path, ok := ev.opts.LookupEnv(name + "_FILE"); ok && str(path).truthy() {
		b, err := ev.opts.ReadFile(path)
		if err != nil {
			return value{}, fmt.Errorf("getenv_docker('%s'): read %s_FILE: %w", name, name, err)
		}
		return str(strings.TrimRight(string(b), "\r\n")), nil
	}
	if v, ok := ev.opts.LookupEnv(name); ok {
		return str(v), nil
	}
	return str(def), nil
}
