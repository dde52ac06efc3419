package phpjson

import (
	"maps"
	"slices"
)

// Object is a JSON object that keeps its keys in insertion order, like a PHP
// array. The zero value is an empty object ready to use. An Object is not safe
// for concurrent use when one goroutine writes.
//
// Its values sit beside its keys, in the same order; an object of more
// than indexFrom keys also keeps an index from key to position. Most
// objects of a workflow's state (a step's definition, its outputs, the
// runtime entries) have a handful of keys, which a scan finds faster
// than a map and without the map's allocation.
type Object struct {
	keys []string
	vals []any // vals[i] is the value of keys[i]
	// idx maps every key to its position when len(keys) > indexFrom,
	// and is nil otherwise.
	idx map[string]int
}

// indexFrom is the most keys an Object finds by scanning its keys.
const indexFrom = 16

// NewObject returns an empty Object.
func NewObject() *Object {
	return &Object{}
}

// newObject returns an Object of keys and vals, which it takes; keys
// holds no key twice.
func newObject(keys []string, vals []any) *Object {
	o := &Object{keys: keys, vals: vals}
	o.reindex()
	return o
}

// reindex rebuilds idx after keys changed other than by an append.
func (o *Object) reindex() {
	if len(o.keys) <= indexFrom {
		o.idx = nil
		return
	}
	o.idx = make(map[string]int, len(o.keys))
	for i, k := range o.keys {
		o.idx[k] = i
	}
}

// find returns the position of key, or -1.
func (o *Object) find(key string) int {
	if o.idx != nil {
		if i, ok := o.idx[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range o.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// Len returns the number of keys. A nil *Object has length 0.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Keys returns a copy of the keys in order (nil for a nil *Object).
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return append([]string{}, o.keys...)
}

// Get returns the value stored under key and whether the key exists.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	if i := o.find(key); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// Set stores v under key. An existing key keeps its position, as a PHP array
// assignment does; a new key is appended.
func (o *Object) Set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.vals[i] = v
		return
	}
	if cap(o.keys) == 0 {
		// Room for a small object's keys at once, instead of growing
		// both slices key by key.
		o.keys, o.vals = make([]string, 0, 4), make([]any, 0, 4)
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	switch {
	case o.idx != nil:
		o.idx[key] = len(o.keys) - 1
	case len(o.keys) > indexFrom:
		o.reindex()
	}
}

// Delete removes key, if present, keeping the order of the remaining keys.
func (o *Object) Delete(key string) {
	if o == nil {
		return
	}
	i := o.find(key)
	if i < 0 {
		return
	}
	o.keys = slices.Delete(o.keys, i, i+1)
	o.vals = slices.Delete(o.vals, i, i+1)
	o.reindex()
}

// Shallow returns a copy of o whose values are o's own: setting or
// deleting a key of the copy leaves o as it was, changing a nested value
// changes both. Shallow of a nil *Object is nil.
func (o *Object) Shallow() *Object {
	if o == nil {
		return nil
	}
	return &Object{keys: slices.Clone(o.keys), vals: slices.Clone(o.vals), idx: maps.Clone(o.idx)}
}

// WithKeyOrder returns a copy of o, as Shallow does, whose keys are in
// the order of keys, which must hold every key of o exactly once; o
// keeps its order.
func (o *Object) WithKeyOrder(keys []string) *Object {
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i], _ = o.Get(k)
	}
	return newObject(keys, vals)
}

// Filter returns a copy of o's top level with only the keys keep
// accepts, in o's order; its values are o's own (as Shallow's). Filter of
// a nil *Object is an empty Object.
func (o *Object) Filter(keep func(key string) bool) *Object {
	if o == nil {
		return NewObject()
	}
	keys, vals := make([]string, 0, len(o.keys)), make([]any, 0, len(o.keys))
	for i, k := range o.keys {
		if keep(k) {
			keys = append(keys, k)
			vals = append(vals, o.vals[i])
		}
	}
	if len(keys) == 0 {
		return NewObject()
	}
	return newObject(keys, vals)
}

// FilterMap is Filter(keep).ToMap() without the intermediate Object.
func (o *Object) FilterMap(keep func(key string) bool) map[string]any {
	if o == nil {
		return map[string]any{}
	}
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		if keep(k) {
			m[k] = toMapValue(o.vals[i])
		}
	}
	return m
}

// Clone returns a deep copy of o. Nested *Object and []any values are copied
// recursively; other values are shared. Clone of a nil *Object is nil.
func (o *Object) Clone() *Object {
	if o == nil {
		return nil
	}
	c := &Object{keys: slices.Clone(o.keys), vals: make([]any, len(o.vals)), idx: maps.Clone(o.idx)}
	if o.vals == nil {
		c.vals = nil
	}
	for i, v := range o.vals {
		c.vals[i] = cloneValue(v)
	}
	return c
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case *Object:
		return x.Clone()
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}

// ToMap returns the contents of o as a map, converting nested *Object values
// (also inside []any) to map[string]any. Key order is lost. ToMap of a nil
// *Object is nil.
func (o *Object) ToMap() map[string]any {
	if o == nil {
		return nil
	}
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		m[k] = toMapValue(o.vals[i])
	}
	return m
}

func toMapValue(v any) any {
	switch x := v.(type) {
	case *Object:
		if x == nil {
			return nil
		}
		return x.ToMap()
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = toMapValue(e)
		}
		return c
	}
	return v
}

// ObjectFromMap builds an Object from m. Go maps have no order, so the keys
// are sorted: numerically when every key is a decimal integer in PHP's
// canonical form (such as "-3", "0", "10"), otherwise bytewise. Nested
// map[string]any values, also inside []any, become *Object the same way.
func ObjectFromMap(m map[string]any) *Object {
	return objectOfMap(m, fromMapValue)
}

// objectOfMap returns an Object of m's members with its keys in SortKeys
// order, each value passed through conv when conv is not nil.
func objectOfMap(m map[string]any, conv func(any) any) *Object {
	keys := sortedMapKeys(m)
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
		if conv != nil {
			vals[i] = conv(vals[i])
		}
	}
	return newObject(keys, vals)
}

func fromMapValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return ObjectFromMap(x)
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = fromMapValue(e)
		}
		return c
	}
	return v
}

// MarshalJSON returns the same bytes as Marshal(o). Note that when it is
// called by encoding/json, that package re-compacts the result and escapes
// "<", ">" and "&"; use Marshal when the exact bytes matter.
func (o *Object) MarshalJSON() ([]byte, error) {
	return Marshal(o)
}

// UnmarshalJSON replaces the contents of o with the decoded object, following
// the rules of DecodeObject. As is conventional for encoding/json, the
// literal null leaves o unchanged.
func (o *Object) UnmarshalJSON(data []byte) error {
	if isNullLiteral(data) {
		return nil
	}
	n, err := DecodeObject(data)
	if err != nil {
		return err
	}
	*o = *n
	return nil
}

func isNullLiteral(data []byte) bool {
	d := decoder{data: data}
	d.skipWS()
	if !d.literal("null") {
		return false
	}
	d.skipWS()
	return d.pos == len(d.data)
}
