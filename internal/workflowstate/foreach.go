package workflowstate

import (
	"sort"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/internal/workflowdef"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// A for_each step's runtime lives in the workflow's private state,
// _for_each_steps[step index], exactly as Queuety keeps it:
//
//	{"initialized": true, "items": [...], "results": {index: entry},
//	 "failures": {index: entry}, "winner_index": n|null, "settled": bool}
//
// The engine records each branch's entry under the workflow's row lock;
// the rules here say when the step is satisfied or cannot be, and what it
// merges when it settles.

// ForEach is one for-each step's runtime, normalised as Queuety's
// normalize_for_each_runtime does.
type ForEach struct {
	Obj      *phpjson.Object // the runtime object as stored
	Items    []any           // the items the step fans out over
	Results  *phpjson.Object // int-keyed entries of the branches that succeeded
	Failures *phpjson.Object // int-keyed entries of the branches that failed
}

// LoadForEach returns the _for_each_steps array and the runtime of step
// idx, or nil when the step has not been expanded yet.
func LoadForEach(state *phpjson.Object, idx int) (*phpjson.Object, *ForEach) {
	return LoadForEachKeyed(state, idx, nil)
}

// LoadForEachKeyed is LoadForEach for a state whose results or failures
// arrays may be known to hold only entries keyed by their index, as the
// engine records them (keyed reports which): those are only put in
// order, their entries not read.
func LoadForEachKeyed(state *phpjson.Object, idx int, keyed func(*phpjson.Object) bool) (*phpjson.Object, *ForEach) {
	raw, _ := state.Get("_for_each_steps")
	all := intArray(raw)
	v, _ := all.Get(IntKey(idx))
	o, ok := v.(*phpjson.Object)
	if !ok || !Truthy(o, "initialized") {
		return all, nil
	}
	o = o.Shallow() // every key changed below is set anew: the stored runtime stays as it was
	rt := &ForEach{Obj: o}
	itemsV, _ := o.Get("items")
	rt.Items, _ = ListOf(itemsV)
	if rt.Items == nil {
		rt.Items = []any{}
	}
	o.Set("items", rt.Items)
	r, _ := o.Get("results")
	rt.Results = normalizeEntries(r, keyed)
	o.Set("results", rt.Results)
	f, _ := o.Get("failures")
	rt.Failures = normalizeEntries(f, keyed)
	o.Set("failures", rt.Failures)
	if w, _ := o.Get("winner_index"); w != nil {
		o.Set("winner_index", ToInt(w))
	} else {
		o.Set("winner_index", nil)
	}
	o.Set("settled", Truthy(o, "settled"))
	return all, rt
}

// normalizeEntries keys result or failure entries by their "index" and
// sorts them.
func normalizeEntries(v any, keyed func(*phpjson.Object) bool) *phpjson.Object {
	if o, ok := v.(*phpjson.Object); ok {
		if out := keyedEntries(o, keyed != nil && keyed(o)); out != nil {
			return out
		}
	}
	return rebuiltEntries(v)
}

// rebuiltEntries is normalizeEntries of any stored array: every entry
// keyed anew by its "index", the keys sorted.
func rebuiltEntries(v any) *phpjson.Object {
	in := intArray(v)
	out := phpjson.NewObject()
	for _, k := range in.Keys() {
		e, _ := in.Get(k)
		eo, ok := e.(*phpjson.Object)
		if !ok {
			continue
		}
		key := k
		if iv, ok := eo.Get("index"); ok {
			key = IntKey(int(ToInt(iv)))
		}
		out.Set(key, eo)
	}
	return sortIntArray(out)
}

// keyedEntries is normalizeEntries of an object whose entries are
// already keyed by their index, as the engine stores them: a copy with
// the keys in numeric order, nothing rebuilt. It returns nil for any
// other object, for normalizeEntries to rebuild. known says that o is
// keyed so (the engine recorded it): its entries are not read.
func keyedEntries(o *phpjson.Object, known bool) *phpjson.Object {
	keys := o.Keys()
	sorted := true
	var prev int64
	for i, k := range keys {
		n, ok := phpjson.CanonicalInt(k)
		if !ok {
			return nil
		}
		sorted = sorted && (i == 0 || prev < n)
		prev = n
		if known {
			continue
		}
		e, _ := o.Get(k)
		eo, ok := e.(*phpjson.Object)
		if !ok {
			return nil
		}
		if iv, has := eo.Get("index"); has && ToInt(iv) != n {
			return nil
		}
	}
	if !sorted {
		phpjson.SortKeys(keys) // every key is an integer: numeric order
	}
	return o.WithKeyOrder(keys)
}

// Truthy is PHP's !empty() of o[k].
func Truthy(o *phpjson.Object, k string) bool {
	switch v, _ := o.Get(k); x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	case []any:
		return len(x) > 0
	case *phpjson.Object:
		return x.Len() > 0
	}
	return true
}

