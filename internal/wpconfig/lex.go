package wpconfig

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokenKind classifies the PHP tokens the parser cares about. Everything the
// parser does not need to tell apart (numbers, operators, casts, heredocs)
// still becomes a token, so argument lists can be delimited correctly.
type tokenKind int

const (
	tokIdent  tokenKind = iota // a name such as define, getenv, true
	tokVar                     // a variable such as $table_prefix (text includes the '$')
	tokString                  // a quoted string without interpolation; value holds the decoded bytes
	tokInterp                  // a double-quoted string that interpolates variables
	tokPunct                   // a single punctuation character
	tokOther                   // numbers, heredocs, backtick strings and anything else
)

// token is one lexical element of PHP source.
type token struct {
	kind  tokenKind
	text  string // source text (for tokString the raw text including quotes)
	value string // decoded value, for tokString only
	line  int    // 1-based line where the token starts
	off   int    // byte offset of the token in the source
}

// lexer splits PHP source into tokens. It understands just enough PHP to
// skip inline HTML, comments, strings and heredocs correctly; it does not
// validate syntax beyond unterminated strings and comments.
type lexer struct {
	src  []byte
	pos  int
	line int
	toks []token
}

// lex returns the tokens of the PHP code in src. Text outside <?php ... ?>
// tags is ignored, as PHP echoes it instead of running it.
func lex(src []byte) ([]token, error) {
	l := &lexer{src: src, line: 1}
	for l.pos < len(l.src) {
		l.skipHTML()
		if err := l.lexCode(); err != nil {
			return nil, err
		}
	}
	return l.toks, nil
}

// advance moves past n bytes, counting newlines.
func (l *lexer) advance(n int) {
	end := min(l.pos+n, len(l.src))
	for _, c := range l.src[l.pos:end] {
		if c == '\n' {
			l.line++
		}
	}
	l.pos = end
}

func (l *lexer) hasPrefix(s string) bool {
	return bytes.HasPrefix(l.src[l.pos:], []byte(s))
}

func (l *lexer) hasPrefixFold(s string) bool {
	end := l.pos + len(s)
	return end <= len(l.src) && bytes.EqualFold(l.src[l.pos:end], []byte(s))
}

// skipHTML skips inline HTML up to and including the next PHP open tag
// (<?php, <?= or the short tag <?).
func (l *lexer) skipHTML() {
	for l.pos < len(l.src) {
		if l.src[l.pos] == '<' && l.hasPrefix("<?") {
			switch {
			case l.hasPrefixFold("<?php"):
				l.advance(len("<?php"))
			case l.hasPrefix("<?="):
				l.advance(len("<?="))
			default:
				l.advance(len("<?"))
			}
			return
		}
		l.advance(1)
	}
}

// lexCode tokenizes PHP code until a closing ?> tag or the end of input.
func (l *lexer) lexCode() error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		start := l.line
		switch {
		case c == '?' && l.hasPrefix("?>"):
			// A closing tag also ends the statement before it.
			l.toks = append(l.toks, token{kind: tokPunct, text: ";", line: start, off: l.pos})
			l.advance(2)
			return nil
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance(1)
		case c == '#' && !l.hasPrefix("#["), c == '/' && l.hasPrefix("//"):
			l.skipLineComment()
		case c == '/' && l.hasPrefix("/*"):
			end := bytes.Index(l.src[l.pos+2:], []byte("*/"))
			if end < 0 {
				return errorAt(start, "unterminated /* comment")
			}
			l.advance(2 + end + 2)
		case c == '\'':
			if err := l.lexSingleQuoted(); err != nil {
				return err
			}
		case c == '"':
			if err := l.lexDoubleQuoted(); err != nil {
				return err
			}
		case c == '`':
			if err := l.lexBacktick(); err != nil {
				return err
			}
		case c == '<' && l.hasPrefix("<<<"):
			if err := l.lexHeredoc(); err != nil {
				return err
			}
		case c == '$' && l.pos+1 < len(l.src) && isIdentStart(l.src[l.pos+1]):
			n := 1 + identLen(l.src[l.pos+1:])
			l.emit(tokVar, n, start)
		case isIdentStart(c):
			l.emit(tokIdent, identLen(l.src[l.pos:]), start)
		case c >= '0' && c <= '9':
			n := 0
			for l.pos+n < len(l.src) && (isIdentByte(l.src[l.pos+n]) || l.src[l.pos+n] == '.') {
				n++
			}
			l.emit(tokOther, n, start)
		default:
			l.emit(tokPunct, 1, start)
		}
	}
	return nil
}

