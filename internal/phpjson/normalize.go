package phpjson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Normalize converts an arbitrary Go value into the generic tree that Decode
// produces: *Object, []any, string, int64, float64, bool and nil.
//
// Values already in that form pass through unchanged (a container is copied
// only when something inside it has to be converted). Other integer types
// become int64 (unsigned values above math.MaxInt64 become float64, as PHP
// would read them), float32 becomes the float64 with the same shortest
// digits, json.Number becomes int64 or float64, maps with string or integer
// keys become *Object with keys sorted as in ObjectFromMap, and slices and
// arrays become []any (a nil slice or map becomes an empty container).
//
// Structs, json.Marshaler and encoding.TextMarshaler values, byte slices and
// maps with TextMarshaler keys are encoded with encoding/json and decoded
// again, which keeps struct field order and applies the usual json struct
// tags. Maps nested inside such values are ordered numerically when all their
// keys are integers, matching the rule for maps elsewhere. Strings inside
// them are checked for valid UTF-8 first, so that invalid input is an error
// here as it is in PHP rather than being replaced with U+FFFD.
func Normalize(v any) (any, error) {
	n, _, err := normalize(v, 0)
	return n, err
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func hasCustomMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// normalize returns the generic form of v and whether it differs from v.
// depth counts enclosing containers, to stop on cycles.
func normalize(v any, depth int) (any, bool, error) {
	if depth > maxDepth {
		return nil, false, errDepth
	}
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return v, false, nil
	case int:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case uint:
		return fromUint(uint64(x)), true, nil
	case uint64:
		return fromUint(x), true, nil
	case uint32:
		return int64(x), true, nil
	case uint16:
		return int64(x), true, nil
	case uint8:
		return int64(x), true, nil
	case float32:
		return fromFloat32(x), true, nil
	case json.Number:
		n, err := fromNumber(x)
		return n, true, err
	case *Object:
		if x == nil {
			return nil, false, nil
		}
		return normalizeObject(x, depth)
	case Object:
		n, _, err := normalizeObject(x.Clone(), depth)
		return n, true, err
	case []any:
		return normalizeList(x, depth)
	case map[string]any:
		o, err := normalizeMap(reflect.ValueOf(x), depth)
		return o, true, err
	case json.RawMessage:
		if x == nil {
			return nil, true, nil
		}
		n, err := decode(x, false)
		return n, true, err
	}
	n, err := normalizeReflect(reflect.ValueOf(v), depth)
	return n, true, err
}

func fromUint(u uint64) any {
	if u > math.MaxInt64 {
		return float64(u)
	}
	return int64(u)
}

func fromFloat32(f float32) float64 {
	g := float64(f)
	if math.IsNaN(g) || math.IsInf(g, 0) {
		return g
	}
	g, _ = strconv.ParseFloat(strconv.FormatFloat(g, 'g', -1, 32), 64)
	return g
}

