package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/batch"
	"github.com/queuety/queuety-go/internal/phpjson"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// noStore is a Service without a store: BuildJob and the checks before a
// transaction never reach it.
func noStore(now time.Time) *Service { return New(nil, Config{Clock: fixedClock(now)}) }

// A job row carries its options as Queuety stores them: the runtime key
// only when the payload needs one, a payload hash only for Unique, the
// trimmed concurrency group, and the deadlines that start at scheduling.
func TestBuildJobRow(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 400_000_000, time.UTC)
	s := noStore(now)

	plain, err := s.BuildJob(JobRequest{Handler: "h"})
	require.NoError(t, err)
	assert.Equal(t, `[]`, string(plain.Payload), "an empty payload is PHP's empty array, with no runtime key")
	assert.Equal(t, queuetytype.DefaultQueue, plain.Queue)
	assert.Equal(t, queuetytype.DefaultMaxAttempts, plain.MaxAttempts)
	assert.Equal(t, 1, plain.CostUnits)
	assert.Empty(t, plain.PayloadHash, "no hash without Unique")
	assert.Equal(t, driver.JobPending, plain.Status)
	assert.Equal(t, time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC), plain.AvailableAt, "due now, at second precision")

	payload := phpjson.NewObject()
	payload.Set("a", int64(1))
	spec := queuetytype.JobSpec{
		Queue: "mail", Delay: 30 * time.Second, Unique: true,
		Timeouts:  queuetytype.ActivityTimeouts{ScheduleToStart: time.Minute, ScheduleToClose: time.Hour},
		Resources: queuetytype.JobResources{ConcurrencyGroup: " g ", ConcurrencyLimit: 2, CostUnits: 5, CostUnitsSet: true},
	}
	j, err := s.BuildJob(JobRequest{Handler: "h", Payload: payload, Spec: spec})
	require.NoError(t, err)
	assert.Contains(t, string(j.Payload), `"__queuety_runtime":{`, "timeouts need the runtime key")
	assert.Contains(t, string(j.Payload), `"max_attempts":3`, "the runtime key's attempts default")
	assert.Len(t, j.PayloadHash, 64, "Unique hashes the stored payload")
	assert.Equal(t, "g", j.ConcurrencyGroup)
	assert.Equal(t, 2, j.ConcurrencyLimit)
	assert.Equal(t, 5, j.CostUnits)
	assert.Equal(t, time.Date(2030, 1, 1, 10, 0, 31, 0, time.UTC), j.AvailableAt, "a delay never ends early")
	assert.Equal(t, j.AvailableAt.Add(time.Minute), j.ScheduleToStartAt, "schedule-to-start runs from the due time")
	assert.Equal(t, now.Add(time.Hour), j.ScheduleToCloseAt, "schedule-to-close runs from now")
}

func TestBuildJobRejects(t *testing.T) {
	s := noStore(time.Now())
	reserved := func(k string) *phpjson.Object {
		o := phpjson.NewObject()
		o.Set(k, "x")
		return o
	}
	for name, r := range map[string]JobRequest{
		"empty handler":          {},
		"runtime key":            {Handler: "h", Payload: reserved("__queuety_runtime")},
		"callback key":           {Handler: "h", Payload: reserved("__queuety_callback")},
		"long queue":             {Handler: "h", Spec: queuetytype.JobSpec{Queue: string(make([]byte, 65))}},
		"negative delay":         {Handler: "h", Spec: queuetytype.JobSpec{Delay: -time.Second}},
		"attempts above column":  {Handler: "h", Spec: queuetytype.JobSpec{MaxAttempts: queuetytype.MaxAttemptsLimit + 1}},
		"limit without group":    {Handler: "h", Spec: queuetytype.JobSpec{Resources: queuetytype.JobResources{ConcurrencyLimit: 1}}},
		"blank group":            {Handler: "h", Spec: queuetytype.JobSpec{Resources: queuetytype.JobResources{ConcurrencyGroup: "  "}}},
		"zero cost":              {Handler: "h", Spec: queuetytype.JobSpec{Resources: queuetytype.JobResources{CostUnitsSet: true}}},
		"sub-second rate window": {Handler: "h", Spec: queuetytype.JobSpec{Resources: queuetytype.JobResources{RateLimit: queuetytype.Rate{Max: 1, Window: time.Millisecond}}}},
	} {
		_, err := s.BuildJob(r)
		assert.ErrorIs(t, err, driver.ErrInvalidArgument, name)
	}
	assert.True(t, IsReservedPayloadKey("__queuety_runtime"))
	assert.True(t, IsReservedPayloadKey("__queuety_callback"))
	assert.False(t, IsReservedPayloadKey("__chain_catch"), "a chain's catch key is written by the chain, not reserved to callers")
}

// A batch or chain refuses Unique, and a chain sets DependsOn itself,
// before anything is written.
func TestBatchAndChainRefuseBeforeWriting(t *testing.T) {
	s := noStore(time.Now()) // no store and no batch service: nothing may be written
	ctx := context.Background()
	unique := JobRequest{Handler: "h", Spec: queuetytype.JobSpec{Unique: true}}
	_, _, err := s.DispatchBatch(ctx, batch.Spec{}, []JobRequest{unique})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "Unique in a batch")
	_, _, err = s.DispatchBatch(ctx, batch.Spec{Then: string(make([]byte, 256))}, []JobRequest{{Handler: "h"}})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "a bad callback name")
	_, err = s.DispatchChain(ctx, "", "", []JobRequest{{Handler: "a"}, unique})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "Unique in a chain")
	_, err = s.DispatchChain(ctx, "", "", []JobRequest{{Handler: "a"}, {Handler: "b", Spec: queuetytype.JobSpec{DependsOn: 1}}})
	assert.ErrorIs(t, err, driver.ErrInvalidArgument, "DependsOn in a chain")
}

// A run starts its clock at now, and its deadline is the run timeout,
// capped at the execution deadline.
func TestStartRun(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	state := phpjson.NewObject()
	wf := &driver.Workflow{}
	StartRun(wf, state, now)
	assert.Equal(t, now, wf.RunStartedAt)
	assert.True(t, wf.RunDeadlineAt.IsZero(), "no run timeout, no run deadline")

	state.Set("_run_timeout_seconds", int64(60))
	StartRun(wf, state, now)
	assert.Equal(t, now.Add(time.Minute), wf.RunDeadlineAt)

	wf.DeadlineAt = now.Add(10 * time.Second)
	StartRun(wf, state, now)
	assert.Equal(t, wf.DeadlineAt, wf.RunDeadlineAt, "capped at the execution deadline")
}
