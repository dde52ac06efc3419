package sqlstore

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// A batch's multi-row statements (a step's events, its next job, the
// workflows' guarded update) carry dozens of parameters a row. Passed as
// parameters, each is converted by database/sql (a NamedValue each, the
// driver's value check), copied again by the driver and, where the driver
// interpolates parameters on the client (MySQL's default here), written
// into the statement's text with escaping. With Dialect.Literals, the
// NULLs, integers, plain strings and whole-second times among them are
// written into the text at once; the rest stay parameters. The server
// reads the same values: the driver writes the same literals, but for
// double quotes, which it escapes and which need no escaping between
// single quotes.

// literals returns q with the arguments that need no escaping written
// into it as literals, and the arguments left, when the dialect asks for
// it (Dialect.Literals); else q and args unchanged.
func (t *txn) literals(q string, args []any) (string, []any) {
	if !t.s.D.Literals {
		return q, args
	}
	return inlineLiterals(q, args)
}

// inlineLiterals replaces each placeholder of q whose argument is nil,
// an int or int64, a plain string (plainLiteral) or a whole-second UTC
// time (appendSecond) by its literal: NULL, the decimal number, the
// string or time in single quotes. Every '?' of q is a placeholder, as
// the driver counts them; q is returned unchanged when their number is
// not len(args). The arguments left keep their order.
func inlineLiterals(q string, args []any) (string, []any) {
	if len(args) == 0 || !slices.ContainsFunc(args, hasLiteral) || strings.Count(q, "?") != len(args) {
		return q, args
	}
	size := len(q)
	for _, a := range args {
		if s, ok := a.(string); ok {
			size += len(s) + 1
		} else {
			size += 8
		}
	}
	var b strings.Builder
	b.Grow(size)
	var kept []any
	var num [20]byte
	for _, a := range args {
		k := strings.IndexByte(q, '?')
		b.WriteString(q[:k])
		q = q[k+1:]
		if writeLiteral(&b, num[:0], a) {
			continue
		}
		b.WriteByte('?')
		kept = append(kept, a)
	}
	b.WriteString(q)
	return b.String(), kept
}

// writeLiteral writes a's literal to b, by inlineLiterals' rules, and
// reports whether a has one; num is scratch space.
func writeLiteral(b *strings.Builder, num []byte, a any) bool {
	switch v := a.(type) {
	case nil:
		b.WriteString("NULL")
	case int64:
		b.Write(strconv.AppendInt(num, v, 10))
	case int:
		b.Write(strconv.AppendInt(num, int64(v), 10))
	case string:
		return writePlainString(b, v)
	case time.Time:
		return writeSecond(b, num, v)
	default:
		return false
	}
	return true
}

// writePlainString writes s between single quotes when it is a plain
// literal (plainLiteral) and reports whether it did.
func writePlainString(b *strings.Builder, s string) bool {
	if !plainLiteral(s) {
		return false
	}
	b.WriteByte('\'')
	b.WriteString(s)
	b.WriteByte('\'')
	return true
}

// writePlainBytes is writePlainString for a text column's bytes.
func writePlainBytes(b *strings.Builder, s []byte) bool {
	if !plainLiteral(s) {
		return false
	}
	b.WriteByte('\'')
	b.Write(s)
	b.WriteByte('\'')
	return true
}

// writeSecond writes t between single quotes when appendSecond writes it
// and reports whether it did; num is scratch space.
func writeSecond(b *strings.Builder, num []byte, t time.Time) bool {
	lit, ok := appendSecond(num, t)
	if !ok {
		return false
	}
	b.WriteByte('\'')
	b.Write(lit)
	b.WriteByte('\'')
	return true
}

// hasLiteral reports whether inlineLiterals writes a as a literal.
func hasLiteral(a any) bool {
	switch v := a.(type) {
	case nil, int, int64:
		return true
	case string:
		return plainLiteral(v)
	case time.Time:
		return secondLiteral(v)
	}
	return false
}

// secondLiteral reports whether appendSecond writes t.
func secondLiteral(t time.Time) bool {
	return t.Location() == time.UTC && t.Nanosecond() == 0 && t.Year() >= 1 && t.Year() <= 9999
}

