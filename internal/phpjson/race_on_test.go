//go:build race

package phpjson

// raceEnabled is set when the tests run under the race detector, whose
// sync.Pool drops a quarter of what it is handed on purpose.
const raceEnabled = true
