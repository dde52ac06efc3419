// Package jobruntime holds the format of the runtime object a job's
// payload carries under __queuety_runtime: its attempt limit, its backoff
// (a strategy name, a list of seconds or an exponential policy), its
// activity timeouts and its rate limit, as Queuety PHP writes and reads
// them, followed by the Go engine's own keys. It also holds the backoff
// policies themselves and their validation.
//
// The rules here touch no row: the engine reads a claimed job's policy
// with Parse and writes a new job's with Options.Encode, inside its own
// transactions.
package jobruntime
