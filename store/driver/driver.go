// Package driver is the storage seam between the engine and a database:
// the Store and Tx interfaces, the row types they read and write, the
// parameter structs of their operations, the registry of store drivers, a
// shared migration runner and table-prefix validation.
//
// The contract is not stable. It changes whenever the engine needs it to,
// and it is exported only so that store packages (store/mysql,
// store/sqlite, or one of your own) can implement it and run the shared
// conformance suite in store/storetest. Applications use package queuety.
//
// The engine's rules live in the engine and are written once. A store only
// runs small row operations inside a transaction and owns its SQL.
package driver

import (
	"context"
	"time"
)

// Store is an open database: the engine runs every state transition as
// one InTx call.
type Store interface {
	// InTx runs fn inside one database transaction and commits when fn
	// returns nil. When the database reports a transient conflict (a
	// deadlock, a lock-wait timeout, a busy database) the store rolls back
	// and runs fn again, so fn must not have side effects outside tx.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	// Migrate creates Queuety's tables when they are missing and applies
	// the Go engine's versioned migrations. It is idempotent and safe to
	// run from several processes at once. A store written outside this
	// module can apply its schema history with package store/migrate.
	Migrate(ctx context.Context) error
	// Info describes the store for logs and the CLI.
	Info() StoreInfo
	// Close releases the database handle.
	Close() error
}

// LockMode says how a read locks the rows it returns.
type LockMode int

// Lock modes. Stores without row locks (SQLite serialises writers) treat
// every mode as LockNone.
const (
	LockNone       LockMode = iota // plain read
	LockUpdate                     // SELECT ... FOR UPDATE
	LockSkipLocked                 // SELECT ... FOR UPDATE SKIP LOCKED
)

