package phpjson

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A document of recurring short strings decodes, once its words were
// seen twice, into the object, its keys and its values and nothing else:
// its keys and string values come from the intern table.
func TestDecodeRecurringWordsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are random under the race detector")
	}
	doc := []byte(`{"type":"single","handler":"send_mail","queue":"default","name":"step one"}`)
	for range 2 {
		if _, err := DecodeObject(doc); err != nil {
			t.Fatal(err)
		}
	}
	var sink *Object
	got := testing.AllocsPerRun(200, func() { sink, _ = DecodeObject(doc) })
	if got > 3 {
		t.Fatalf("DecodeObject of seen words: %v allocations, want at most 3 (the object, its keys, its values)", got)
	}
	if v, _ := sink.Get("handler"); v != "send_mail" {
		t.Fatalf("handler = %v", v)
	}
}

// The table keeps a string on its second sighting, never on its first,
// and hands back the same text; strings too long are never kept.
func TestInternKeepsOnSecondSighting(t *testing.T) {
	// A word no earlier run kept (go test -count=2 runs this again in
	// the same process, whose table keeps what the first run kept).
	w := []byte(fmt.Sprintf("seen twice %d", time.Now().UnixNano()))
	w = w[:min(len(w), internMaxLen)]
	if e := interned(w); e != nil {
		t.Fatalf("kept on first sighting: %q", e.s)
	}
	e := interned(w)
	if e == nil || e.s != string(w) || e.v != any(string(w)) {
		t.Fatalf("second sighting: %+v", e)
	}
	if again := interned(w); again != e {
		t.Fatalf("third sighting: a new entry")
	}
	long := []byte(`["this string is longer than the table keeps, by far"]`)
	for range 3 {
		v, err := Decode(long)
		if err != nil || v.([]any)[0] != "this string is longer than the table keeps, by far" {
			t.Fatalf("long string: %v, %v", v, err)
		}
	}
}

// Decodings running at once share the table and each get their own
// texts right (run with -race).
func TestInternConcurrentDecoding(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := fmt.Sprintf("k%d", (i*7+g)%300)
				v := fmt.Sprintf("v%d", (i*13+g)%500)
				doc := []byte(`{"` + k + `":"` + v + `","type":"single"}`)
				o, err := DecodeObject(doc)
				if err != nil {
					t.Error(err)
					return
				}
				if got, _ := o.Get(k); got != v {
					t.Errorf("%s: got %v, want %s", doc, got, v)
					return
				}
				if got, _ := o.Get("type"); got != "single" {
					t.Errorf("%s: type %v", doc, got)
					return
				}
			}
		})
	}
	wg.Wait()
}
