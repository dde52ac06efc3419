package driver

import (
	"context"
	"time"
)

// Limit kinds: the first part of a limit row's key (see LimitTx.LimitLock).
const (
	LimitRate  = "rate"  // a handler's rate limit; the name is the handler
	LimitGroup = "group" // a concurrency group's job or cost limit; the name is the group
	LimitQueue = "queue" // a queue's cost budget; the name is the queue
)

// LimitTx holds the row operations of admission: rate limits, concurrency
// groups and cost budgets. Every Tx has them. The Go engine keeps two
// tables of its own for them (queuety_go_limits, one lock row per limit,
// and queuety_go_rate_starts, one row per start of a rate-limited
// handler) and reads Queuety's jobs and logs tables.
type LimitTx interface {
	// LimitLock locks the row of one limit, creating it when missing, until
	// the transaction ends. Claims that admit jobs against a limit lock it
	// first, so a claim counts what every other claim admitted, in any
	// process. t is stamped on the row.
	LimitLock(ctx context.Context, kind, name string, t time.Time) error

	// RateStartCount counts the recorded starts of handler after since.
	RateStartCount(ctx context.Context, handler string, since time.Time) (int, error)
	// RateStartTimes returns the times of the recorded starts of handler
	// after since, oldest first, at most limit of them.
	RateStartTimes(ctx context.Context, handler string, since time.Time, limit int) ([]time.Time, error)
	// RateStartInsert records starts in one statement.
	RateStartInsert(ctx context.Context, starts []RateStart) error
	// RateStartDelete deletes up to limit recorded starts of handler at or
	// before before, and returns how many it deleted.
	RateStartDelete(ctx context.Context, handler string, before time.Time, limit int) (int64, error)
	// RateForeignStarts returns, oldest first and at most limit of them,
	// the created_at of the 'started' log rows of handler created at or
	// after since (a whole second) that no recorded start names by job id
	// and attempt: the starts of engines that do not record theirs
	// (Queuety PHP). It reads the logs index (handler, event, created_at).
	RateForeignStarts(ctx context.Context, handler string, since time.Time, limit int) ([]time.Time, error)

	// JobUsage counts the processing jobs of the given concurrency groups
	// and queues, with the sum of their cost units. Groups and queues
	// without processing jobs are left out of the maps.
	JobUsage(ctx context.Context, groups, queues []string) (Usage, error)
	// JobUnclaim hands claimed jobs back as Queuety's Queue::unclaim does:
	// status pending, reserved_at NULL, attempts minus one (never below
	// zero), and the claim token cleared. available_at is unchanged. Only
	// processing jobs change.
	JobUnclaim(ctx context.Context, ids []int64) error
}

// RateStart is one start of a rate-limited handler, recorded when a claim
// admits its job.
type RateStart struct {
	Handler   string
	JobID     int64
	Attempt   int
	StartedAt time.Time // microsecond precision
}

// Usage is what processing jobs hold, per concurrency group and per
// queue.
type Usage struct {
	Groups map[string]UsageCount
	Queues map[string]UsageCount
}

// UsageCount is the number of processing jobs and the sum of their cost
// units.
type UsageCount struct {
	Jobs int
	Cost int
}
