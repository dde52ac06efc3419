package queuetytest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/queuety"
)

// recorder is a testing.TB that records failures instead of failing, so
// tests can check that an assertion fails and what it says. Fatal calls do
// not stop the caller; the assertions return right after them.
type recorder struct {
	testing.TB // the real test, for Cleanup and Name

	mu     sync.Mutex
	errors []string
	fatals int
}

func newRecorder(t *testing.T) *recorder { return &recorder{TB: t} }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fatals++
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) FailNow() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fatals++
}

func (r *recorder) Fail() { r.Errorf("Fail called") }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errors) > 0 || r.fatals > 0
}

// message returns the one failure recorded, and fails t unless there was
// exactly one and it was fatal.
func (r *recorder) message(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.errors, 1, "recorded failures")
	require.Equal(t, 1, r.fatals, "fatal failures")
	return r.errors[0]
}

// requireFails runs an assertion against a recorder and returns its
// message, failing t unless the assertion failed once, fatally, with a
// message containing each of want.
func requireFails(t *testing.T, assertion func(tb testing.TB), want ...string) string {
	t.Helper()
	rec := newRecorder(t)
	assertion(rec)
	msg := rec.message(t)
	for _, w := range want {
		require.Contains(t, msg, w)
	}
	return msg
}

// requirePasses runs an assertion against a recorder and fails t if it
// failed.
func requirePasses(t *testing.T, assertion func(tb testing.TB)) {
	t.Helper()
	rec := newRecorder(t)
	assertion(rec)
	require.False(t, rec.Failed(), "assertion failed: %s", strings.Join(rec.errors, "\n"))
}

// step returns a step handler that merges out.
func step(out queuety.State) queuety.StepFunc {
	return func(context.Context, queuety.State) (queuety.State, error) { return out, nil }
}