func (l *lexer) emit(kind tokenKind, n int, line int) {
	text := string(l.src[l.pos : l.pos+n])
	l.toks = append(l.toks, token{kind: kind, text: text, line: line, off: l.pos})
	l.advance(n)
}

// skipLineComment skips a // or # comment. As in PHP, the comment ends at the
// end of the line or just before a ?> closing tag.
func (l *lexer) skipLineComment() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == '\n' || (c == '?' && l.hasPrefix("?>")) {
			return
		}
		l.advance(1)
	}
}

// lexSingleQuoted reads a '...' string. PHP unescapes only \' and \\ in
// single-quoted strings; every other backslash is kept as is.
func (l *lexer) lexSingleQuoted() error {
	start, line := l.pos, l.line
	var b strings.Builder
	i := l.pos + 1
	for i < len(l.src) {
		c := l.src[i]
		switch {
		case c == '\\' && i+1 < len(l.src) && (l.src[i+1] == '\'' || l.src[i+1] == '\\'):
			b.WriteByte(l.src[i+1])
			i += 2
		case c == '\'':
			l.advance(i + 1 - start)
			l.toks = append(l.toks, token{kind: tokString, text: string(l.src[start : i+1]), value: b.String(), line: line, off: start})
			return nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	return errorAt(line, "unterminated single-quoted string")
}

// lexDoubleQuoted reads a "..." string and decodes PHP's double-quoted escape
// sequences. A string that interpolates variables ($name, {$expr}, ${expr})
// becomes a tokInterp token, because its value is only known at run time.
func (l *lexer) lexDoubleQuoted() error {
	start, line := l.pos, l.line
	var b strings.Builder
	interp := false
	i := l.pos + 1
	for i < len(l.src) {
		c := l.src[i]
		switch {
		case c == '"':
			l.advance(i + 1 - start)
			kind := tokString
			if interp {
				kind = tokInterp
			}
			l.toks = append(l.toks, token{kind: kind, text: string(l.src[start : i+1]), value: b.String(), line: line, off: start})
			return nil
		case c == '\\' && i+1 < len(l.src):
			n := decodeEscape(l.src[i:], &b)
			i += n
		case c == '$' && i+1 < len(l.src) && isIdentStart(l.src[i+1]):
			interp = true
			b.WriteByte(c)
			i++
		case (c == '{' && i+1 < len(l.src) && l.src[i+1] == '$') ||
			(c == '$' && i+1 < len(l.src) && l.src[i+1] == '{'):
			interp = true
			brace := i
			if c == '$' {
				brace = i + 1
			}
			end, err := skipInterpolation(l.src, brace, line)
			if err != nil {
				return err
			}
			i = end
		default:
			b.WriteByte(c)
			i++
		}
	}
	return errorAt(line, "unterminated double-quoted string")
}

// skipInterpolation returns the index just past the '}' that closes the
// {$...} or ${...} interpolation whose opening brace is at src[i]. Strings
// nested inside the expression are skipped so their braces do not count.
func skipInterpolation(src []byte, i int, line int) (int, error) {
	depth := 0
	for ; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '\'', '"':
			q := src[i]
			for i++; i < len(src) && src[i] != q; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		}
	}
	return 0, errorAt(line, "unterminated interpolation in double-quoted string")
}