// Store writes the runtime back into the state.
func (rt *ForEach) Store(state, all *phpjson.Object, idx int) {
	all.Set(IntKey(idx), rt.Obj)
	state.Set("_for_each_steps", all)
}

// Settled reports whether the step has settled.
func (rt *ForEach) Settled() bool { return Truthy(rt.Obj, "settled") }

// Missing returns the item indexes with neither a result nor a failure.
func (rt *ForEach) Missing() []int {
	var out []int
	for i := range rt.Items {
		_, ok1 := rt.Results.Get(IntKey(i))
		_, ok2 := rt.Failures.Get(IntKey(i))
		if !ok1 && !ok2 {
			out = append(out, i)
		}
	}
	return out
}

// Quorum is the successes a quorum for-each step needs (at least 1).
func Quorum(step *workflowdef.Step) int { return max(1, step.Quorum) }

// Satisfied is Queuety's for_each_completion_satisfied.
func (rt *ForEach) Satisfied(step *workflowdef.Step) bool {
	ok := rt.Results.Len()
	switch step.Mode {
	case queuetytype.ForEachFirstSuccess:
		return ok >= 1
	case queuetytype.ForEachQuorum:
		return ok >= Quorum(step)
	}
	return ok >= len(rt.Items)
}

// Impossible is Queuety's for_each_completion_impossible.
func (rt *ForEach) Impossible(step *workflowdef.Step) bool {
	ok, failed := rt.Results.Len(), rt.Failures.Len()
	remaining := max(0, len(rt.Items)-ok-failed)
	switch step.Mode {
	case queuetytype.ForEachFirstSuccess:
		return remaining == 0 && ok == 0
	case queuetytype.ForEachQuorum:
		return ok+remaining < Quorum(step)
	}
	return failed > 0
}

// Aggregate builds the object stored under the result key (Queuety's
// build_for_each_aggregate).
func (rt *ForEach) Aggregate(step *workflowdef.Step) *phpjson.Object {
	results := entriesByIndex(rt.Results)
	failures := entriesByIndex(rt.Failures)
	var winner any
	if w, _ := rt.Obj.Get("winner_index"); w != nil {
		for _, e := range results {
			if iv, _ := e.(*phpjson.Object).Get("index"); ToInt(iv) == ToInt(w) {
				winner = e
				break
			}
		}
	}
	a := phpjson.NewObject()
	mode, ok := step.Raw.Get("mode")
	if !ok || mode == nil {
		mode = queuetytype.ForEachAll
	}
	a.Set("mode", mode)
	q, _ := step.Raw.Get("quorum")
	a.Set("quorum", q)
	a.Set("total", int64(len(rt.Items)))
	a.Set("succeeded", int64(len(results)))
	a.Set("failed", int64(len(failures)))
	a.Set("settled", true)
	a.Set("winner", winner)
	a.Set("results", results)
	a.Set("failures", failures)
	return a
}