// appendSecond appends t as the driver writes a time it interpolates
// (the store's connections read and write UTC): "2006-01-02 15:04:05",
// or "2006-01-02" at midnight. ok is false, and nothing is appended, for
// a time that is not UTC, has a fraction of a second (which the driver
// may truncate, timeTruncate), or has a year outside 1 to 9999 (which it
// refuses).
func appendSecond(buf []byte, t time.Time) ([]byte, bool) {
	if !secondLiteral(t) {
		return buf, false
	}
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	buf = appendDigits(buf, year, 4)
	buf = append(buf, '-')
	buf = appendDigits(buf, int(month), 2)
	buf = append(buf, '-')
	buf = appendDigits(buf, day, 2)
	if hour == 0 && minute == 0 && sec == 0 {
		return buf, true
	}
	buf = append(buf, ' ')
	buf = appendDigits(buf, hour, 2)
	buf = append(buf, ':')
	buf = appendDigits(buf, minute, 2)
	buf = append(buf, ':')
	buf = appendDigits(buf, sec, 2)
	return buf, true
}

// appendDigits appends v (non-negative) as width decimal digits.
func appendDigits(buf []byte, v, width int) []byte {
	start := len(buf)
	buf = append(buf, "0000"[:width]...)
	for i := len(buf) - 1; i >= start && v > 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return buf
}

// plainLiteral reports whether s reads the same between single quotes
// under every SQL mode and character set: printable ASCII without a
// quote or backslash (which NO_BACKSLASH_ESCAPES reads differently), and
// without '?', which the driver would count as a placeholder.
func plainLiteral[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '\'' || c == '\\' || c == '?' {
			return false
		}
	}
	return true
}

// rowValues writes the values of a multi-row INSERT's rows into its
// text: as literals by inlineLiterals' rules where the dialect asks for
// them (Dialect.Literals), else, and for the values that have none, as
// a placeholder and an argument, the argument the store passes without
// literals. Written this way, a value that becomes a literal is never
// boxed into an argument, nor a JSON column copied into a string.
type rowValues struct {
	stmtText
	t     *txn
	first bool
	texts sharedTexts
	// cols holds each column's values where the dialect passes arrays
	// (Dialect.Arrays, arrays.go); col is the next value's column.
	cols [][]any
	col  int
}

// stmtText is a statement's text and arguments as they are written: a
// value with a literal (inlineLiterals' rules, when literal is set) goes
// into the text, any other in as a placeholder and an argument.
type stmtText struct {
	b       strings.Builder
	args    []any
	literal bool
	num     [24]byte
}

// placeholder writes a placeholder for a.
func (s *stmtText) placeholder(a any) {
	s.b.WriteByte('?')
	s.args = append(s.args, a)
}

// put writes a: its literal, or a placeholder and its argument. A []byte
// is a text column's value, passed as a string.
func (s *stmtText) put(a any) {
	if b, ok := a.([]byte); ok {
		if s.literal && writePlainBytes(&s.b, b) {
			return
		}
		a = string(b)
	}
	if s.literal && writeLiteral(&s.b, s.num[:0], a) {
		return
	}
	s.placeholder(a)
}

// newRowValues starts a statement of rows rows with head, which ends in
// "VALUES "; types are the columns' types, for a dialect that passes
// arrays (Dialect.Arrays), and hint is the text's expected size.
func newRowValues(t *txn, head string, types []string, rows, hint int) *rowValues {
	if t.s.D.Arrays {
		return newRowArrays(t, head, types, rows)
	}
	v := &rowValues{t: t, stmtText: stmtText{literal: t.s.D.Literals}}
	v.b.Grow(len(head) + hint)
	v.b.WriteString(head)
	return v
}

// row starts the next row; end closes it.
func (v *rowValues) row(i int) {
	if v.cols != nil {
		v.col = 0
		return
	}
	if i > 0 {
		v.b.WriteByte(',')
	}
	v.b.WriteByte('(')
	v.first = true
}

