package phpjson

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is PHP's default nesting limit for json_encode and json_decode.
const maxDepth = 512

var (
	errUTF8  = errors.New("phpjson: malformed UTF-8 characters, possibly incorrectly encoded")
	errInf   = errors.New("phpjson: Inf and NaN cannot be JSON encoded")
	errDepth = errors.New("phpjson: maximum stack depth exceeded")
)

// Marshal encodes v exactly like PHP's json_encode($v, JSON_THROW_ON_ERROR).
//
// Accepted values are those of the generic tree (*Object, []any,
// map[string]any, string, int64, float64, bool, nil), every Go integer and
// float type, json.Number, and anything else Normalize accepts (structs,
// typed maps and slices, json.Marshaler, ...). Empty containers, including
// nil slices and maps, are written as []; an *Object or map whose keys are
// "0".."n-1" is written as a list. Map keys are sorted as in ObjectFromMap.
// Invalid UTF-8, NaN, Inf and nesting deeper than 512 are errors.
func Marshal(v any) ([]byte, error) {
	e, bp := pooledEncoder()
	return e.finish(bp, e.value(v))
}

// pooledEncoder returns an encoder writing into a pooled scratch buffer,
// which finish copies out and returns to the pool.
func pooledEncoder() (encoder, *[]byte) {
	bp := encodeBufs.Get().(*[]byte)
	return encoder{buf: (*bp)[:0]}, bp
}

// finish returns what e wrote, unless err is set, in one allocation of
// the exact size, however often the scratch buffer had to grow, and puts
// the buffer back in the pool unless it grew past maxPooledBuf.
func (e *encoder) finish(bp *[]byte, err error) ([]byte, error) {
	var out []byte
	if err == nil {
		out = append(make([]byte, 0, len(e.buf)), e.buf...)
	}
	if cap(e.buf) <= maxPooledBuf {
		*bp = e.buf[:0]
		encodeBufs.Put(bp)
	}
	return out, err
}

// maxPooledBuf is the largest scratch buffer Marshal keeps for reuse: a
// rare huge encoding does not pin its buffer.
const maxPooledBuf = 64 << 10

// encodeBufs are Marshal's scratch buffers.
var encodeBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

type encoder struct {
	buf   []byte
	depth int
	// rawSlash writes "/" unescaped (PHP's JSON_UNESCAPED_SLASHES).
	rawSlash bool
	// memo holds the remembered encodings of kept objects (memo.go).
	memo      map[*Object][]byte
	memoLists map[*any]memoList
}

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		return e.string(x)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case float64:
		return e.float(x, 64)
	case float32:
		return e.float(float64(x), 32)
	case json.Number:
		return e.number(x)
	case *Object:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.object(x)
	case []any:
		return e.list(x)
	case map[string]any:
		return e.stringMap(x)
	default:
		return e.other(v)
	}
	return nil
}

// other handles values outside the fast paths: named basic types directly,
// everything else through Normalize.
func (e *encoder) other(v any) error {
	rv := reflect.ValueOf(v)
	if !hasCustomMarshaler(rv.Type()) {
		switch rv.Kind() {
		case reflect.String:
			return e.string(rv.String())
		case reflect.Bool:
			e.buf = strconv.AppendBool(e.buf, rv.Bool())
			return nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			e.buf = strconv.AppendInt(e.buf, rv.Int(), 10)
			return nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			e.buf = strconv.AppendUint(e.buf, rv.Uint(), 10)
			return nil
		case reflect.Float32:
			return e.float(rv.Float(), 32)
		case reflect.Float64:
			return e.float(rv.Float(), 64)
		}
	}
	n, _, err := normalize(v, e.depth)
	if err != nil {
		return err
	}
	return e.value(n)
}

func (e *encoder) enter() error {
	e.depth++
	if e.depth > maxDepth {
		return errDepth
	}
	return nil
}

func (e *encoder) object(o *Object) error {
	if e.memo != nil {
		if kept, err := e.memoObject(o); kept || err != nil {
			return err
		}
	}
	return e.plainObject(o)
}

