package advance

import (
	"bytes"
	"testing"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// TestStateCacheKeepsTheVersionBefore: a state is cached as its
// transaction commits, while claims may still read the version before
// it; both are found, a claim's decode of the older one does not push
// the newer one out, and a third version drops the first.
func TestStateCacheKeepsTheVersionBefore(t *testing.T) {
	version := func(b byte) (*driver.Workflow, *phpjson.Object) {
		raw := bytes.Repeat([]byte{b}, minCachedState)
		return &driver.Workflow{ID: 7, State: raw}, phpjson.NewObject()
	}
	var c stateCache
	wf1, s1 := version('1')
	wf2, s2 := version('2')
	wf3, s3 := version('3')
	hit := func(wf *driver.Workflow, want *phpjson.Object) bool {
		got, _, ok := c.get(wf)
		return ok && got == want
	}
	c.put(7, wf1.State, s1, nil)
	c.put(7, wf2.State, s2, nil)
	if !hit(wf1, s1) || !hit(wf2, s2) {
		t.Fatal("the version before and the new one are both cached")
	}
	c.put(7, wf1.State, phpjson.NewObject(), nil) // a claim decoded the version before again
	if !hit(wf2, s2) || !hit(wf1, s1) {
		t.Fatal("decoding the version before again changed the cache")
	}
	keyed := phpjson.NewObject()
	c.put(7, wf2.State, phpjson.NewObject(), nil, keyed)
	if k := c.keyed(wf2); k == nil || !k(keyed) {
		t.Fatal("a version put again with its keyed arrays replaces the one without")
	}
	c.put(7, wf3.State, s3, nil)
	if !hit(wf3, s3) || hit(wf1, s1) {
		t.Fatal("a third version keeps the second and drops the first")
	}
	if _, _, ok := c.get(wf2); !ok {
		t.Fatal("the second version is the one before the third")
	}
}
