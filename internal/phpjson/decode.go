package phpjson

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode parses JSON text with the rules of PHP's json_decode($data, true).
// Objects become *Object (key order kept; a repeated key keeps its first
// position and takes the last value), arrays []any, integers int64 (when the
// literal has no '.', 'e' or 'E' and fits in int64; otherwise float64), other
// numbers float64, strings string, true/false bool and null nil.
//
// Invalid UTF-8, unpaired UTF-16 surrogate escapes, numbers too large for a
// float64 and nesting deeper than 512 are errors.
func Decode(data []byte) (any, error) {
	return decode(data, false)
}

// DecodeObject parses a JSON object. Because PHP cannot tell an empty array
// from an empty object, [] is accepted as an empty object, and a JSON list is
// returned as an object with keys "0".."n-1". Any other top-level value is an
// error.
func DecodeObject(data []byte) (*Object, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *Object:
		return x, nil
	case []any:
		keys := make([]string, len(x))
		for i := range x {
			keys[i] = strconv.Itoa(i)
		}
		return newObject(keys, x), nil
	}
	return nil, fmt.Errorf("phpjson: expected a JSON object, got %s", typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// decode parses data. With resort set, objects whose keys look like an
// integer-keyed Go map serialised by encoding/json (canonical integers in
// bytewise order) are put in numeric order.
func decode(data []byte, resort bool) (any, error) {
	s := decodeScratch.Get().(*scratch)
	d := decoder{data: data, resort: resort, scratch: s}
	defer s.release()
	d.skipWS()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipWS()
	if d.pos < len(d.data) {
		return nil, d.syntaxError("after top-level value")
	}
	return v, nil
}

type decoder struct {
	data   []byte
	pos    int
	depth  int
	resort bool
	*scratch
}

// scratch holds the keys and values of the objects and arrays a decoder
// has open, innermost last: each container is built once, at its exact
// size, when it closes, instead of growing as its members are read.
type scratch struct {
	keys []string
	vals []any
}

// maxPooledScratch is the most members a pooled scratch keeps room for.
const maxPooledScratch = 16 << 10

// decodeScratch are the decoders' scratch stacks.
var decodeScratch = sync.Pool{New: func() any { return new(scratch) }}

// release clears s, so that it holds no decoded value, and pools it
// unless it grew past maxPooledScratch. Members are cleared as their
// container closes; only a decoding that failed leaves some, below len.
func (s *scratch) release() {
	clear(s.keys)
	clear(s.vals)
	if cap(s.keys) > maxPooledScratch || cap(s.vals) > maxPooledScratch {
		return
	}
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	decodeScratch.Put(s)
}

func (d *decoder) skipWS() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) syntaxError(context string) error {
	if d.pos >= len(d.data) {
		return fmt.Errorf("phpjson: unexpected end of JSON input")
	}
	return fmt.Errorf("phpjson: invalid character %s %s at offset %d",
		quoteByte(d.data[d.pos]), context, d.pos)
}

func quoteByte(c byte) string {
	if c >= utf8.RuneSelf {
		return fmt.Sprintf("'\\x%02x'", c)
	}
	return strconv.QuoteRune(rune(c))
}

func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.syntaxError("")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, e, err := d.text()
		switch {
		case err != nil:
			return nil, err
		case e != nil:
			return e.v, nil
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		if d.literal("true") {
			return true, nil
		}
	case c == 'f':
		if d.literal("false") {
			return false, nil
		}
	case c == 'n':
		if d.literal("null") {
			return nil, nil
		}
	}
	return nil, d.syntaxError("looking for beginning of value")
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return errDepth
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	d.skipWS()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return NewObject(), nil
	}
	base := len(d.keys)
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.syntaxError("looking for beginning of object key string")
		}
		k, e, err := d.text()
		if err != nil {
			return nil, err
		}
		if e != nil {
			k = e.s
		}
		d.skipWS()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.syntaxError("after object key")
		}
		d.pos++
		d.skipWS()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
		d.skipWS()
		if d.pos >= len(d.data) {
			return nil, d.syntaxError("")
		}
		if d.data[d.pos] == '}' {
			d.pos++
			break
		}
		if d.data[d.pos] != ',' {
			return nil, d.syntaxError("after object key:value pair")
		}
		d.pos++
		d.skipWS()
	}
	o := d.closeObject(base)
	if d.resort && needsNumericResort(o.keys) {
		o.sortNumeric()
	}
	d.depth--
	return o, nil
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	d.skipWS()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, nil
	}
	base := len(d.vals)
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.vals = append(d.vals, v)
		d.skipWS()
		if d.pos >= len(d.data) {
			return nil, d.syntaxError("")
		}
		if d.data[d.pos] == ']' {
			d.pos++
			break
		}
		if d.data[d.pos] != ',' {
			return nil, d.syntaxError("after array element")
		}
		d.pos++
		d.skipWS()
	}
	l := slices.Clone(d.vals[base:])
	clear(d.vals[base:])
	d.vals = d.vals[:base]
	d.depth--
	return l, nil
}

// closeObject builds the object whose members are the scratch's from
// the key at base on, as Set would one by one (a repeated key keeps its
// first position and takes the last value), and pops them.
func (d *decoder) closeObject(base int) *Object {
	keys, vals := d.keys[base:], d.vals[len(d.vals)-len(d.keys)+base:]
	o := &Object{keys: slices.Clone(keys), vals: slices.Clone(vals)}
	if len(keys) > indexFrom {
		o.idx = make(map[string]int, len(keys))
	}
	for i, k := range o.keys {
		if o.idx != nil {
			if _, dup := o.idx[k]; !dup {
				o.idx[k] = i
				continue
			}
			o.dedup(i)
			break
		}
		if slices.Contains(o.keys[:i], k) {
			o.dedup(i)
			break
		}
	}
	clear(keys)
	clear(vals)
	d.keys = d.keys[:base]
	d.vals = d.vals[:len(d.vals)-len(keys)]
	return o
}