// Tx is the set of row operations a store offers inside a transaction.
// Methods return ErrNotFound for a missing row where they read one row.
type Tx interface {
	BatchTx // Queuety's batches and the Go engine's batch events (batch.go)
	// WorkflowEndsTx marks the failed and cancelled workflows whose
	// compensations the Go engine dealt with (workflowends.go).
	WorkflowEndsTx
	// LockOps are the operations on Queuety's locks table (locks.go).
	LockOps
	LimitTx
	// RetentionTx holds streaming chunks and the history purges (chunks.go).
	RetentionTx
	// MachineTx holds the state machine operations (machines.go).
	MachineTx
	// ReadViewTx holds the bounded reads of operator views (readviews.go).
	ReadViewTx
	// ListPageTx reads the pages of the operator's lists (listpage.go).
	ListPageTx
	// WorkerTx holds the worker registry (workers.go).
	WorkerTx
	// SeriesTx holds the grouped reads of activity series (series.go).
	SeriesTx
	// JobInsert inserts the jobs in one statement and sets their IDs. A
	// job's status (pending when empty), attempts, reserved_at, claim
	// token and activity deadlines are written as set, so a job can be
	// inserted already claimed.
	JobInsert(ctx context.Context, jobs []*Job) error
	// JobGet reads one job.
	JobGet(ctx context.Context, id int64, lock LockMode) (*Job, error)
	// JobGetMany reads jobs by id, in id order; missing ids are skipped.
	JobGetMany(ctx context.Context, ids []int64, lock LockMode) ([]*Job, error)
	// JobUpdate writes the columns the engine changes on a job by id:
	// payload_hash, priority, status, attempts, max attempts, the times,
	// the error message, the workflow link, depends_on, heartbeat data and
	// time, the claim token and the activity deadlines. It leaves id,
	// queue, handler, payload, batch_id, concurrency_group,
	// concurrency_limit, cost_units and created_at as they are.
	JobUpdate(ctx context.Context, job *Job) error
	// JobClaim claims up to p.Limit due jobs of one queue and marks them
	// processing (see ClaimParams). It returns the claimed rows as updated.
	JobClaim(ctx context.Context, p ClaimParams) ([]*Job, error)
	// JobClaimCandidates returns the ids of up to p.Limit jobs a claim
	// with p would take, in claim order, without locking them and without
	// reading any other column. The engine uses them to narrow a claim
	// that fails on a row's values (ErrRowData) down to that row, with
	// claims restricted to some of the ids (ClaimParams.IDs).
	JobClaimCandidates(ctx context.Context, p ClaimParams) ([]int64, error)
	// JobBuryUnclaimable buries a pending job whose row no claim can take,
	// writing only status ('buried'), failed_at (at), error_message (msg),
	// reserved_at and claim_token (NULL), so that the values which make
	// claims fail are neither read nor written. It reports whether the job
	// was pending (and is now buried).
	JobBuryUnclaimable(ctx context.Context, id int64, msg string, at time.Time) (bool, error)
	// JobHasDue reports whether a claim with p would find a job, without
	// locking anything.
	JobHasDue(ctx context.Context, p ClaimParams) (bool, error)
	// JobComplete marks the given jobs completed at t, whatever their
	// status; callers pass jobs they hold under lock.
	JobComplete(ctx context.Context, ids []int64, t time.Time) error
	// JobCompleteClaimed marks completed those of ids that are still
	// processing under the given claim token and attempt number, and
	// returns how many it changed.
	JobCompleteClaimed(ctx context.Context, ids []int64, token int64, attempts int, t time.Time) (int64, error)
	// JobTouch sets reserved_at = t on the jobs that are still processing
	// under claim token; it returns how many rows it renewed.
	JobTouch(ctx context.Context, ids []int64, token int64, t time.Time) (int64, error)
	// JobFindStale returns processing jobs whose claim is stale (see
	// StaleParams), oldest reserved_at first.
	JobFindStale(ctx context.Context, p StaleParams) ([]*Job, error)
	// JobFindTimedOut returns jobs with an activity deadline at or before
	// p.Now, in any status: the watchdog settles pending and processing
	// ones and clears the deadlines left on jobs finished elsewhere (by
	// Queuety PHP, which does not know them).
	JobFindTimedOut(ctx context.Context, p TimedOutParams) ([]*Job, error)
	// JobListByWorkflow returns a workflow's jobs, optionally only those
	// with the given statuses, in id order.
	JobListByWorkflow(ctx context.Context, workflowID int64, statuses []JobStatus, lock LockMode) ([]*Job, error)
	// JobListByStep returns a workflow's jobs in id order, as many of each
	// step and with as much of their payloads as q allows.
	JobListByStep(ctx context.Context, q JobStepQuery) ([]*Job, error)
	// JobStepCounts counts a workflow's jobs by step and status.
	JobStepCounts(ctx context.Context, workflowID int64) ([]JobStepCount, error)
	// JobFindActiveByHash returns the id of the oldest pending or
	// processing job with this handler and one of these payload hashes, or
	// 0 (also when hashes is empty).
	JobFindActiveByHash(ctx context.Context, handler string, hashes ...string) (int64, error)
	// JobFindActiveUnique returns the pending and processing jobs of
	// handler that have a payload hash (they were dispatched unique) and a
	// payload of payloadLen bytes, in id order, with ID and Payload set: the
	// candidates a unique dispatch compares its payload with when it has
	// too many key orders to look each one up by hash.
	JobFindActiveUnique(ctx context.Context, handler string, payloadLen int) ([]*Job, error)
	// JobCountActiveByHandler counts pending and processing jobs of a handler.
	JobCountActiveByHandler(ctx context.Context, handler string) (int64, error)
	// JobList lists jobs for operators.
	JobList(ctx context.Context, f JobFilter) ([]*Job, error)
	// JobCounts counts jobs by queue and status.
	JobCounts(ctx context.Context) ([]QueueCount, error)
	// JobOldestDue returns the earliest available_at of the pending jobs
	// of queue that are due at now, or the zero time when none is. It
	// reads one entry of an index of the pending jobs by queue and
	// available_at.
	JobOldestDue(ctx context.Context, queue string, now time.Time) (time.Time, error)
	// JobDeleteFinished deletes up to limit completed jobs that completed
	// before t and returns how many it deleted.
	JobDeleteFinished(ctx context.Context, before time.Time, limit int) (int64, error)
	// JobDelete deletes one job row (Queuety's delete_job); it returns
	// ErrNotFound when there is none. Log rows naming the job are kept.
	JobDelete(ctx context.Context, id int64) error

	// QueueSetPaused pauses (inserting or updating the queue_states row)
	// or resumes (deleting it) a queue.
	QueueSetPaused(ctx context.Context, queue string, paused bool, t time.Time) error
	// QueueStates lists the queue_states rows.
	QueueStates(ctx context.Context) ([]QueueState, error)

	// LogInsert inserts log rows in one statement.
	LogInsert(ctx context.Context, entries []*LogEntry) error
	// LogList lists log rows, oldest first (newest first with f.Newest).
	LogList(ctx context.Context, f LogFilter) ([]*LogEntry, error)
	// LogCount counts the log rows that match f, whatever its Limit.
	LogCount(ctx context.Context, f LogFilter) (int64, error)
	// LogDeleteBefore deletes up to limit log rows created before t and
	// returns how many it deleted.
	LogDeleteBefore(ctx context.Context, before time.Time, limit int) (int64, error)
	// LogHandlerStats counts the completed, failed and buried log rows
	// created at or after since, per handler and event, skipping rows with
	// an empty handler (Queuety's Metrics::handler_stats query), ordered by
	// handler and event.
	LogHandlerStats(ctx context.Context, since time.Time) ([]HandlerLogStat, error)
	// LogDurationAt returns the duration_ms at 0-based position offset
	// among the completed log rows of handler created at or after since
	// that have a duration, in ascending order (the row Queuety's
	// Metrics::p95_duration reads); false when there is no such row.
	LogDurationAt(ctx context.Context, handler string, since time.Time, offset int64) (int64, bool, error)

	// EventInsert inserts workflow_events rows in one statement.
	EventInsert(ctx context.Context, events []*WorkflowEvent) error
	// EventList lists a workflow's events in id order.
	EventList(ctx context.Context, workflowID int64) ([]*WorkflowEvent, error)
	// EventPage lists a page of a workflow's events (see EventQuery).
	EventPage(ctx context.Context, q EventQuery) ([]*WorkflowEvent, error)
	// EventCount counts a workflow's events.
	EventCount(ctx context.Context, workflowID int64) (int64, error)
	// EventSteps returns the step indexes a workflow has events of, in
	// ascending order.
	EventSteps(ctx context.Context, workflowID int64) ([]int, error)

	// WorkflowInsert inserts a workflow and sets its ID.
	WorkflowInsert(ctx context.Context, wf *Workflow) error
	// WorkflowGet reads one workflow.
	WorkflowGet(ctx context.Context, id int64, lock LockMode) (*Workflow, error)
	// WorkflowGetMany reads workflows by id, in id order.
	WorkflowGetMany(ctx context.Context, ids []int64, lock LockMode) ([]*Workflow, error)
	// WorkflowUpdate writes every mutable column of wf by id.
	WorkflowUpdate(ctx context.Context, wf *Workflow) error
	// WorkflowUpdateMany writes every mutable column of each workflow by
	// id, as WorkflowUpdate does, with one statement for many rows. When a
	// workflow appears more than once, its last entry is written.
	WorkflowUpdateMany(ctx context.Context, wfs []*Workflow) error
	// WorkflowFindExpired returns non-terminal workflows whose execution or
	// run deadline is at or before p.Now, through the deadline indexes.
	WorkflowFindExpired(ctx context.Context, p ExpiredParams) ([]*Workflow, error)
	// WorkflowFindDeadlineFailed returns failed workflows whose execution
	// deadline lies in [p.Since, p.Now], whose error is "Deadline
	// exceeded" and which have no failure row: workflows another engine
	// (Queuety PHP's sweep) expired. It reads the (status, deadline_at)
	// index.
	WorkflowFindDeadlineFailed(ctx context.Context, p ExpiredParams) ([]*Workflow, error)
	// WorkflowFindWaitExpired returns workflows waiting for a signal whose
	// wait deadline is at or before p.Now.
	WorkflowFindWaitExpired(ctx context.Context, p ExpiredParams) ([]*Workflow, error)
	// WorkflowRunningPositions returns the positions of up to limit
	// running workflows whose id is above afterID, in id order, read
	// through the status index without the rows' state. The engine walks
	// them a window at a time to find workflows whose row says they are
	// past their last step.
	WorkflowRunningPositions(ctx context.Context, afterID int64, limit int) ([]WorkflowPosition, error)
	// WorkflowList lists workflows for operators, newest first.
	WorkflowList(ctx context.Context, f WorkflowFilter) ([]*Workflow, error)
	// WorkflowCounts counts workflows by status.
	WorkflowCounts(ctx context.Context) (map[WorkflowStatus]int64, error)

	// DependencySet replaces the dependency rows of a waiting workflow's
	// step (Queuety's workflow_dependencies) with one row per dependency.
	DependencySet(ctx context.Context, waitingID int64, stepIndex int, dependencyIDs []int64, t time.Time) error
	// DependencyClear deletes the dependency rows of a waiting workflow's
	// step.
	DependencyClear(ctx context.Context, waitingID int64, stepIndex int) error
	// DependencyWaiters returns the distinct (waiting workflow, step,
	// dependency) rows that wait on any of the dependencies, ordered by
	// waiting workflow id and step.
	DependencyWaiters(ctx context.Context, dependencyIDs []int64) ([]DependencyWaiter, error)
	// DependencySatisfy stamps satisfied_at on one dependency row that has
	// none.
	DependencySatisfy(ctx context.Context, w DependencyWaiter, dependencyID int64, t time.Time) error
	// DependencyList returns a waiting workflow's dependency rows, by id.
	DependencyList(ctx context.Context, waitingID int64) ([]*WorkflowDependency, error)
	// DependencyInsert inserts dependency rows as given (replays).
	DependencyInsert(ctx context.Context, deps []*WorkflowDependency) error

	// DispatchKeyGet returns the workflow id stored for an idempotency
	// key, or 0.
	DispatchKeyGet(ctx context.Context, key string) (int64, error)
	// DispatchKeyInsert stores an idempotency key. It returns ErrDuplicate
	// when the key exists.
	DispatchKeyInsert(ctx context.Context, key string, workflowID int64, t time.Time) error

	// SignalInsert stores a signal and sets its ID.
	SignalInsert(ctx context.Context, s *Signal) error
	// SignalList returns a workflow's signals with the given names (all
	// names when empty), in id order.
	SignalList(ctx context.Context, workflowID int64, names []string) ([]*Signal, error)
	// SignalPage lists a page of a workflow's signals, in id order, with
	// their payloads as q allows (see SignalQuery).
	SignalPage(ctx context.Context, q SignalQuery) ([]*Signal, error)
	// SignalCount counts a workflow's signals.
	SignalCount(ctx context.Context, workflowID int64) (int64, error)

	// ScheduleSave inserts a schedule (ID 0) or writes every column of an
	// existing one by id, and sets its ID.
	ScheduleSave(ctx context.Context, s *Schedule) error
	// ScheduleGet reads one schedule.
	ScheduleGet(ctx context.Context, id int64, lock LockMode) (*Schedule, error)
	// ScheduleByHandler reads the schedule of a handler.
	ScheduleByHandler(ctx context.Context, handler string, lock LockMode) (*Schedule, error)
	// ScheduleList lists all schedules by id.
	ScheduleList(ctx context.Context) ([]*Schedule, error)
	// ScheduleDelete deletes a schedule.
	ScheduleDelete(ctx context.Context, id int64) error
	// ScheduleFindDue returns enabled schedules whose next run, or
	// buffered firing, is at or before p.Now.
	ScheduleFindDue(ctx context.Context, p ExpiredParams) ([]*Schedule, error)
	// ScheduleUpdate writes last_run, next_run, enabled, last_run_ref and
	// pending_run of s, only if next_run still equals oldNext
	// (compare-and-set). It reports whether the row was written.
	ScheduleUpdate(ctx context.Context, s *Schedule, oldNext time.Time) (bool, error)
	// ScheduleNextDue returns the earliest next run of an enabled
	// schedule (zero when none).
	ScheduleNextDue(ctx context.Context) (time.Time, error)

	// FailureInsert records a failure and sets its ID.
	FailureInsert(ctx context.Context, f *Failure) error
	// FailureList returns the failures of a workflow (or of a job when
	// workflowID is 0), in id order.
	FailureList(ctx context.Context, workflowID, jobID int64) ([]*Failure, error)
	// FailurePage lists the newest failures q selects, in id order, with
	// their messages as q allows (see FailureQuery).
	FailurePage(ctx context.Context, q FailureQuery) ([]*Failure, error)
	// FailureCountByCategory counts a workflow's failures by category,
	// ordered by category.
	FailureCountByCategory(ctx context.Context, workflowID int64) ([]FailureCount, error)

	// WebhookInsert stores a webhook and sets its ID; a non-empty Secret
	// goes in the Go engine's secrets table, beside Queuety's row.
	WebhookInsert(ctx context.Context, w *Webhook) error
	// WebhookList lists the webhooks of one event (all events when event
	// is empty), in id order, with their secrets.
	WebhookList(ctx context.Context, event string) ([]*Webhook, error)
	// WebhookSetSecret replaces (or sets) a webhook's secret and reports
	// whether the webhook exists; nothing is written when it does not.
	WebhookSetSecret(ctx context.Context, id int64, secret string, at time.Time) (bool, error)
	// WebhookDelete deletes a webhook and its secret and reports whether
	// the webhook existed.
	WebhookDelete(ctx context.Context, id int64) (bool, error)

	// ArtifactPut stores a's row by (workflow id, key): a new row gets
	// created_at = a.CreatedAt, an existing one keeps its id and created_at
	// and has its kind, content, metadata, step index and updated_at
	// replaced. Either way updated_at = a.UpdatedAt.
	ArtifactPut(ctx context.Context, a *Artifact) error
	// ArtifactGet reads one artifact of a workflow by key.
	ArtifactGet(ctx context.Context, workflowID int64, key string) (*Artifact, error)
	// ArtifactList lists a workflow's artifacts by key; without content
	// (Content nil) unless withContent.
	ArtifactList(ctx context.Context, workflowID int64, withContent bool) ([]*Artifact, error)
	// ArtifactPage lists a page of a workflow's artifacts by key, with
	// their contents and metadata as q allows (see ArtifactQuery).
	ArtifactPage(ctx context.Context, q ArtifactQuery) ([]*Artifact, error)
	// ArtifactCount counts a workflow's artifacts.
	ArtifactCount(ctx context.Context, workflowID int64) (int64, error)
	// ArtifactDelete deletes one artifact and reports whether it existed.
	ArtifactDelete(ctx context.Context, workflowID int64, key string) (bool, error)
}

