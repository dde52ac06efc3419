package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/admission"
	"github.com/queuety/queuety-go/internal/testdb/migrated"
	"github.com/queuety/queuety-go/store/driver"
)

var now = time.Date(2031, 4, 5, 6, 7, 8, 0, time.UTC)

// open returns a store on freshly migrated tables of the test server.
func open(t *testing.T) driver.Store {
	t.Helper()
	dsn, _ := migrated.DSN(t)
	s, err := driver.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// insert writes n pending jobs of handler on queue "q", each with the
// group, limit and cost given and payload.
func insert(t *testing.T, s driver.Store, n int, handler, group string, limit, cost int, payload string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) error {
		var jobs []*driver.Job
		for range n {
			jobs = append(jobs, &driver.Job{Queue: "q", Handler: handler, Payload: []byte(payload), Status: driver.JobPending,
				MaxAttempts: 3, AvailableAt: now.Add(-time.Minute), CostUnits: cost, ConcurrencyGroup: group,
				ConcurrencyLimit: limit, CreatedAt: now.Add(-time.Minute)})
		}
		return tx.JobInsert(ctx, jobs)
	}))
}

// claim claims up to limit jobs of handlers with adm at at.
func claim(t *testing.T, s driver.Store, adm *admission.Admission, handlers []string, limit int, at time.Time) []*driver.Job {
	t.Helper()
	ctx := context.Background()
	var got []*driver.Job
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) {
		got, err = adm.Claim(ctx, tx, admission.Request{Queues: []string{"q"}, Handlers: handlers, Limit: limit}, at, at.UnixNano())
		return err
	}))
	return got
}

// hasDue reports whether a claim with adm would find a job at at.
func hasDue(t *testing.T, s driver.Store, adm *admission.Admission, handlers []string, at time.Time) bool {
	t.Helper()
	ctx := context.Background()
	var due bool
	require.NoError(t, s.InTx(ctx, func(tx driver.Tx) (err error) {
		due, err = adm.HasDue(ctx, tx, []string{"q"}, handlers, at)
		return err
	}))
	return due
}

// TestRateLimit: a configured rate limit admits Max starts in a window;
// the handler then has no due job until its oldest start leaves the
// window, which NextFree names.
func TestRateLimit(t *testing.T) {
	s := open(t)
	adm := admission.New(admission.Limits{Rates: map[string]admission.Rate{"send": {Max: 2, Window: time.Minute}}}, nil, nil)
	assert.False(t, adm.Plain(), "a rate limit is configured")
	assert.False(t, adm.AllowsEager())
	assert.True(t, adm.LearnedRate("send"))
	insert(t, s, 5, "send", "", 0, 1, "{}")

	assert.True(t, hasDue(t, s, adm, []string{"send"}, now))
	got := claim(t, s, adm, []string{"send"}, 5, now)
	assert.Len(t, got, 2, "two starts in the window")
	assert.Empty(t, claim(t, s, adm, []string{"send"}, 5, now.Add(time.Second)), "the window is full")
	assert.False(t, hasDue(t, s, adm, []string{"send"}, now.Add(2*time.Second)), "a full window has nothing due")
	assert.Equal(t, now.Add(time.Minute), adm.NextFree(now.Add(2*time.Second)), "the oldest start leaves the window")
	assert.Len(t, claim(t, s, adm, []string{"send"}, 5, now.Add(time.Minute)), 2, "a new window")
}

// TestLearnedRate: a rate limit carried by a claimed job's payload is
// read by the RuntimeRate function and applies from then on.
func TestLearnedRate(t *testing.T) {
	s := open(t)
	read := func(p []byte) (admission.Rate, bool) {
		if strings.Contains(string(p), "limited") {
			return admission.Rate{Max: 1, Window: time.Hour}, true
		}
		return admission.Rate{}, false
	}
	adm := admission.New(admission.Limits{}, nil, read)
	assert.True(t, adm.Plain())
	insert(t, s, 3, "step", "", 0, 1, `{"limited":true}`)
	got := claim(t, s, adm, []string{"step"}, 3, now)
	assert.Len(t, got, 1, "the first job teaches the limit; the others are handed back")
	assert.True(t, adm.LearnedRate("step"))
	assert.False(t, adm.Plain())
	assert.Empty(t, claim(t, s, adm, []string{"step"}, 3, now.Add(time.Second)))
}

// TestGroupsAndCost: a row's concurrency limit caps the group's processing
// jobs, and a worker cost budget caps the cost units one worker runs.
func TestGroupsAndCost(t *testing.T) {
	s := open(t)
	adm := admission.New(admission.Limits{}, nil, nil)
	insert(t, s, 4, "g", "db", 2, 1, "{}")
	assert.Len(t, claim(t, s, adm, []string{"g"}, 4, now), 2, "the group allows two processing jobs")
	assert.Empty(t, claim(t, s, adm, []string{"g"}, 4, now.Add(time.Second)), "the group is saturated")
	assert.False(t, hasDue(t, s, adm, []string{"g"}, now.Add(time.Second)))

	running := 3
	costly := admission.New(admission.Limits{WorkerCost: 5}, func() int { return running }, nil)
	insert(t, s, 3, "c", "", 0, 1, "{}")
	assert.Len(t, claim(t, s, costly, []string{"c"}, 3, now), 2, "two cost units left of five")
}