func (e *encoder) plainObject(o *Object) error {
	if err := e.enter(); err != nil {
		return err
	}
	if len(o.keys) == 0 {
		e.buf = append(e.buf, "[]"...)
	} else if isListKeys(o.keys) {
		e.buf = append(e.buf, '[')
		for i := range o.keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(o.vals[i]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	} else {
		e.buf = append(e.buf, '{')
		for i, k := range o.keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.string(k); err != nil {
				return err
			}
			e.buf = append(e.buf, ':')
			if err := e.value(o.vals[i]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	}
	e.depth--
	return nil
}

func (e *encoder) list(l []any) error {
	if e.memoLists != nil {
		if kept, err := e.memoList(l); kept || err != nil {
			return err
		}
	}
	return e.plainList(l)
}

func (e *encoder) plainList(l []any) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	for i, v := range l {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(v); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	e.depth--
	return nil
}

func (e *encoder) stringMap(m map[string]any) error {
	return e.object(objectOfMap(m, nil))
}

const hexDigits = "0123456789abcdef"

func (e *encoder) appendU(r rune) {
	e.buf = append(e.buf, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// string writes s as PHP does without JSON_UNESCAPED_UNICODE, and without
// JSON_UNESCAPED_SLASHES unless rawSlash is set.
func (e *encoder) string(s string) error {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (c != '/' || e.rawSlash) {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\', '/':
				e.buf = append(e.buf, '\\', c)
			case '\b':
				e.buf = append(e.buf, '\\', 'b')
			case '\f':
				e.buf = append(e.buf, '\\', 'f')
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.appendU(rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return errUTF8
		}
		e.buf = append(e.buf, s[start:i]...)
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			e.appendU(r1)
			e.appendU(r2)
		} else {
			e.appendU(r)
		}
		i += size
		start = i
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
	return nil
}

// float writes f the way PHP's php_gcvt does with serialize_precision=-1:
// the shortest digits that round-trip, in fixed notation when the decimal
// point position decpt is in [-3, 17], otherwise as d.ddde±x.
// bits is 32 for float32 values, whose shortest digits are taken at float32
// precision (as encoding/json does).
func (e *encoder) float(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errInf
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	if s[0] == '-' {
		e.buf = append(e.buf, '-')
		s = s[1:]
	}
	// s is "d[.ddd]e±xx".
	epos := 0
	for s[epos] != 'e' {
		epos++
	}
	exp, _ := strconv.Atoi(string(s[epos+1:]))
	var dbuf [24]byte
	digits := append(dbuf[:0], s[0])
	if epos > 1 {
		digits = append(digits, s[2:epos]...)
	}
	decpt := exp + 1

	switch {
	case decpt < -3 || decpt > 17:
		e.buf = append(e.buf, digits[0], '.')
		if len(digits) == 1 {
			e.buf = append(e.buf, '0')
		} else {
			e.buf = append(e.buf, digits[1:]...)
		}
		e.buf = append(e.buf, 'e')
		if exp < 0 {
			e.buf = append(e.buf, '-')
			exp = -exp
		} else {
			e.buf = append(e.buf, '+')
		}
		e.buf = strconv.AppendInt(e.buf, int64(exp), 10)
	case decpt <= 0:
		e.buf = append(e.buf, '0', '.')
		for range -decpt {
			e.buf = append(e.buf, '0')
		}
		e.buf = append(e.buf, digits...)
	case len(digits) <= decpt:
		e.buf = append(e.buf, digits...)
		for range decpt - len(digits) {
			e.buf = append(e.buf, '0')
		}
	default:
		e.buf = append(e.buf, digits[:decpt]...)
		e.buf = append(e.buf, '.')
		e.buf = append(e.buf, digits[decpt:]...)
	}
	return nil
}

// number writes a json.Number: integer literals as they are (an int64 value
// in canonical form, so "-0" becomes 0 as in PHP), anything else by the float
// rule.
func (e *encoder) number(n json.Number) error {
	s := string(n)
	end, isInt, err := scanNumber([]byte(s), 0)
	if err != nil || end != len(s) {
		return errors.New("phpjson: invalid number literal " + strconv.Quote(s))
	}
	if isInt {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			e.buf = strconv.AppendInt(e.buf, i, 10)
		} else {
			e.buf = append(e.buf, s...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("phpjson: number " + s + " is out of range")
	}
	return e.float(f, 64)
}

// MarshalFilter encodes o as Marshal(o.Filter(keep)) does, without
// building the filtered copy.
func MarshalFilter(o *Object, keep func(key string) bool) ([]byte, error) {
	e, bp := pooledEncoder()
	return e.finish(bp, e.filteredObject(o, keep))
}

// filteredObject writes the keys of o that keep accepts, as plainObject
// writes an object holding only those: as a list when they are "0" to
// "n-1" in order, as [] when there is none.
func (e *encoder) filteredObject(o *Object, keep func(key string) bool) error {
	if err := e.enter(); err != nil {
		return err
	}
	n, list := 0, true
	if o != nil {
		for _, k := range o.keys {
			if keep(k) {
				list = list && isIndex(k, n)
				n++
			}
		}
	}
	if n == 0 {
		e.buf = append(e.buf, "[]"...)
		e.depth--
		return nil
	}
	open, end := byte('{'), byte('}')
	if list {
		open, end = '[', ']'
	}
	e.buf = append(e.buf, open)
	first := true
	for i, k := range o.keys {
		if !keep(k) {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		if !list {
			if err := e.string(k); err != nil {
				return err
			}
			e.buf = append(e.buf, ':')
		}
		if err := e.value(o.vals[i]); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, end)
	e.depth--
	return nil
}
