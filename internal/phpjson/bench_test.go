package phpjson_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// benchState is a typical workflow state of about 1 KB: dispatch payload,
// step definitions, runtime keys and a few step outputs.
const benchState = `{"order_id":42,"customer":{"email":"ana@example.com","name":"Ana N\u00fa\u00f1ez","address":{"street":"Kastanienallee 12","zip":"10435","city":"Berlin","country":"DE"}},` +
	`"_steps":[{"type":"single","name":"0","class":"App\\Steps\\FetchOrder"},{"type":"single","name":"1","class":"reserve_stock"},` +
	`{"type":"delay","name":"delay_0","delay_seconds":30,"compensation":null},{"type":"single","name":"3","class":"App\\Steps\\NotifyCustomer"}],` +
	`"_queue":"default","_priority":0,"_max_attempts":3,"_definition_hash":"0fe6e4b0912d1402b7787ae3e1ae64ad6192f1adc293e92e9fbe81583c4599a9",` +
	`"order":{"id":42,"items":[{"sku":"SKU-1","qty":2,"price":4.75,"title":"Caf\u00e9 beans 250g"},{"sku":"SKU-7","qty":1,"price":10,"title":"Grinder \/ manual"}],"total":19.5,"currency":"EUR"},` +
	`"status":"reserved","reservation_id":"R-1001","reserved_at":"2026-11-22 04:18:26","warehouse":{"code":"BER-1","lat":52.538,"lng":13.4085},` +
	`"notified":true,"channel":"email","tracking":["DHL","00340434161094042557"],"attempt_log":[1,1,2],"note":"Leave at the door <no bell> & call"}`

func benchObject(b *testing.B) *phpjson.Object {
	o, err := phpjson.DecodeObject([]byte(benchState))
	require.NoError(b, err)
	return o
}

func BenchmarkMarshal(b *testing.B) {
	o := benchObject(b)
	out, err := phpjson.Marshal(o)
	require.NoError(b, err)
	require.Equal(b, benchState, string(out), "round trip differs")
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := phpjson.Marshal(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeObject(b *testing.B) {
	data := []byte(benchState)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := phpjson.DecodeObject(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeItems is the state of a 10,000-item for-each: the item
// list and a few keys.
func BenchmarkDecodeItems(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"name":"bench","items":[`)
	for i := range 10000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(i * 7))
	}
	sb.WriteString(`],"_queue":"default","_priority":0}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := phpjson.DecodeObject(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalPublic writes the public part of a state (its keys
// not starting with "_"): by a filtered copy, and by MarshalFilter.
func BenchmarkMarshalPublic(b *testing.B) {
	o := benchObject(b)
	public := func(k string) bool { return !strings.HasPrefix(k, "_") }
	b.Run("filter-copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := phpjson.Marshal(o.Filter(public)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal-filter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := phpjson.MarshalFilter(o, public); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeAfterItems decodes a small state after a large one:
// the large one's scratch space must not slow the small ones.
func BenchmarkDecodeAfterItems(b *testing.B) {
	big := []byte(`{"items":[` + strings.Repeat(`1,`, 9999) + `1]}`)
	data := []byte(benchState)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := phpjson.DecodeObject(big); err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if _, err := phpjson.DecodeObject(data); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDecodeUniqueStrings decodes a list of 1,000 short strings
// each seen once (ids): none is kept by the decoder's intern table, and
// each costs its hash on top of its allocation.
func BenchmarkDecodeUniqueStrings(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	n := 0
	for b.Loop() {
		b.StopTimer()
		sb.Reset()
		sb.WriteByte('[')
		for i := range 1000 {
			if i > 0 {
				sb.WriteByte(',')
			}
			n++
			sb.WriteString(`"id-` + strconv.Itoa(n) + `-0123456789"`)
		}
		sb.WriteByte(']')
		data := []byte(sb.String())
		b.StartTimer()
		if _, err := phpjson.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
