package workflowstate

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// TestNormalizeEntriesKeepsRebuiltOrder checks that the copy made of
// entries already keyed by their index (keyedEntries) is what rebuilding
// them gives, for stored arrays of every shape: keyed and sorted, keyed
// with a tail out of order, keys that are not canonical integers,
// entries whose index differs from their key, entries without an index,
// values that are not entries.
func TestNormalizeEntriesKeepsRebuiltOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	entry := func(idx any) *phpjson.Object {
		e := phpjson.NewObject()
		if idx != nil {
			e.Set("index", idx)
		}
		e.Set("item", int64(r.IntN(100)))
		return e
	}
	for round := range 500 {
		o := phpjson.NewObject()
		n := r.IntN(12)
		for range n {
			i := r.IntN(15) - 2
			key := strconv.Itoa(i)
			var idx any = int64(i)
			switch r.IntN(20) {
			case 0:
				key = "0" + key
			case 1:
				key = "x"
			case 2:
				idx = int64(i + 1)
			case 3:
				idx = nil
			case 4:
				idx = strconv.Itoa(i)
			case 5:
				o.Set(key, "not an entry")
				continue
			}
			o.Set(key, entry(idx))
		}
		want := mustJSON(rebuiltEntries(o))
		before := mustJSON(o)
		got := normalizeEntries(o, nil)
		require.Equal(t, string(want), string(mustJSON(got)), "round %d: %s", round, before)
		if keyedEntries(o, false) != nil {
			known := normalizeEntries(o, func(*phpjson.Object) bool { return true })
			require.Equal(t, string(want), string(mustJSON(known)), "round %d, known keyed: %s", round, before)
		}
		got.Set("99", entry(int64(99)))
		require.Equal(t, string(before), string(mustJSON(o)), "round %d: the stored array changed", round)
	}
}

func mustJSON(v any) []byte {
	b, err := phpjson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
