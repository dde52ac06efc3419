package phpjson_test

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// hasNegativeZero reports whether v contains the float -0. PHP writes it as
// -0, which decodes as the integer 0, so the first re-encoding of such a tree
// legitimately differs from the second (PHP behaves the same way).
func hasNegativeZero(v any) bool {
	switch x := v.(type) {
	case float64:
		return x == 0 && math.Signbit(x)
	case *phpjson.Object:
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			if hasNegativeZero(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNegativeZero(e) {
				return true
			}
		}
	}
	return false
}

// FuzzRoundTrip checks that whatever Decode accepts, Marshal can write, and
// that decoding and re-encoding that output gives the same bytes.
func FuzzRoundTrip(f *testing.F) {
	seeds := []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e\/f"}}`,
		`[]`, `{}`, `[[]]`, `{"0":"a","1":"b"}`, `{"1":"a","2":"b"}`, `{"b":1,"a":2,"b":3}`,
		`9007199254740993`, `9223372036854775808`, `-0`, `-0.0`, `[-0.0,0.0]`, `1e-7`, `1E+20`,
		`0.1`, `1.0`, `123456789012345678901234567890`, `5e-324`, `1.7976931348623157e308`,
		`"\u00e9\ud83d\ude00\u2028\/\"\\\b\f\n\r\t\u0000\u001f"`, "\"Café 😀 \x7f\"",
		`"<b>&'</b>"`, ` [ 1 , { "x" : [ ] } ] `, `{"":""}`, `"\ud800"`, "\"\xff\"", `1e400`,
	}
	// Stored bytes from PHP: a job payload and a workflow state.
	seeds = append(seeds,
		string(job9Payload(f)),
		cell(f, loadFixture(f, "c_three_step_workflow.json"), 2, "wp_queuety_workflows", "1", "state"))
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := phpjson.Decode(data)
		if err != nil {
			return
		}
		b1, err := phpjson.Marshal(v)
		// Decode rejects invalid UTF-8, so nothing it returns may fail.
		require.NoError(t, err, "Marshal(Decode(%q))", data)
		// Output is pure ASCII with no whitespace outside strings and no raw
		// control characters (DEL is written raw, as PHP does).
		bad := slices.IndexFunc(b1, func(c byte) bool { return c >= utf8.RuneSelf || c < 0x20 })
		require.Equal(t, -1, bad, "Marshal output has a raw control or non-ASCII byte: %q", b1)
		v2, err := phpjson.Decode(b1)
		require.NoError(t, err, "Decode(Marshal(...)) of %q", b1)
		b2, err := phpjson.Marshal(v2)
		require.NoError(t, err, "second Marshal of %q", b1)
		if bytes.Equal(b1, b2) {
			return
		}
		require.True(t, hasNegativeZero(v), "not idempotent:\n input: %q\nfirst:  %s\nsecond: %s", data, b1, b2)
		v3, err := phpjson.Decode(b2)
		require.NoError(t, err)
		b3, err := phpjson.Marshal(v3)
		require.NoError(t, err, "third Marshal of %q", b2)
		require.Equal(t, string(b2), string(b3), "not idempotent after -0 normalisation")

		_, err = phpjson.DecodeObject(data)
		switch v.(type) {
		case *phpjson.Object, []any:
			require.NoError(t, err, "DecodeObject rejected an object or list")
		}
	})
}
