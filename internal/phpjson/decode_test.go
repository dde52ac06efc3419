package phpjson_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// plain converts a decoded tree to maps for comparison with assert.Equal
// and also records key order of every object.
func plain(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		m := map[string]any{"__keys": x.Keys()}
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			m[k] = plain(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"int", "42", int64(42)},
		{"negative int", "-7", int64(-7)},
		{"zero", "0", int64(0)},
		{"negative zero int", "-0", int64(0)},
		{"above 2^53", "9007199254740993", int64(9007199254740993)},
		{"max int64", "9223372036854775807", int64(math.MaxInt64)},
		{"min int64", "-9223372036854775808", int64(math.MinInt64)},
		{"above int64 is float", "9223372036854775808", 9223372036854775808.0},
		{"below int64 is float", "-9223372036854775809", -9223372036854775809.0},
		{"float", "2.5", 2.5},
		{"float with .0", "1.0", 1.0},
		{"exponent", "1e2", 100.0},
		{"upper exponent", "1E+2", 100.0},
		{"negative exponent", "15e-8", 1.5e-7},
		{"underflow", "1e-400", 0.0},
		{"string", `"a\/b\u00e9\ud83d\ude00\"\\\b\f\n\r\t"`, "a/bé😀\"\\\b\f\n\r\t"},
		{"uppercase hex escape", `"\u00E9"`, "é"},
		{"raw UTF-8", "\"Café 😀\"", "Café 😀"},
		{"nul escape", `"\u0000"`, "\x00"},
		{"true", "true", true},
		{"false", "false", false},
		{"null", "null", nil},
		{"whitespace", " \t\r\n[ 1 , 2 ]\n", []any{int64(1), int64(2)}},
		{"empty list", "[]", []any{}},
		{"empty object", "{}", map[string]any{"__keys": []string{}}},
		{"key order kept", `{"b":1,"a":2,"10":3,"9":4}`,
			map[string]any{"__keys": []string{"b", "a", "10", "9"}, "b": int64(1), "a": int64(2), "10": int64(3), "9": int64(4)}},
		{"duplicate key keeps first position, last value", `{"a":1,"b":2,"a":3}`,
			map[string]any{"__keys": []string{"a", "b"}, "a": int64(3), "b": int64(2)}},
		{"nested", `{"x":[{"y":null}]}`,
			map[string]any{"__keys": []string{"x"}, "x": []any{map[string]any{"__keys": []string{"y"}, "y": nil}}}},
		{"empty key", `{"":1}`, map[string]any{"__keys": []string{""}, "": int64(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := phpjson.Decode([]byte(tt.in))
			require.NoError(t, err, "Decode(%s)", tt.in)
			assert.Equal(t, tt.want, plain(got), "Decode(%s)", tt.in)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "unexpected end"},
		{"blank", "  ", "unexpected end"},
		{"unclosed object", "{", "unexpected end"},
		{"unclosed list", "[1", "unexpected end"},
		{"unclosed string", `"abc`, "unexpected end"},
		{"trailing comma list", "[1,]", "invalid character"},
		{"trailing comma object", `{"a":1,}`, "invalid character"},
		{"leading zero", "01", "after top-level value"},
		{"leading zero in list", "[01]", "invalid character"},
		{"dot at end", "1.", "unexpected end"},
		{"dot without digits", "1.x", "numeric literal"},
		{"exponent sign without digits", "[1e+]", "numeric literal"},
		{"leading dot", ".5", "invalid character"},
		{"plus sign", "+1", "invalid character"},
		{"bare minus", "-", "unexpected end"},
		{"exponent without digits", "1e", "unexpected end"},
		{"NaN", "NaN", "invalid character"},
		{"Infinity", "Infinity", "invalid character"},
		{"uppercase literal", "TRUE", "invalid character"},
		{"truncated literal", "tru", "invalid character"},
		{"single quotes", "'a'", "invalid character"},
		{"unquoted key", "{a:1}", "invalid character"},
		{"numeric key", "{1:2}", "invalid character"},
		{"missing colon", `{"a" 1}`, "after object key"},
		{"missing comma", "[1 2]", "after array element"},
		{"two values", "1 2", "after top-level value"},
		{"BOM", "\xef\xbb\xbf{}", "invalid character"},
		{"bad escape", `"\x"`, "escape"},
		{"short unicode escape", `"\u12"`, "escape"},
		{"raw tab", "\"a\tb\"", "in string literal"},
		{"raw newline", "\"a\nb\"", "in string literal"},
		{"lone high surrogate", `"\ud800"`, "surrogate"},
		{"high surrogate then text", `"\ud800abc"`, "surrogate"},
		{"high surrogate then non-low", `"\ud800\u0041"`, "surrogate"},
		{"lone low surrogate", `"\udc00"`, "surrogate"},
		{"reversed pair", `"\ude00\ud83d"`, "surrogate"},
		{"invalid UTF-8", "\"\xff\"", "UTF-8"},
		{"invalid UTF-8 after escape", "\"\\n\xff\"", "UTF-8"},
		{"UTF-8 surrogate", "\"\xed\xa0\x80\"", "UTF-8"},
		{"overlong", "\"\xc0\xaf\"", "UTF-8"},
		{"invalid UTF-8 in key", "{\"\xff\":1}", "UTF-8"},
		{"float overflow", "1e400", "out of range"},
		{"negative float overflow", "[-1e400]", "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := phpjson.Decode([]byte(tt.in))
			require.Error(t, err, "Decode(%q) = %#v, want error", tt.in, v)
			assert.True(t, strings.HasPrefix(err.Error(), "phpjson: "), "Decode(%q) error %q lacks the package prefix", tt.in, err)
			assert.ErrorContains(t, err, tt.wantErr, "Decode(%q)", tt.in)
		})
	}
}

