// Package sweep holds the finders of the engine's sweeps: one batch of
// each sweep per call. A batch reads the rows that are due through the
// store's indexes (with SELECT ... FOR UPDATE SKIP LOCKED, so concurrent
// sweepers take disjoint rows, or re-checked under the row lock) and hands
// each to the engine's transition for it (internal/engine/sweepsteps.go
// and the files it names), in the batch's transaction. The engine decides
// what happens to a row; this package decides which rows are looked at.
//
// Package deadline runs these batches on a schedule, repeating each until
// a batch comes back short, and is what users see (deadline.Sweeper). The
// batches live here, not inside deadline, because Client.RecoverStale and
// the conformance suite (store/storetest) run single batches too, and Go
// lets only deadline's own subtree import deadline/internal.
package sweep
