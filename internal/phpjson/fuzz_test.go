package phpjson_test

import (
	"bytes"
	"math"
	"testing"
	"unicode/utf8"

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
		if err != nil {
			// Decode rejects invalid UTF-8, so nothing it returns may fail.
			t.Fatalf("Marshal(Decode(%q)): %v", data, err)
		}
		// Output is pure ASCII with no whitespace outside strings and no raw
		// control characters (DEL is written raw, as PHP does).
		for _, c := range b1 {
			if c >= utf8.RuneSelf || c < 0x20 {
				t.Fatalf("Marshal output has a raw control or non-ASCII byte: %q", b1)
			}
		}
		v2, err := phpjson.Decode(b1)
		if err != nil {
			t.Fatalf("Decode(Marshal(...)) of %q: %v", b1, err)
		}
		b2, err := phpjson.Marshal(v2)
		if err != nil {
			t.Fatalf("second Marshal of %q: %v", b1, err)
		}
		if bytes.Equal(b1, b2) {
			return
		}
		if !hasNegativeZero(v) {
			t.Fatalf("not idempotent:\n input: %q\nfirst:  %s\nsecond: %s", data, b1, b2)
		}
		v3, err := phpjson.Decode(b2)
		if err != nil {
			t.Fatal(err)
		}
		if b3, err := phpjson.Marshal(v3); err != nil || !bytes.Equal(b2, b3) {
			t.Fatalf("not idempotent after -0 normalisation:\nsecond: %s\nthird:  %s (%v)", b2, b3, err)
		}

		if _, err := phpjson.DecodeObject(data); err != nil {
			switch v.(type) {
			case *phpjson.Object, []any:
				t.Fatalf("DecodeObject rejected an object or list: %v", err)
			}
		}
	})
}