// ClaimParams selects the jobs a claim may take. A job is claimable when
// it is pending in Queue, due (available_at <= Now), its queue is not
// paused, its handler is in Handlers, its workflow is running or paused
// or does not exist (an orphan step, which the engine then buries with an
// error rather than leave pending forever), and the job it depends on (if
// any) is completed. Jobs are taken
// in priority order (highest first), then by due time, then by id.
type ClaimParams struct {
	Queue    string
	Handlers []string // never empty: a worker claims only what it can run
	Limit    int
	Now      time.Time
	// Token is the claim's base token, a multiple of 256: every claimed
	// row gets claim_token = Token + its new attempt number, so a token
	// names the attempt it was issued for. A claim made elsewhere (Queuety
	// PHP) raises attempts without touching claim_token, which then no
	// longer matches.
	Token int64
	// ExcludeGroups skips jobs of these concurrency groups (saturated
	// ones).
	ExcludeGroups []string
	// CapCost, when set, skips jobs whose cost_units exceed MaxCost.
	CapCost bool
	MaxCost int
	// IDs, when set, restricts the claim to these jobs; every other
	// condition still applies. At most p.Limit of them are claimed.
	IDs []int64
}

// StaleParams selects stale claims: processing jobs whose reserved_at is
// before ReservedBefore, and Go claims (claim_token names the current
// attempt; their workers renew reserved_at) whose reserved_at is before
// LeaseBefore. A zero LeaseBefore applies ReservedBefore to every claim.
// Processing jobs without reserved_at are stale whatever the times.
type StaleParams struct {
	ReservedBefore time.Time
	LeaseBefore    time.Time
	Limit          int
	Lock           LockMode
}

