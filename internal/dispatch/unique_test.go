package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/phpjson"
)

// TestKeyOrders checks the encodings a unique dispatch looks up: every
// key order of every object, as PHP's json_encode writes each (an object
// whose keys come out 0..n-1 as a list), the stored order first, each
// once, and none when there are too many.
func TestKeyOrders(t *testing.T) {
	orders := func(src string, limit int) ([]string, bool) {
		t.Helper()
		doc, err := phpjson.Decode([]byte(src))
		require.NoError(t, err)
		enc, ok := keyOrders(doc, limit)
		var out []string
		for _, b := range enc {
			out = append(out, string(b))
		}
		return out, ok
	}
	got, ok := orders(`{"b":1,"a":{"y":"\/","x":[{"q":1,"p":2.0}]}}`, maxUniqueOrders)
	require.True(t, ok)
	assert.Equal(t, `{"b":1,"a":{"y":"\/","x":[{"q":1,"p":2}]}}`, got[0], "the stored order first")
	assert.ElementsMatch(t, []string{
		`{"b":1,"a":{"y":"\/","x":[{"q":1,"p":2}]}}`, `{"b":1,"a":{"y":"\/","x":[{"p":2,"q":1}]}}`,
		`{"b":1,"a":{"x":[{"q":1,"p":2}],"y":"\/"}}`, `{"b":1,"a":{"x":[{"p":2,"q":1}],"y":"\/"}}`,
		`{"a":{"y":"\/","x":[{"q":1,"p":2}]},"b":1}`, `{"a":{"y":"\/","x":[{"p":2,"q":1}]},"b":1}`,
		`{"a":{"x":[{"q":1,"p":2}],"y":"\/"},"b":1}`, `{"a":{"x":[{"p":2,"q":1}],"y":"\/"},"b":1}`,
	}, got, "2 × 2 × 2 orders")

	got, ok = orders(`{"1":"b","0":"a"}`, maxUniqueOrders)
	require.True(t, ok)
	assert.Equal(t, []string{`{"1":"b","0":"a"}`, `["a","b"]`}, got, "keys 0, 1 in order are a list in PHP")

	got, ok = orders(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`, maxUniqueOrders)
	require.True(t, ok)
	assert.Len(t, got, 720, "six keys")
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), 720, "distinct orders")
	_, ok = orders(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}`, maxUniqueOrders)
	assert.False(t, ok, "seven keys: 5040 orders")
	_, ok = orders(`{"a":1,"b":2,"c":3,"d":{"x":1,"y":2,"z":3}}`, maxUniqueOrders)
	assert.True(t, ok, "24 × 6 orders")
	_, ok = orders(`{"a":1,"b":2,"c":3,"d":{"v":0,"x":1,"y":2,"z":3}}`, maxUniqueOrders)
	assert.True(t, ok, "24 × 24 orders")
	_, ok = orders(`{"a":1,"b":2,"c":3,"d":{"v":0,"w":0,"x":1,"y":2,"z":3}}`, maxUniqueOrders)
	assert.False(t, ok, "24 × 120 orders")
	_, ok = orders(`{"l":[{"a":1,"b":2,"c":3},{"a":1,"b":2,"c":3},{"a":1,"b":2,"c":3},{"a":1,"b":2,"c":3}]}`, maxUniqueOrders)
	assert.False(t, ok, "6 × 6 × 6 × 6 orders in a list")
}

// TestKeyOrdersStartWithTheStoredBytes: the first encoding is the one the
// engine stores, whatever the payload holds.
func TestKeyOrdersStartWithTheStoredBytes(t *testing.T) {
	for _, src := range []string{`[]`, `{"a":[]}`, `{"é":"ü","n":null,"t":true,"f":-1.5e-7,"i":9007199254740993}`,
		`{"l":[1,[2,{"b":1,"a":2}],{}],"s":"<&>'"}`, `{"0":"x","1":"y"}`} {
		doc, err := phpjson.Decode([]byte(src))
		require.NoError(t, err, src)
		stored, err := phpjson.Marshal(doc)
		require.NoError(t, err, src)
		enc, ok := keyOrders(doc, maxUniqueOrders)
		require.True(t, ok, src)
		assert.Equal(t, string(stored), string(enc[0]), src)
	}
}

// TestUniqueKeyMatchesAcrossKeyOrders: payloads that differ only in key
// order share the canonical form and each other's hashes; a different
// value does not.
func TestUniqueKeyMatchesAcrossKeyOrders(t *testing.T) {
	key := func(src string) uniquePayload {
		sum := sha256.Sum256([]byte(src))
		return uniqueKey([]byte(src), hex.EncodeToString(sum[:]))
	}
	hashOf := func(src string) string {
		sum := sha256.Sum256([]byte(src))
		return hex.EncodeToString(sum[:])
	}
	a, b := key(`{"user":7,"post":{"id":3,"tags":["x","y"]}}`), key(`{"post":{"tags":["x","y"],"id":3},"user":7}`)
	assert.Equal(t, a.canon, b.canon, "canonical form")
	assert.Equal(t, hashOf(`{"user":7,"post":{"id":3,"tags":["x","y"]}}`), a.hashes[0], "the stored hash first")
	assert.Contains(t, a.hashes, hashOf(`{"post":{"tags":["x","y"],"id":3},"user":7}`), "the other order's hash")
	assert.Len(t, a.hashes, 4, "hashes")
	c := key(`{"post":{"tags":["y","x"],"id":3},"user":7}`)
	assert.NotEqual(t, a.canon, c.canon, "list order matters")
	assert.NotContains(t, a.hashes, c.hashes[0], "list order matters")

	big := key(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}`)
	assert.Nil(t, big.hashes, "too many orders: compared by canonical form")
	assert.Equal(t, big.canon, key(`{"g":7,"f":6,"e":5,"d":4,"c":3,"b":2,"a":1}`).canon, "canonical form")
}
