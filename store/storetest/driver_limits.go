package storetest

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/store/driver"
)

// The driver cases of admission: limit locks, recorded rate-limited
// starts, the starts other engines logged, usage counts, unclaiming and
// the claim's group and cost filters.
func init() {
	registerDriver("Limits/LockSerialisesCountAndRecord", testDriverLimitLock)
	registerDriver("Limits/RateStartsCountTimesPrune", testDriverRateStarts)
	registerDriver("Limits/ForeignStartsSkipRecordedOnes", testDriverForeignStarts)
	registerDriver("Limits/UsageByGroupAndQueue", testDriverJobUsage)
	registerDriver("Limits/UnclaimAsQueuety", testDriverUnclaim)
	registerDriver("Limits/ClaimSkipsGroupsAndCostlyJobs", testDriverClaimFilters)
}

// Concurrent transactions that each lock one limit, count the recorded
// starts and record one more see every earlier one's start: the lock
// serialises them, which is what keeps a window from being overfilled.
func testDriverLimitLock(t *testing.T, d *DriverEnv) {
	const n = 6
	stores := make([]driver.Store, n)
	for i := range stores {
		stores[i] = d.Open()
	}
	seen := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := stores[i].InTx(d.Ctx, func(tx driver.Tx) error {
				if err := tx.LimitLock(d.Ctx, driver.LimitRate, "send_sms", Epoch); err != nil {
					return err
				}
				c, err := tx.RateStartCount(d.Ctx, "send_sms", Epoch.Add(-time.Minute))
				if err != nil {
					return err
				}
				seen[i] = c
				return tx.RateStartInsert(d.Ctx, []driver.RateStart{{Handler: "send_sms", JobID: int64(100 + i), Attempt: 1, StartedAt: Epoch}})
			})
			assert.NoError(t, err, "transaction %d", i)
		}()
	}
	wg.Wait()
	sort.Ints(seen)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, seen, "starts each transaction counted under the lock")
	if d.H.SerialWriters {
		return // one writer at a time: no second transaction runs beside the first
	}
	// Another kind or name is another row: it does not wait for this one.
	other := d.Open()
	d.Tx(func(tx driver.Tx) error {
		if err := tx.LimitLock(d.Ctx, driver.LimitRate, "send_sms", Epoch); err != nil {
			return err
		}
		return other.InTx(d.Ctx, func(tx2 driver.Tx) error { return tx2.LimitLock(d.Ctx, driver.LimitGroup, "send_sms", Epoch) })
	})
}

func testDriverRateStarts(t *testing.T, d *DriverEnv) {
	at := func(ms int) time.Time { return Epoch.Add(time.Duration(ms) * time.Millisecond) }
	d.Tx(func(tx driver.Tx) error {
		return tx.RateStartInsert(d.Ctx, []driver.RateStart{
			{Handler: "h", JobID: 1, Attempt: 1, StartedAt: at(250)},
			{Handler: "h", JobID: 2, Attempt: 1, StartedAt: at(1750)},
			{Handler: "h", JobID: 3, Attempt: 2, StartedAt: at(1000)},
			{Handler: "other", JobID: 4, Attempt: 1, StartedAt: at(1500)},
		})
	})
	count := func(since time.Time) int {
		return inTx(d, func(tx driver.Tx) (int, error) { return tx.RateStartCount(d.Ctx, "h", since) })
	}
	assert.Equal(t, 3, count(Epoch), "starts after Epoch")
	assert.Equal(t, 2, count(at(250)), "after 0.25 s: a start at exactly since is out")
	assert.Equal(t, 1, count(at(1000)), "after 1 s")
	times := inTx(d, func(tx driver.Tx) ([]time.Time, error) { return tx.RateStartTimes(d.Ctx, "h", Epoch, 2) })
	assert.Equal(t, []time.Time{at(250), at(1000)}, times, "oldest two, microseconds kept")
	n := inTx(d, func(tx driver.Tx) (int64, error) { return tx.RateStartDelete(d.Ctx, "h", at(1000), 10) })
	assert.Equal(t, int64(2), n, "pruned at or before 1 s")
	assert.Equal(t, 1, count(Epoch), "left of h")
	assert.Equal(t, 1, inTx(d, func(tx driver.Tx) (int, error) { return tx.RateStartCount(d.Ctx, "other", Epoch) }), "other handler untouched")
}