// TimedOutParams selects jobs with an expired activity deadline.
type TimedOutParams struct {
	Now   time.Time
	Limit int
	Lock  LockMode
}

// WorkflowPosition is where a workflow row says it stands.
type WorkflowPosition struct {
	ID          int64
	CurrentStep int
	TotalSteps  int
}

// ExpiredParams selects workflows past a deadline.
type ExpiredParams struct {
	Now   time.Time
	Limit int
	Lock  LockMode
	// Exclude lists workflow ids the caller has already looked at and
	// left alone, so a repeated find moves past them (WorkflowFindExpired,
	// WorkflowFindDeadlineFailed and WaitRecoveryTx's
	// WorkflowFindStrandedWaits only).
	Exclude []int64
	// Since is the earliest deadline WorkflowFindDeadlineFailed looks at.
	Since time.Time
}

// WorkflowDependency is one row of Queuety's workflow_dependencies table.
type WorkflowDependency struct {
	ID                   int64
	WaitingWorkflowID    int64
	StepIndex            int
	DependencyWorkflowID int64
	SatisfiedAt          time.Time
	CreatedAt            time.Time
}

// DependencyWaiter is a workflow step waiting on other workflows.
type DependencyWaiter struct {
	WorkflowID int64
	StepIndex  int
	// DependencyID is the workflow waited on (set by DependencyWaiters).
	DependencyID int64
}

// HandlerLogStat is one (handler, event) group of LogHandlerStats.
type HandlerLogStat struct {
	Handler string
	Event   LogEvent
	Count   int64 // log rows in the group
	// Durations counts the rows with a duration_ms, and AvgDurationMS is
	// their mean (0 when there are none).
	Durations     int64
	AvgDurationMS float64
}
