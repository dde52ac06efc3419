package interop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
)

// TestLiveUniqueAcrossKeyOrders dispatches unique jobs from real Queuety
// PHP and from Go on one set of tables, with the same payloads built in
// different key orders.
//
// Go finds PHP's pending job whatever the order PHP's array was built in
// (nested objects too, and a payload of eight keys, which Go compares by
// content instead of looking up all 40,320 orders' hashes). PHP finds
// Go's pending job when its array lists the keys in the order Go wrote
// them: sorted for a Go map, as given for a struct or json.RawMessage.
// PHP compares the sha256 of its own json_encode output, so an array in
// another order makes a second job: the one case no Go change can reach.
func TestLiveUniqueAcrossKeyOrders(t *testing.T) {
	ctx := context.Background()
	c, php := newLive(t)
	phpUnique := func(handler, array string) int64 {
		t.Helper()
		var out struct {
			ID int64 `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(php.eval(
			`echo json_encode(['id' => \Queuety\Queuety::dispatch('`+handler+`', `+array+`)->unique()->id()]);`)), &out))
		require.NotZero(t, out.ID, "PHP's job id")
		return out.ID
	}
	goUnique := func(handler string, payload any) int64 {
		t.Helper()
		id, err := c.Dispatch(ctx, handler, payload, queuety.Unique())
		require.NoError(t, err)
		return id
	}

	// PHP first: Go finds PHP's job in any key order.
	reindex := phpUnique("reindex", `['site' => 'b', 'post' => ['tags' => ['x', 'y'], 'id' => 3]]`)
	assert.Equal(t, reindex, goUnique("reindex", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"x", "y"}}, "site": "b"}),
		"Go (a map: keys sorted) finds PHP's job")
	assert.Equal(t, reindex, goUnique("reindex", json.RawMessage(`{"post":{"tags":["x","y"],"id":3},"site":"b"}`)),
		"Go (a third order) finds PHP's job")
	assert.NotEqual(t, reindex, goUnique("reindex", queuety.State{"post": queuety.State{"id": 3, "tags": []string{"y", "x"}}, "site": "b"}),
		"list order counts")
	escaped := phpUnique("fetch", `['url' => 'https://example.test/ü?q=1', 'ratio' => 1.5, 'tries' => 2]`)
	assert.Equal(t, escaped, goUnique("fetch", queuety.State{"tries": 2, "ratio": 1.5, "url": "https://example.test/ü?q=1"}),
		"escaped slashes, non-ASCII and floats encode as in PHP")
	wide := phpUnique("wide", `['h' => 8, 'g' => 7, 'f' => 6, 'e' => 5, 'd' => 4, 'c' => 3, 'b' => 2, 'a' => 1]`)
	assert.Equal(t, wide, goUnique("wide", queuety.State{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8}),
		"Go finds PHP's job with eight keys in another order")

	// Go first: PHP finds Go's job when its array has Go's key order.
	digest := goUnique("digest", queuety.State{"user": 7, "day": "mon"}) // stored {"day":"mon","user":7}
	assert.Equal(t, digest, phpUnique("digest", `['day' => 'mon', 'user' => 7]`), "PHP, keys in Go's (sorted) order, finds Go's job")
	notify := goUnique("notify", json.RawMessage(`{"user":7,"day":"mon"}`))
	assert.Equal(t, notify, phpUnique("notify", `['user' => 7, 'day' => 'mon']`), "PHP finds Go's job written in PHP's order")
	type note struct {
		User int    `json:"user"`
		Day  string `json:"day"`
	}
	remind := goUnique("remind", note{7, "mon"})
	assert.Equal(t, remind, phpUnique("remind", `['user' => 7, 'day' => 'mon']`), "PHP finds Go's struct payload in field order")
	// The bound: PHP compares its own bytes.
	second := phpUnique("digest", `['user' => 7, 'day' => 'mon']`)
	assert.NotEqual(t, digest, second, "PHP, keys in another order than Go wrote, does not find Go's job")
	assert.Equal(t, digest, goUnique("digest", json.RawMessage(`{"user":7,"day":"mon"}`)), "Go finds the oldest of the two")

	jobs, err := c.ListJobs(ctx, driver.JobFilter{Limit: 100})
	require.NoError(t, err)
	assert.Len(t, jobs, 8, "jobs written: reindex (twice: two list orders), fetch, wide, digest (twice), notify, remind")
}
