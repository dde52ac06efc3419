package phpjson_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

func obj(kv ...any) *phpjson.Object {
	o := phpjson.NewObject()
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

type marshalCase struct {
	name string
	in   any
	want string
}

func runMarshal(t *testing.T, tests []marshalCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := phpjson.Marshal(tt.in)
			require.NoError(t, err, "Marshal(%#v)", tt.in)
			assert.Equal(t, tt.want, string(got), "Marshal(%#v)", tt.in)
		})
	}
}

// tenth is a variable so that 0.1+0.2 is computed in float64 at run time.
var tenth = 0.1

// Expected values are what PHP 8 json_encode writes with
// serialize_precision = -1.
func TestMarshalFloat(t *testing.T) {
	runMarshal(t, []marshalCase{
		{"one", 1.0, "1"},
		{"two", 2.0, "2"},
		{"2.5", 2.5, "2.5"},
		{"0.1", 0.1, "0.1"},
		{"0.1+0.2", tenth + 2*tenth, "0.30000000000000004"},
		{"third", 1.0 / 3, "0.3333333333333333"},
		{"negative", -1.5, "-1.5"},
		{"negative integral", -7.0, "-7"},
		{"zero", 0.0, "0"},
		{"negative zero", math.Copysign(0, -1), "-0"},
		{"19.5", 19.5, "19.5"},
		{"100", 100.0, "100"},
		{"0.5", 0.5, "0.5"},
		{"0.001", 0.001, "0.001"},
		{"0.0001 fixed (decpt -3)", 0.0001, "0.0001"},
		{"0.00012 fixed", 0.00012, "0.00012"},
		{"1e-5 exponential (decpt -4)", 1e-5, "1.0e-5"},
		{"1.2e-5", 0.000012, "1.2e-5"},
		{"1.5e-7", 1.5e-7, "1.5e-7"},
		{"1.23e-18", 123e-20, "1.23e-18"},
		{"1e15", 1e15, "1000000000000000"},
		{"1e16 fixed (decpt 17)", 1e16, "10000000000000000"},
		{"17 digits fixed", 12345678901234567.0, "12345678901234568"},
		{"1e17 exponential (decpt 18)", 1e17, "1.0e+17"},
		{"1e20", 1e20, "1.0e+20"},
		{"1.5e300", 1.5e300, "1.5e+300"},
		{"1.2345678901234568e+20", 123456789012345678901.0, "1.2345678901234568e+20"},
		{"2^63", 9223372036854775808.0, "9.223372036854776e+18"},
		{"max", math.MaxFloat64, "1.7976931348623157e+308"},
		{"smallest denormal", 5e-324, "5.0e-324"},
		{"smallest normal", 2.2250738585072014e-308, "2.2250738585072014e-308"},
		{"float32 0.1", float32(0.1), "0.1"},
		{"float32 2^24", float32(16777216), "16777216"},
		{"float32 1e20", float32(1e20), "1.0e+20"},
		{"json.Number float", json.Number("1.50"), "1.5"},
		{"json.Number exp", json.Number("1E2"), "100"},
	})
}

func TestMarshalFloatErrors(t *testing.T) {
	for _, v := range []any{
		math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1)),
		[]any{1, math.NaN()}, obj("a", math.Inf(1)),
		map[string]float64{"x": math.NaN()},
		struct{ F float64 }{math.Inf(1)},
	} {
		b, err := phpjson.Marshal(v)
		assert.Error(t, err, "Marshal(%v) = %s, want error", v, b)
	}
}