func TestBigIntRoundTrip(t *testing.T) {
	for _, in := range []string{
		"9007199254740993",
		"-9007199254740993",
		"9223372036854775807",
		`{"big_int":9007199254740993,"list":[9007199254740993]}`,
	} {
		v, err := phpjson.Decode([]byte(in))
		require.NoError(t, err)
		out, err := phpjson.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, in, string(out), "Decode→Marshal(%s)", in)
	}
	// Beyond int64, PHP decodes a float and re-encodes it as one.
	v, _ := phpjson.Decode([]byte("9223372036854775808"))
	out, _ := phpjson.Marshal(v)
	assert.Equal(t, "9.223372036854776e+18", string(out), "above int64")
}

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name, in string
		keys     []string
		out      string
	}{
		{"object", `{"b":1,"a":2}`, []string{"b", "a"}, `{"b":1,"a":2}`},
		{"empty object", `{}`, []string{}, `[]`},
		{"empty PHP array", `[]`, []string{}, `[]`},
		{"list", `["x","y"]`, []string{"0", "1"}, `["x","y"]`},
		{"list object", `{"0":"x","1":"y"}`, []string{"0", "1"}, `["x","y"]`},
		{"sparse", `{"1":"a","2":"b"}`, []string{"1", "2"}, `{"1":"a","2":"b"}`},
		{"whitespace", " {\"a\" : [ ] } ", []string{"a"}, `{"a":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := phpjson.DecodeObject([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.keys, o.Keys(), "keys")
			b, err := phpjson.Marshal(o)
			require.NoError(t, err)
			assert.Equal(t, tt.out, string(b), "Marshal")
		})
	}

	for in, want := range map[string]string{
		`"x"`:   "phpjson: expected a JSON object, got string",
		`1`:     "phpjson: expected a JSON object, got number",
		`1.5`:   "phpjson: expected a JSON object, got number",
		`true`:  "phpjson: expected a JSON object, got boolean",
		`null`:  "phpjson: expected a JSON object, got null",
		`{"a":`: "phpjson: unexpected end of JSON input",
	} {
		o, err := phpjson.DecodeObject([]byte(in))
		assert.EqualError(t, err, want, "DecodeObject(%s) = %v", in, o)
	}
}

// Containers nested in each other, lists in objects and objects in lists,
// each come out whole and in order, and stay as decoded when the decoder
// decodes again.
func TestDecodeNestedContainers(t *testing.T) {
	const text = `[1,{"a":[2,{"b":3,"c":[]},4],"d":{"e":{}},"a":[5]},[6,[7,{"f":8}]],{"g":9}]`
	first, err := phpjson.Decode([]byte(text))
	require.NoError(t, err)
	again := func() {
		t.Helper()
		out, err := phpjson.Marshal(first)
		require.NoError(t, err)
		require.Equal(t, `[1,{"a":[5],"d":{"e":[]}},[6,[7,{"f":8}]],{"g":9}]`, string(out))
	}
	again()
	for range 3 {
		_, err := phpjson.Decode([]byte(`[{"x":"y","z":[0,0,0,0,0,0,0,0,0,0]},["q","r","s","t","u"]]`))
		require.NoError(t, err)
		_, err = phpjson.Decode([]byte(`{"x":[1,`)) // an error midway leaves nothing behind either
		require.Error(t, err)
	}
	again()
	o := first.([]any)[1].(*phpjson.Object)
	require.Equal(t, []string{"a", "d"}, o.Keys())
}