func fromNumber(n json.Number) (any, error) {
	s := string(n)
	end, isInt, err := scanNumber([]byte(s), 0)
	if err != nil || end != len(s) {
		return nil, fmt.Errorf("phpjson: invalid number literal %q", s)
	}
	if isInt {
		if i, ok := parseInt64([]byte(s)); ok {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("phpjson: number %s is out of range", s)
	}
	return f, nil
}

func normalizeObject(o *Object, depth int) (any, bool, error) {
	var out *Object
	for i := range o.keys {
		n, changed, err := normalize(o.vals[i], depth+1)
		if err != nil {
			return nil, false, err
		}
		if changed && out == nil {
			out = o.Shallow()
		}
		if out != nil {
			out.vals[i] = n
		}
	}
	if out == nil {
		return o, false, nil
	}
	return out, true, nil
}

func normalizeList(l []any, depth int) (any, bool, error) {
	var out []any
	for i, e := range l {
		n, changed, err := normalize(e, depth+1)
		if err != nil {
			return nil, false, err
		}
		if changed && out == nil {
			out = make([]any, len(l))
			copy(out, l[:i])
		}
		if out != nil {
			out[i] = n
		}
	}
	if out == nil {
		return l, false, nil
	}
	return out, true, nil
}

// normalizeMap converts a map whose key kind is a string or an integer
// (written in decimal, as encoding/json writes it).
func normalizeMap(rv reflect.Value, depth int) (*Object, error) {
	m := make(map[string]any, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		n, _, err := normalize(it.Value().Interface(), depth+1)
		if err != nil {
			return nil, err
		}
		m[mapKey(it.Key())] = n
	}
	return objectOfMap(m, nil), nil
}

// mapKey is the object key of a map key of a string or integer kind.
func mapKey(k reflect.Value) string {
	switch kind := k.Kind(); {
	case kind == reflect.String:
		return k.String()
	case kind <= reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	default:
		return strconv.FormatUint(k.Uint(), 10)
	}
}

const maxPointerChain = 1000

func normalizeReflect(rv reflect.Value, depth int) (any, error) {
	if !rv.IsValid() {
		return nil, nil
	}
	for i := 0; rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface; i++ {
		if hasCustomMarshaler(rv.Type()) {
			return viaEncodingJSON(rv.Interface(), false)
		}
		if rv.IsNil() {
			return nil, nil
		}
		if i == maxPointerChain {
			return nil, fmt.Errorf("phpjson: pointer chain too long (cycle?) in %s", rv.Type())
		}
		rv = rv.Elem()
	}
	t := rv.Type()
	if hasCustomMarshaler(t) {
		return viaEncodingJSON(rv.Interface(), false)
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fromUint(rv.Uint()), nil
	case reflect.Float32:
		return fromFloat32(float32(rv.Float())), nil
	case reflect.Float64:
		return rv.Float(), nil
	case reflect.Map:
		if depth+1 > maxDepth {
			return nil, errDepth
		}
		kt := t.Key()
		switch {
		case kt.Kind() == reflect.String:
			return normalizeMap(rv, depth)
		case kt.Implements(textMarshalerType):
			return viaEncodingJSON(rv.Interface(), true)
		case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Uintptr:
			return normalizeMap(rv, depth)
		}
		return nil, fmt.Errorf("phpjson: unsupported map key type %s", kt)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			// []byte: base64 string, as encoding/json writes it.
			return viaEncodingJSON(rv.Interface(), false)
		}
		if depth+1 > maxDepth {
			return nil, errDepth
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, _, err := normalize(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case reflect.Struct:
		// Encode through a pointer to a copy so that fields whose marshaler
		// has a pointer receiver (such as an Object value) are addressable.
		p := reflect.New(t)
		p.Elem().Set(rv)
		return viaEncodingJSON(p.Interface(), true)
	}
	return nil, fmt.Errorf("phpjson: unsupported type %s", t)
}

// viaEncodingJSON encodes v with encoding/json and decodes the result.
// resort enables numeric ordering of integer-keyed maps found inside v.
func viaEncodingJSON(v any, resort bool) (any, error) {
	var st inspectState
	if err := inspect(reflect.ValueOf(v), 0, &st); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("phpjson: %w", err)
	}
	return decode(b, resort && st.intKeyedMap)
}

type inspectState struct {
	// intKeyedMap is set when a map with at least two keys, all integers,
	// was seen: encoding/json writes its keys in bytewise order.
	intKeyedMap bool
}

// inspect walks the parts of v that encoding/json will encode itself and
// reports invalid UTF-8 in strings (which encoding/json would silently
// replace). Values with their own marshaler are skipped; json.Marshaler
// output is validated when it is decoded.
func inspect(v reflect.Value, depth int, st *inspectState) error {
	if depth > 2*maxDepth || !v.IsValid() {
		return nil // encoding/json reports cycles itself
	}
	t := v.Type()
	if t.Kind() != reflect.Interface &&
		(hasCustomMarshaler(t) || (t.Kind() != reflect.Pointer && hasCustomMarshaler(reflect.PointerTo(t)))) {
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return errUTF8
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return inspect(v.Elem(), depth+1, st)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" {
				continue
			}
			if err := inspect(v.Field(i), depth+1, st); err != nil {
				return err
			}
		}
	case reflect.Map:
		kk := t.Key().Kind()
		isIntKind := kk >= reflect.Int && kk <= reflect.Uintptr && !t.Key().Implements(textMarshalerType)
		allInt := v.Len() >= 2 && (kk == reflect.String || isIntKind)
		it := v.MapRange()
		for it.Next() {
			if kk == reflect.String {
				k := it.Key().String()
				if !utf8.ValidString(k) {
					return errUTF8
				}
				if allInt {
					_, allInt = CanonicalInt(k)
				}
			}
			if err := inspect(it.Value(), depth+1, st); err != nil {
				return err
			}
		}
		if allInt {
			st.intKeyedMap = true
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := inspect(v.Index(i), depth+1, st); err != nil {
				return err
			}
		}
	}
	return nil
}