// entriesByIndex returns an entry array's values sorted by their index.
func entriesByIndex(a *phpjson.Object) []any {
	out, _ := ListOf(a)
	sort.SliceStable(out, func(i, j int) bool { return entryIndex(out[i]) < entryIndex(out[j]) })
	if out == nil {
		out = []any{}
	}
	return out
}

func entryIndex(e any) int64 {
	if o, ok := e.(*phpjson.Object); ok {
		v, _ := o.Get("index")
		return ToInt(v)
	}
	return 0
}

// DecodeForEachResult is the typed view of an aggregate object.
func DecodeForEachResult(a *phpjson.Object) queuetytype.ForEachResult {
	r := queuetytype.ForEachResult{Mode: workflowdef.String(a, "mode"), Quorum: int(workflowdef.Int(a, "quorum")), Total: int(workflowdef.Int(a, "total")),
		Succeeded: int(workflowdef.Int(a, "succeeded")), Failed: int(workflowdef.Int(a, "failed"))}
	branch := func(v any) queuetytype.ForEachBranch {
		o, _ := v.(*phpjson.Object)
		if o == nil {
			return queuetytype.ForEachBranch{}
		}
		item, _ := o.Get("item")
		b := queuetytype.ForEachBranch{Index: int(workflowdef.Int(o, "index")), Item: Plain(item), JobID: workflowdef.Int(o, "job_id"), Output: map[string]any{}}
		if out, ok := o.Get("output"); ok {
			if oo, ok := out.(*phpjson.Object); ok {
				b.Output = oo.ToMap()
			}
		}
		return b
	}
	if w, _ := a.Get("winner"); w != nil {
		b := branch(w)
		r.Winner = &b
	}
	rs, _ := a.Get("results")
	list, _ := ListOf(rs)
	for _, e := range list {
		r.Results = append(r.Results, branch(e))
	}
	fs, _ := a.Get("failures")
	list, _ = ListOf(fs)
	for _, e := range list {
		o, _ := e.(*phpjson.Object)
		if o == nil {
			continue
		}
		item, _ := o.Get("item")
		r.Failures = append(r.Failures, queuetytype.ForEachFailure{Index: int(workflowdef.Int(o, "index")), Item: Plain(item),
			Error: workflowdef.String(o, "error_message"), JobID: workflowdef.Int(o, "job_id")})
	}
	return r
}

// BranchMeta reads the __for_each payload of a branch job row.
func BranchMeta(row *driver.Job) (item any, index int, ok bool) {
	doc, err := DecodeObject("payload", row.Payload)
	if err != nil {
		return nil, 0, false
	}
	return BranchMetaOf(doc)
}

// BranchMetaOf is BranchMeta of a branch job's payload already decoded.
func BranchMetaOf(doc *phpjson.Object) (item any, index int, ok bool) {
	v, _ := doc.Get(ForEachKey)
	m, isObj := v.(*phpjson.Object)
	if !isObj {
		return nil, 0, false
	}
	iv, has := m.Get("item_index")
	if !has {
		return nil, 0, false
	}
	item, _ = m.Get("item")
	return item, int(ToInt(iv)), true
}

// ResetForEachForRetry clears a for-each step's failures and settled flag
// so that a retried workflow re-expands only the branches that did not
// succeed (Queuety's retry_workflow).
func ResetForEachForRetry(state *phpjson.Object, idx int) {
	raw, _ := state.Get("_for_each_steps")
	all := intArray(raw)
	v, _ := all.Get(IntKey(idx))
	o, ok := v.(*phpjson.Object)
	if !ok {
		return
	}
	o = o.Shallow() // every key changed below is set anew: the stored runtime stays as it was
	o.Set("failures", []any{})
	o.Set("settled", false)
	all.Set(IntKey(idx), o)
	state.Set("_for_each_steps", all)
}

// Plain converts a decoded JSON tree into Plain Go values for handlers.
func Plain(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		return x.ToMap()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	}
	return v
}

// ForEachKey is the payload key of a for-each branch job: its item and
// index.
const ForEachKey = "__for_each"