// sortNumeric puts o's members in the numeric order of their keys, all
// of which are canonical integers.
func (o *Object) sortNumeric() {
	order, _ := numericOrder(o.keys)
	keys, vals := make([]string, len(order)), make([]any, len(order))
	for i, j := range order {
		keys[i], vals[i] = o.keys[j], o.vals[j]
	}
	o.keys, o.vals = keys, vals
	o.reindex()
}

// dedup finishes building o, whose keys before i are distinct and whose
// key i repeats one of them: from i on, its members are set one by one
// (a repeated key keeps its first position and takes the last value).
func (o *Object) dedup(i int) {
	keys, vals := slices.Clone(o.keys[i:]), slices.Clone(o.vals[i:])
	clear(o.vals[i:])
	o.keys, o.vals = o.keys[:i], o.vals[:i]
	o.reindex()
	for k, key := range keys {
		o.Set(key, vals[k])
	}
}

// text parses a string literal starting at the opening quote: its
// text, or, for a short string without escapes that the intern table
// keeps, its entry there (and "").
func (d *decoder) text() (string, *internEntry, error) {
	d.pos++ // opening quote
	start := d.pos
	// Fast path: no escapes.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			b := d.data[start:d.pos]
			d.pos++
			if len(b) > 0 && len(b) <= internMaxLen {
				if e := interned(b); e != nil {
					return "", e, nil
				}
			}
			return string(b), nil, nil
		case c == '\\':
			s, err := d.stringSlow(start)
			return s, nil, err
		case c < 0x20:
			return "", nil, d.syntaxError("in string literal")
		case c < utf8.RuneSelf:
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", nil, errUTF8
			}
			d.pos += size
		}
	}
	return "", nil, d.syntaxError("")
}

func (d *decoder) stringSlow(start int) (string, error) {
	buf := make([]byte, 0, d.pos-start+16)
	buf = append(buf, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(buf), nil
		case c == '\\':
			d.pos++
			if d.pos >= len(d.data) {
				return "", d.syntaxError("")
			}
			switch e := d.data[d.pos]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, err := d.unicodeEscape()
				if err != nil {
					return "", err
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return "", d.syntaxError("in string escape code")
			}
			d.pos++
		case c < 0x20:
			return "", d.syntaxError("in string literal")
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", errUTF8
			}
			buf = append(buf, d.data[d.pos:d.pos+size]...)
			d.pos += size
		}
	}
	return "", d.syntaxError("")
}

// unicodeEscape parses the XXXX of \uXXXX (d.pos is at 'u'), and a following
// low surrogate escape when XXXX is a high surrogate. It leaves d.pos after
// the last hex digit consumed.
func (d *decoder) unicodeEscape() (rune, error) {
	r, ok := d.hex4(d.pos + 1)
	if !ok {
		return 0, d.syntaxError("in \\u hexadecimal character escape")
	}
	d.pos += 5
	switch {
	case r >= 0xd800 && r < 0xdc00:
		if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
			if r2, ok := d.hex4(d.pos + 2); ok && r2 >= 0xdc00 && r2 < 0xe000 {
				d.pos += 6
				return utf16.DecodeRune(r, r2), nil
			}
		}
		return 0, fmt.Errorf("phpjson: single unpaired UTF-16 surrogate in unicode escape at offset %d", d.pos-6)
	case r >= 0xdc00 && r < 0xe000:
		return 0, fmt.Errorf("phpjson: single unpaired UTF-16 surrogate in unicode escape at offset %d", d.pos-6)
	}
	return r, nil
}

func (d *decoder) hex4(at int) (rune, bool) {
	if at+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanNumber checks the JSON number grammar from pos and returns the end
// offset and whether the literal is an integer (no fraction or exponent).
func scanNumber(data []byte, pos int) (end int, isInt bool, err error) {
	digits := func() int {
		n := 0
		for pos < len(data) && data[pos] >= '0' && data[pos] <= '9' {
			pos++
			n++
		}
		return n
	}
	isInt = true
	if pos < len(data) && data[pos] == '-' {
		pos++
	}
	switch {
	case pos < len(data) && data[pos] == '0':
		pos++
	case pos < len(data) && data[pos] >= '1' && data[pos] <= '9':
		digits()
	default:
		return pos, false, errNumber
	}
	if pos < len(data) && data[pos] == '.' {
		pos++
		isInt = false
		if digits() == 0 {
			return pos, false, errNumber
		}
	}
	if pos < len(data) && (data[pos] == 'e' || data[pos] == 'E') {
		pos++
		isInt = false
		if pos < len(data) && (data[pos] == '+' || data[pos] == '-') {
			pos++
		}
		if digits() == 0 {
			return pos, false, errNumber
		}
	}
	return pos, isInt, nil
}

var errNumber = fmt.Errorf("phpjson: invalid number")

func (d *decoder) number() (any, error) {
	start := d.pos
	end, isInt, err := scanNumber(d.data, d.pos)
	if err != nil {
		d.pos = end
		return nil, d.syntaxError("in numeric literal")
	}
	d.pos = end
	lit := d.data[start:end]
	if isInt {
		if n, ok := parseInt64(lit); ok {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, fmt.Errorf("phpjson: number %s at offset %d is out of range", lit, start)
	}
	return f, nil
}

// parseInt64 parses a JSON integer literal, reporting false when it does not
// fit in int64 (PHP then decodes it as a float).
func parseInt64(lit []byte) (int64, bool) {
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) <= 18 {
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		if lit[0] == '-' {
			n = -n
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil
}
