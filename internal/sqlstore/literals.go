package sqlstore

import (
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
	if len(args) == 0 || strings.Count(q, "?") != len(args) {
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
		switch v := a.(type) {
		case nil:
			b.WriteString("NULL")
			continue
		case int64:
			b.Write(strconv.AppendInt(num[:0], v, 10))
			continue
		case int:
			b.Write(strconv.AppendInt(num[:0], int64(v), 10))
			continue
		case string:
			if plainLiteral(v) {
				b.WriteByte('\'')
				b.WriteString(v)
				b.WriteByte('\'')
				continue
			}
		case time.Time:
			if lit, ok := appendSecond(num[:0], v); ok {
				b.WriteByte('\'')
				b.Write(lit)
				b.WriteByte('\'')
				continue
			}
		}
		b.WriteByte('?')
		kept = append(kept, a)
	}
	b.WriteString(q)
	return b.String(), kept
}

// appendSecond appends t as the driver writes a time it interpolates
// (the store's connections read and write UTC): "2006-01-02 15:04:05",
// or "2006-01-02" at midnight. ok is false, and nothing is appended, for
// a time that is not UTC, has a fraction of a second (which the driver
// may truncate, timeTruncate), or has a year outside 1 to 9999 (which it
// refuses).
func appendSecond(buf []byte, t time.Time) ([]byte, bool) {
	if t.Location() != time.UTC || t.Nanosecond() != 0 || t.Year() < 1 || t.Year() > 9999 {
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
	for d := width - 1; d >= 0; d-- {
		p := 1
		for range d {
			p *= 10
		}
		buf = append(buf, byte('0'+v/p%10))
	}
	return buf
}

// plainLiteral reports whether s reads the same between single quotes
// under every SQL mode and character set: printable ASCII without a
// quote or backslash (which NO_BACKSLASH_ESCAPES reads differently), and
// without '?', which the driver would count as a placeholder.
func plainLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '\'' || c == '\\' || c == '?' {
			return false
		}
	}
	return true
}