func testDriverForeignStarts(t *testing.T, d *DriverEnv) {
	ptrI := func(v int) *int { return &v }
	ptrJ := func(v int64) *int64 { return &v }
	logs := []*driver.LogEntry{
		{JobID: ptrJ(10), Handler: "h", Queue: "default", Event: driver.LogStarted, Attempt: ptrI(1), CreatedAt: Epoch},                      // recorded below: Go's
		{JobID: ptrJ(11), Handler: "h", Queue: "default", Event: driver.LogStarted, Attempt: ptrI(1), CreatedAt: Epoch.Add(time.Second)},     // foreign
		{JobID: ptrJ(10), Handler: "h", Queue: "default", Event: driver.LogStarted, Attempt: ptrI(2), CreatedAt: Epoch.Add(2 * time.Second)}, // another attempt: foreign
		{JobID: ptrJ(12), Handler: "h", Queue: "default", Event: driver.LogCompleted, Attempt: ptrI(1), CreatedAt: Epoch},                    // not a start
		{JobID: ptrJ(13), Handler: "other", Queue: "default", Event: driver.LogStarted, Attempt: ptrI(1), CreatedAt: Epoch},                  // another handler
		{JobID: ptrJ(14), Handler: "h", Queue: "default", Event: driver.LogStarted, Attempt: ptrI(1), CreatedAt: Epoch.Add(-time.Second)},    // too old
	}
	d.Tx(func(tx driver.Tx) error { return tx.LogInsert(d.Ctx, logs) })
	d.Tx(func(tx driver.Tx) error {
		return tx.RateStartInsert(d.Ctx, []driver.RateStart{{Handler: "h", JobID: 10, Attempt: 1, StartedAt: Epoch.Add(300 * time.Millisecond)}})
	})
	got := inTx(d, func(tx driver.Tx) ([]time.Time, error) { return tx.RateForeignStarts(d.Ctx, "h", Epoch, 10) })
	assert.Equal(t, []time.Time{Epoch.Add(time.Second), Epoch.Add(2 * time.Second)}, got, "foreign starts, oldest first")
	got = inTx(d, func(tx driver.Tx) ([]time.Time, error) { return tx.RateForeignStarts(d.Ctx, "h", Epoch, 1) })
	assert.Equal(t, []time.Time{Epoch.Add(time.Second)}, got, "limited to one")
}

func testDriverJobUsage(t *testing.T, d *DriverEnv) {
	job := func(q, g string, cost int, st driver.JobStatus) *driver.Job {
		j := newJob(q, "h")
		j.ConcurrencyGroup, j.CostUnits, j.Status = g, cost, st
		if g != "" {
			j.ConcurrencyLimit = 5
		}
		return j
	}
	d.insertJobs(
		job("default", "llm", 3, driver.JobProcessing),
		job("default", "llm", 2, driver.JobProcessing),
		job("default", "llm", 7, driver.JobPending), // not running
		job("heavy", "llm", 4, driver.JobProcessing),
		job("heavy", "", 5, driver.JobProcessing),
		job("heavy", "", 1, driver.JobCompleted),
		job("default", "mail", 1, driver.JobProcessing),
	)
	u := inTx(d, func(tx driver.Tx) (driver.Usage, error) {
		return tx.JobUsage(d.Ctx, []string{"llm", "idle"}, []string{"heavy", "empty"})
	})
	assert.Equal(t, map[string]driver.UsageCount{"llm": {Jobs: 3, Cost: 9}}, u.Groups, "groups (idle has no processing job)")
	assert.Equal(t, map[string]driver.UsageCount{"heavy": {Jobs: 2, Cost: 9}}, u.Queues, "queues")
	none := inTx(d, func(tx driver.Tx) (driver.Usage, error) { return tx.JobUsage(d.Ctx, nil, nil) })
	assert.Empty(t, none.Groups, "no groups asked")
	assert.Empty(t, none.Queues, "no queues asked")
}

func testDriverUnclaim(t *testing.T, d *DriverEnv) {
	a := newJob("default", "h")
	a.Attempts = 1 // a retry: the claim starts attempt 2
	a.AvailableAt = Epoch.Add(-time.Minute)
	ids := d.insertJobs(a, newJob("default", "h"))
	p := claimParams("default", Epoch.Add(5*time.Second), 10, "h")
	require.Len(t, d.claim(p), 2, "claimed")
	d.Tx(func(tx driver.Tx) error { return tx.JobUnclaim(d.Ctx, ids[:1]) })
	j := d.job(ids[0])
	assert.Equal(t, driver.JobPending, j.Status, "status")
	assert.Equal(t, 1, j.Attempts, "attempts given back")
	assert.True(t, j.ReservedAt.IsZero(), "reserved_at NULL")
	assert.Zero(t, j.ClaimToken, "claim token cleared")
	assert.Equal(t, Epoch.Add(-time.Minute), j.AvailableAt, "available_at unchanged")
	assert.Equal(t, driver.JobProcessing, d.job(ids[1]).Status, "the other claim stays")
	// A job that is not processing is left alone.
	d.Tx(func(tx driver.Tx) error { return tx.JobUnclaim(d.Ctx, ids[:1]) })
	assert.Equal(t, 1, d.job(ids[0]).Attempts, "a second unclaim changes nothing")
}

func testDriverClaimFilters(t *testing.T, d *DriverEnv) {
	job := func(g string, cost int) *driver.Job {
		j := newJob("default", "h")
		j.ConcurrencyGroup, j.CostUnits = g, cost
		return j
	}
	ids := d.insertJobs(job("llm", 1), job("", 5), job("mail", 2), job("", 1), job("llm", 0))
	p := claimParams("default", Epoch, 10, "h")
	p.ExcludeGroups = []string{"llm"}
	p.CapCost, p.MaxCost = true, 2
	assert.True(t, d.hasDue(p), "has due with filters")
	assert.Equal(t, []int64{ids[2], ids[3]}, jobIDs(d.claim(p)), "no llm jobs, none above 2 units")
	p.ExcludeGroups, p.MaxCost = nil, 0
	assert.Equal(t, []int64{ids[4]}, jobIDs(d.claim(p)), "a cap of 0 takes free jobs only")
	p.CapCost = false
	p.ExcludeGroups = []string{"llm", "mail"}
	assert.Equal(t, []int64{ids[1]}, jobIDs(d.claim(p)), "ungrouped jobs are never excluded")
	assert.False(t, d.hasDue(p), "only excluded jobs left")
}