func TestMarshalInt(t *testing.T) {
	type myInt int16
	runMarshal(t, []marshalCase{
		{"int", 42, "42"},
		{"negative", -7, "-7"},
		{"int64 above 2^53", int64(9007199254740993), "9007199254740993"},
		{"max int64", int64(math.MaxInt64), "9223372036854775807"},
		{"min int64", int64(math.MinInt64), "-9223372036854775808"},
		{"int8", int8(-128), "-128"},
		{"int32", int32(7), "7"},
		{"uint8", uint8(255), "255"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615"},
		{"named", myInt(3), "3"},
		{"json.Number int", json.Number("9007199254740993"), "9007199254740993"},
		{"json.Number -0", json.Number("-0"), "0"},
		{"json.Number huge int", json.Number("123456789012345678901234567890"), "123456789012345678901234567890"},
		{"bool true", true, "true"},
		{"bool false", false, "false"},
		{"nil", nil, "null"},
	})
	_, err := phpjson.Marshal(json.Number("1."))
	assert.Error(t, err, `Marshal(json.Number("1.")) succeeded, want error`)
}

func TestMarshalString(t *testing.T) {
	runMarshal(t, []marshalCase{
		{"empty", "", `""`},
		{"plain", "hello", `"hello"`},
		{"slash", "a/b", `"a\/b"`},
		{"url", "https://example.com/a?x=1&y=2", `"https:\/\/example.com\/a?x=1&y=2"`},
		{"quote", `say "hi"`, `"say \"hi\""`},
		{"backslash", `C:\temp`, `"C:\\temp"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"nul", "\x00", `"\u0000"`},
		{"other controls", "\x01\x0b\x1f", `"\u0001\u000b\u001f"`},
		{"DEL raw", "\x7f", "\"\x7f\""},
		{"html raw", `<b>&'</b>`, `"<b>&'<\/b>"`},
		{"latin1", "Café Müller", `"Caf\u00e9 M\u00fcller"`},
		{"cjk", "日本 東京", `"\u65e5\u672c \u6771\u4eac"`},
		{"euro", "€", `"\u20ac"`},
		{"emoji surrogate pair", "😀", `"\ud83d\ude00"`},
		{"max code point", "\U0010FFFF", `"\udbff\udfff"`},
		{"line separator", "\u2028\u2029", `"\u2028\u2029"`},
		{"replacement char", "\uFFFD", `"\ufffd"`},
		{"BOM", "\uFEFF", `"\ufeff"`},
		{"mixed", "a\"é/\n😀z", `"a\"\u00e9\/\n\ud83d\ude00z"`},
		{"json.Number is written as a number", json.Number("1"), `1`},
		{"object key escaping", obj("a/b", 1, "é", 2), `{"a\/b":1,"\u00e9":2}`},
	})
}

func TestMarshalInvalidUTF8(t *testing.T) {
	bad := []string{
		"\xff",
		"a\x80b",
		"\xc3",             // truncated 2-byte sequence
		"\xe2\x82",         // truncated 3-byte sequence
		"\xc0\xaf",         // overlong "/"
		"\xed\xa0\x80",     // UTF-8 encoded surrogate U+D800
		"\xf4\x90\x80\x80", // above U+10FFFF
	}
	type S struct{ Name string }
	type tagged struct {
		Skipped string `json:"-"`
	}
	for _, s := range bad {
		for _, v := range []any{s, []any{s}, obj(s, 1), obj("k", s), map[string]any{s: 1}, []string{s}, S{s}, &S{s}, map[string]S{"k": {s}}} {
			b, err := phpjson.Marshal(v)
			assert.ErrorContains(t, err, "UTF-8", "Marshal(%#v) = %s", v, b)
		}
	}
	// Fields encoding/json does not encode are not checked.
	_, err := phpjson.Marshal(tagged{Skipped: "\xff"})
	assert.NoError(t, err, "skipped field")
}

func TestMarshalEmptyContainers(t *testing.T) {
	var nilObject *phpjson.Object
	runMarshal(t, []marshalCase{
		{"empty Object", phpjson.NewObject(), "[]"},
		{"zero Object", &phpjson.Object{}, "[]"},
		{"empty []any", []any{}, "[]"},
		{"nil []any", []any(nil), "[]"},
		{"empty map", map[string]any{}, "[]"},
		{"nil map", map[string]any(nil), "[]"},
		{"nil typed slice", []string(nil), "[]"},
		{"empty typed map", map[string]int{}, "[]"},
		{"nil typed map", map[string]int(nil), "[]"},
		{"empty array", [0]int{}, "[]"},
		{"nested", []any{phpjson.NewObject(), map[string]any{}, []any{}}, "[[],[],[]]"},
		{"in object", obj("a", phpjson.NewObject(), "b", []any{}), `{"a":[],"b":[]}`},
		{"nil *Object", nilObject, "null"},
		{"nil pointer", (*int)(nil), "null"},
		{"empty string", "", `""`},
	})
}

func TestMarshalListDetection(t *testing.T) {
	runMarshal(t, []marshalCase{
		{"object 0..n-1", obj("0", "a", "1", "b", "2", "c"), `["a","b","c"]`},
		{"object single 0", obj("0", "a"), `["a"]`},
		{"object out of order", obj("1", "b", "0", "a"), `{"1":"b","0":"a"}`},
		{"object with hole", obj("0", "a", "2", "c"), `{"0":"a","2":"c"}`},
		{"object starting at 1", obj("1", "a", "2", "b"), `{"1":"a","2":"b"}`},
		{"object non-canonical key", obj("0", "a", "01", "b"), `{"0":"a","01":"b"}`},
		{"object string keys", obj("b", 1, "a", 2), `{"b":1,"a":2}`},
		{"object after delete", func() *phpjson.Object {
			o := obj("0", "a", "1", "b", "2", "c")
			o.Delete("2")
			return o
		}(), `["a","b"]`},
		{"map 0..n-1 as a set", map[string]any{"1": "b", "0": "a", "2": "c"}, `["a","b","c"]`},
		{"map with hole", map[string]any{"0": "a", "2": "c"}, `{"0":"a","2":"c"}`},
		{"map int keys", map[int]string{1: "b", 0: "a"}, `["a","b"]`},
		{"map int keys sparse", map[int]string{10: "x", 9: "y", -1: "z"}, `{"-1":"z","9":"y","10":"x"}`},
		{"map uint keys", map[uint8]bool{2: true, 1: false}, `{"1":false,"2":true}`},
	})
}

func TestMarshalMapOrder(t *testing.T) {
	type named map[string]any
	type status string
	runMarshal(t, []marshalCase{
		{"lexical", map[string]any{"b": 1, "a": 2, "c": 3}, `{"a":2,"b":1,"c":3}`},
		{"bytewise, uppercase first", map[string]any{"b": 1, "B": 2, "a": 3}, `{"B":2,"a":3,"b":1}`},
		{"numeric when all integers", map[string]any{"10": 1, "9": 2, "100": 3}, `{"9":2,"10":1,"100":3}`},
		{"negative integers", map[string]any{"-1": 1, "-10": 2, "3": 3}, `{"-10":2,"-1":1,"3":3}`},
		{"mixed falls back to bytewise", map[string]any{"10": 1, "9": 2, "a": 3}, `{"10":1,"9":2,"a":3}`},
		{"leading zero is not an integer", map[string]any{"10": 1, "09": 2}, `{"09":2,"10":1}`},
		{"named map type", named{"z": 1, "y": named{"b": 2, "a": 1}}, `{"y":{"a":1,"b":2},"z":1}`},
		{"typed values", map[string][]int{"b": {1, 2}, "a": nil}, `{"a":[],"b":[1,2]}`},
		{"named string key and value", map[status]status{"ok": "done"}, `{"ok":"done"}`},
		{"nested map[string]any", map[string]any{"m": map[string]any{"y": 1, "x": 2}}, `{"m":{"x":2,"y":1}}`},
	})
}

func TestMarshalOther(t *testing.T) {
	type Address struct {
		Zip     string `json:"zip"`
		Country string `json:"country"`
	}
	type Customer struct {
		ID      int               `json:"id"`
		Tags    []string          `json:"tags"`
		Address *Address          `json:"address,omitempty"`
		Scores  map[int]float64   `json:"scores"`
		Extra   map[string]string `json:"extra"`
		Secret  string            `json:"-"`
		private string
	}
	big := uint64(math.MaxUint64)
	runMarshal(t, []marshalCase{
		{"struct keeps field order", Customer{
			ID: 42, Tags: []string{"vip"}, Address: &Address{"10115", "DE"},
			Scores: map[int]float64{10: 1.0, 2: 0.5, 1: 2}, Extra: map[string]string{"b": "/", "a": "é"},
			Secret: "x", private: "y",
		}, `{"id":42,"tags":["vip"],"address":{"zip":"10115","country":"DE"},"scores":{"1":2,"2":0.5,"10":1},"extra":{"a":"\u00e9","b":"\/"}}`},
		{"struct int-keyed map as list", struct {
			M map[int]string `json:"m"`
		}{map[int]string{0: "a", 1: "b", 2: "c", 3: "d", 4: "e", 5: "f", 6: "g", 7: "h", 8: "i", 9: "j", 10: "k"}},
			`{"m":["a","b","c","d","e","f","g","h","i","j","k"]}`},
		{"struct nil slice is null (encoding/json)", Customer{}, `{"id":0,"tags":null,"scores":null,"extra":null}`},
		{"pointer to struct", &Address{"1", "2"}, `{"zip":"1","country":"2"}`},
		{"struct with Object field", struct {
			State phpjson.Object  `json:"state"`
			Ptr   *phpjson.Object `json:"ptr"`
		}{*obj("b", 1, "a", "<"), obj("0", "x")}, `{"state":{"b":1,"a":"<"},"ptr":["x"]}`},
		{"json.RawMessage keeps order", json.RawMessage(`{"b":1,"a":[1.0,"\u00e9"]}`), `{"b":1,"a":[1,"\u00e9"]}`},
		{"json.Marshaler", marshaler{}, `{"z":1,"10":2,"9":3}`},
		{"text marshaler", textMarshaler{}, `"a\/b"`},
		{"byte slice is base64", []byte("hi"), `"aGk="`},
		{"byte array is a list", [2]byte{1, 2}, `[1,2]`},
		{"typed slice", []float64{1, 1.5}, `[1,1.5]`},
		{"slice of maps", []map[string]int{{"b": 1, "a": 2}}, `[{"a":2,"b":1}]`},
		{"pointer to pointer", func() any { x := 5; p := &x; return &p }(), `5`},
		{"interface slice of mixed", []any{uint(3), int8(-1), float32(0.25), "x", nil, true}, `[3,-1,0.25,"x",null,true]`},
		{"uint64 above int64 in map", map[string]uint64{"a": big}, `{"a":1.8446744073709552e+19}`},
	})
}

type marshaler struct{}

func (marshaler) MarshalJSON() ([]byte, error) { return []byte(`{"z":1,"10":2,"9":3}`), nil }

type textMarshaler struct{}

func (textMarshaler) MarshalText() ([]byte, error) { return []byte("a/b"), nil }

func TestMarshalUnsupported(t *testing.T) {
	for _, v := range []any{
		make(chan int),
		func() {},
		complex(1, 2),
		map[float64]int{1: 1},
		struct{ C chan int }{make(chan int)},
	} {
		b, err := phpjson.Marshal(v)
		assert.Error(t, err, "Marshal(%T) = %s, want error", v, b)
	}
	// A cycle through a pointer must fail, not recurse forever.
	var p any
	p = &p
	_, err := phpjson.Marshal(p)
	assert.Error(t, err, "pointer cycle")
	m := map[string]any{}
	m["self"] = m
	_, err = phpjson.Marshal(m)
	assert.Error(t, err, "map cycle")
}

func nestedList(depth int) any {
	var v any = []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return v
}

// PHP's default depth for json_encode and json_decode is 512 nested arrays.
func TestDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", 512) + strings.Repeat("]", 512)
	tooDeep := "[" + ok + "]"
	_, err := phpjson.Marshal(nestedList(512))
	assert.NoError(t, err, "Marshal depth 512")
	_, err = phpjson.Marshal(nestedList(513))
	assert.Error(t, err, "Marshal depth 513")
	_, err = phpjson.Decode([]byte(ok))
	assert.NoError(t, err, "Decode depth 512")
	_, err = phpjson.Decode([]byte(tooDeep))
	assert.Error(t, err, "Decode depth 513")
	objs := strings.Repeat(`{"a":`, 513) + "1" + strings.Repeat("}", 513)
	_, err = phpjson.Decode([]byte(objs))
	assert.Error(t, err, "Decode object depth 513")
}
