package dispatch

// This file finds the twin of a unique job: a pending or processing job of
// the same handler whose payload is the same JSON object, whatever the
// order of its keys.
//
// Queuety PHP stores sha256(json_encode($payload)) in payload_hash and
// looks a unique dispatch up by that hash, so the hash depends on the
// order in which the PHP code built its array, while Go writes maps with
// their keys sorted. A Go unique dispatch therefore looks up the hashes of
// every key order of its payload (every object at every depth; list
// elements keep their order), through the (handler, payload_hash, status)
// index, when there are at most maxUniqueOrders of them; beyond that it
// reads the handler's pending and processing unique jobs of the same
// payload length and compares their payloads with keys sorted. Go still
// writes its own hash over the bytes it stores, as PHP does, so a PHP
// dispatch finds a Go job when the PHP array lists the keys in the order
// Go wrote them.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/store/driver"
)

// maxUniqueOrders bounds the key orders of a payload that a unique dispatch
// looks up by hash: 6 keys in one object, or 3 and 3 in two, for example.
const maxUniqueOrders = 720

// uniquePayload is what a unique dispatch matches other jobs' payloads by.
type uniquePayload struct {
	// canon is the payload with every object's keys sorted (PHP's
	// encoding): equal for payloads that differ only in key order.
	canon string
	// hashes are the payload hashes of every key order of the payload,
	// the stored one first; nil when there are more than maxUniqueOrders.
	hashes []string
}

// uniqueKey reads a payload for the twin search. A payload that does not
// decode (never one the engine encoded) matches by its own hash only.
func uniqueKey(payload []byte, hash string) uniquePayload {
	doc, err := phpjson.Decode(payload)
	if err != nil {
		return uniquePayload{canon: string(payload), hashes: []string{hash}}
	}
	u := uniquePayload{canon: string(canonicalJSON(doc, payload))}
	orders, ok := keyOrders(doc, maxUniqueOrders)
	if !ok {
		return u
	}
	u.hashes = make([]string, 0, len(orders))
	u.hashes = append(u.hashes, hash)
	for _, b := range orders {
		sum := sha256.Sum256(b)
		if h := hex.EncodeToString(sum[:]); h != hash {
			u.hashes = append(u.hashes, h)
		}
	}
	return u
}

// canonicalJSON encodes doc with every object's keys sorted as Go sorts
// map keys (numerically when all are integers, so an object whose keys are
// 0..n-1 becomes a list, as in PHP). fallback is returned when doc does
// not encode.
func canonicalJSON(doc any, fallback []byte) []byte {
	b, err := phpjson.Marshal(withSortedKeys(doc))
	if err != nil {
		return fallback
	}
	return b
}

// withSortedKeys returns v with the keys of every object in it sorted.
func withSortedKeys(v any) any {
	switch x := v.(type) {
	case *phpjson.Object:
		return phpjson.ObjectFromMap(x.ToMap())
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withSortedKeys(e)
		}
		return out
	}
	return v
}

// findActiveTwin returns the id of the oldest pending or processing unique
// job of handler whose payload equals u's whatever its key order, or 0.
func findActiveTwin(ctx context.Context, tx driver.Tx, handler string, payload []byte, hash string, u uniquePayload) (int64, error) {
	if u.hashes != nil {
		return tx.JobFindActiveByHash(ctx, handler, u.hashes...)
	}
	if id, err := tx.JobFindActiveByHash(ctx, handler, hash); id != 0 || err != nil {
		return id, err
	}
	candidates, err := tx.JobFindActiveUnique(ctx, handler, len(payload))
	if err != nil {
		return 0, err
	}
	for _, c := range candidates {
		doc, err := phpjson.Decode(c.Payload)
		if err != nil {
			continue
		}
		if bytes.Equal(canonicalJSON(doc, c.Payload), []byte(u.canon)) {
			return c.ID, nil
		}
	}
	return 0, nil
}

// keyOrders returns the encodings of v (PHP's json_encode of the decoded
// value) in every order of the keys of every object in it, or false when
// there are more than limit. The order v has comes first. An object whose
// keys come out as 0..n-1 in order is written as a list, as PHP writes
// such an array.
func keyOrders(v any, limit int) ([][]byte, bool) {
	switch x := v.(type) {
	case *phpjson.Object:
		keys := x.Keys()
		n := len(keys)
		if n == 0 {
			return [][]byte{[]byte("[]")}, true
		}
		total := 1
		for i := 2; i <= n; i++ {
			if total *= i; total > limit {
				return nil, false
			}
		}
		kids := make([][][]byte, n)
		names := make([][]byte, n)
		for i, k := range keys {
			val, _ := x.Get(k)
			enc, ok := keyOrders(val, limit/total)
			if !ok {
				return nil, false
			}
			if total *= len(enc); total > limit {
				return nil, false
			}
			kids[i] = enc
			name, err := phpjson.Marshal(k)
			if err != nil {
				return nil, false
			}
			names[i] = name
		}
		var out [][]byte
		permutations(n, func(perm []int) {
			order := make([]string, n)
			for i, p := range perm {
				order[i] = keys[p]
			}
			list := phpjson.ListKeys(order)
			products(perm, kids, func(parts [][]byte) {
				var b bytes.Buffer
				b.WriteByte("{["[btoi(list)])
				for i, p := range perm {
					if i > 0 {
						b.WriteByte(',')
					}
					if !list {
						b.Write(names[p])
						b.WriteByte(':')
					}
					b.Write(parts[i])
				}
				b.WriteByte("}]"[btoi(list)])
				out = append(out, b.Bytes())
			})
		})
		return out, true
	case []any:
		kids := make([][][]byte, len(x))
		perm := make([]int, len(x))
		total := 1
		for i, e := range x {
			enc, ok := keyOrders(e, limit/total)
			if !ok {
				return nil, false
			}
			if total *= len(enc); total > limit {
				return nil, false
			}
			kids[i], perm[i] = enc, i
		}
		var out [][]byte
		products(perm, kids, func(parts [][]byte) {
			out = append(out, append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']'))
		})
		return out, true
	default:
		b, err := phpjson.Marshal(v)
		if err != nil {
			return nil, false
		}
		return [][]byte{b}, true
	}
}

// permutations calls f with every permutation of 0..n-1, the identity
// first (Heap's algorithm). f must not keep perm.
func permutations(n int, f func(perm []int)) {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			f(perm)
			return
		}
		for i := 0; i < k-1; i++ {
			gen(k - 1)
			if k%2 == 0 {
				perm[i], perm[k-1] = perm[k-1], perm[i]
			} else {
				perm[0], perm[k-1] = perm[k-1], perm[0]
			}
		}
		gen(k - 1)
	}
	gen(n)
}

// products calls f with every choice of one encoding per position of
// order (kids[order[i]] for position i), the first encodings first. f
// must not keep parts.
func products(order []int, kids [][][]byte, f func(parts [][]byte)) {
	parts := make([][]byte, len(order))
	var gen func(i int)
	gen = func(i int) {
		if i == len(order) {
			f(parts)
			return
		}
		for _, enc := range kids[order[i]] {
			parts[i] = enc
			gen(i + 1)
		}
	}
	gen(0)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