func (v *rowValues) end() {
	if v.cols == nil {
		v.b.WriteByte(')')
	}
}

// statement returns the statement's text and arguments.
func (v *rowValues) statement() (string, []any) {
	if v.cols == nil {
		return v.b.String(), v.args
	}
	args := make([]any, len(v.cols))
	for i, c := range v.cols {
		args[i] = c
	}
	return v.b.String(), args
}

// next writes the separator before a value.
func (v *rowValues) next() {
	if !v.first {
		v.b.WriteByte(',')
	}
	v.first = false
}

// arg writes a placeholder for a (or adds a to its column's array).
func (v *rowValues) arg(a any) {
	if v.cols != nil {
		v.cols[v.col] = append(v.cols[v.col], a)
		v.col++
		return
	}
	v.next()
	v.placeholder(a)
}

// null writes NULL.
func (v *rowValues) null() {
	if !v.literal {
		v.arg(nil)
		return
	}
	v.next()
	v.b.WriteString("NULL")
}

// int writes n.
func (v *rowValues) int(n int64) {
	if !v.literal {
		v.arg(n)
		return
	}
	v.next()
	v.b.Write(strconv.AppendInt(v.num[:0], n, 10))
}

// smallInt writes n, passed as an int without literals.
func (v *rowValues) smallInt(n int) {
	if !v.literal {
		v.arg(n)
		return
	}
	v.int(int64(n))
}

// id writes an id, NULL for 0 (nullID).
func (v *rowValues) id(n int64) {
	if n == 0 {
		v.null()
		return
	}
	v.int(n)
}

// intp and int64p write *p, NULL for nil (nullIntp, nullInt64p).
func (v *rowValues) intp(p *int) {
	if p == nil {
		v.null()
		return
	}
	v.smallInt(*p)
}

func (v *rowValues) int64p(p *int64) {
	if p == nil {
		v.null()
		return
	}
	v.int(*p)
}

// str writes s.
func (v *rowValues) str(s string) {
	if !v.literal || !plainLiteral(s) {
		v.arg(s)
		return
	}
	v.next()
	writePlainString(&v.b, s)
}

// nullStr writes s, NULL for "" (nullStr).
func (v *rowValues) nullStr(s string) {
	if s == "" {
		v.null()
		return
	}
	v.str(s)
}

// text writes a JSON or text column, NULL for nil (nullText); its
// argument, when it needs one, is converted once for the statement
// (sharedTexts).
func (v *rowValues) text(b []byte) {
	switch {
	case b == nil:
		v.null()
	case v.literal && plainLiteral(b):
		v.next()
		writePlainBytes(&v.b, b)
	default:
		v.arg(v.texts.arg(b))
	}
}

// sec writes a time of a second-precision column, NULL for the zero
// time (txn.sec).
func (v *rowValues) sec(at time.Time) { v.time(at, false) }

// time writes at, truncated to the column's precision (microseconds when
// micro, else seconds), as a literal when appendSecond writes it as the
// driver would, else as the argument txn.frac or txn.sec makes of it;
// NULL for the zero time.
func (v *rowValues) time(at time.Time, micro bool) {
	precision := time.Second
	if micro {
		precision = time.Microsecond
	}
	if at.IsZero() {
		v.null()
		return
	}
	if lit := at.UTC().Truncate(precision); v.literal && secondLiteral(lit) {
		v.next()
		writeSecond(&v.b, v.num[:0], lit)
		return
	}
	if micro {
		v.arg(v.t.frac(at))
		return
	}
	v.arg(v.t.sec(at))
}

// bytes writes a text column that is never NULL: nil is the empty string.
func (v *rowValues) bytes(b []byte) {
	if !v.literal || !plainLiteral(b) {
		v.arg(string(b))
		return
	}
	v.next()
	writePlainBytes(&v.b, b)
}

// frac writes a time of a microsecond-precision column, NULL for the
// zero time (txn.frac): a literal only when it has no fraction of a
// second, which appendSecond writes as the driver would.
func (v *rowValues) frac(at time.Time) { v.time(at, true) }