// decodeEscape decodes the PHP double-quoted escape sequence at the start of s
// (s[0] is the backslash), writes the result to b and returns the number of
// bytes consumed. Unknown escapes are kept verbatim, backslash included.
func decodeEscape(s []byte, b *strings.Builder) int {
	switch s[1] {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case 'v':
		b.WriteByte('\v')
	case 'e':
		b.WriteByte(0x1b)
	case 'f':
		b.WriteByte('\f')
	case '\\', '$', '"':
		b.WriteByte(s[1])
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n := 1
		for n < 3 && 1+n < len(s) && s[1+n] >= '0' && s[1+n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(string(s[1:1+n]), 8, 16)
		b.WriteByte(byte(v)) // PHP wraps octal values above \377
		return 1 + n
	case 'x':
		n := 0
		for n < 2 && 2+n < len(s) && isHex(s[2+n]) {
			n++
		}
		if n == 0 {
			b.Write(s[:2])
			return 2
		}
		v, _ := strconv.ParseUint(string(s[2:2+n]), 16, 8)
		b.WriteByte(byte(v))
		return 2 + n
	case 'u':
		if len(s) > 2 && s[2] == '{' {
			if end := bytes.IndexByte(s[3:], '}'); end > 0 {
				if v, err := strconv.ParseUint(string(s[3:3+end]), 16, 32); err == nil && utf8.ValidRune(rune(v)) {
					b.WriteRune(rune(v))
					return 3 + end + 1
				}
			}
		}
		b.Write(s[:2])
	default:
		b.Write(s[:2])
	}
	return 2
}

// lexBacktick reads a `...` shell-execution string as an opaque token.
func (l *lexer) lexBacktick() error {
	start, line := l.pos, l.line
	for i := l.pos + 1; i < len(l.src); i++ {
		switch l.src[i] {
		case '\\':
			i++
		case '`':
			l.emit(tokOther, i+1-start, line)
			return nil
		}
	}
	return errorAt(line, "unterminated backtick string")
}

// lexHeredoc reads a <<<ID heredoc or <<<'ID' nowdoc as an opaque token. The
// closing identifier may be indented (PHP 7.3+) and followed by code on the
// same line.
func (l *lexer) lexHeredoc() error {
	start, line := l.pos, l.line
	i := l.pos + 3
	for i < len(l.src) && (l.src[i] == ' ' || l.src[i] == '\t') {
		i++
	}
	quote := byte(0)
	if i < len(l.src) && (l.src[i] == '\'' || l.src[i] == '"') {
		quote = l.src[i]
		i++
	}
	n := identLen(l.src[i:])
	if n == 0 {
		// Not a heredoc after all: treat "<" as punctuation.
		l.emit(tokPunct, 1, line)
		return nil
	}
	id := string(l.src[i : i+n])
	i += n
	if quote != 0 {
		if i >= len(l.src) || l.src[i] != quote {
			return errorAt(line, "malformed heredoc label")
		}
		i++
	}
	nl := bytes.IndexByte(l.src[i:], '\n')
	if nl < 0 {
		return errorAt(line, "unterminated heredoc")
	}
	i += nl + 1
	for i < len(l.src) {
		j := i
		for j < len(l.src) && (l.src[j] == ' ' || l.src[j] == '\t') {
			j++
		}
		if bytes.HasPrefix(l.src[j:], []byte(id)) && (j+len(id) == len(l.src) || !isIdentByte(l.src[j+len(id)])) {
			l.emit(tokOther, j+len(id)-start, line)
			return nil
		}
		nl := bytes.IndexByte(l.src[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	return errorAt(line, "unterminated heredoc %s", id)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentByte(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

func identLen(s []byte) int {
	if len(s) == 0 || !isIdentStart(s[0]) {
		return 0
	}
	n := 1
	for n < len(s) && isIdentByte(s[n]) {
		n++
	}
	return n
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
