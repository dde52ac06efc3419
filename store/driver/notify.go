package driver

import (
	"context"
	"log/slog"
)

// JobNotifier is an optional interface of a Store whose database can
// carry a message between processes (PostgreSQL's LISTEN/NOTIFY). The
// engine then wakes idle workers of other processes when it commits jobs,
// as it wakes those of its own process; polling stays the fallback, so a
// notification lost or late costs at most one poll interval.
type JobNotifier interface {
	// NotifyJobs tells the processes listening on this store's tables
	// that jobs were committed.
	NotifyJobs(ctx context.Context) error
	// ListenJobs calls wake for every notification sent on this store's
	// tables until ctx ends or the store is closed, and returns then. It
	// may leave out the notifications this store itself sent (the engine
	// wakes its own process's workers in-process), and must not leave
	// out any other. It reconnects when its connection is lost.
	ListenJobs(ctx context.Context, wake func()) error
}

// LiveJobNotifier is an optional interface of a JobNotifier whose
// listener says when it hears notifications: the engine's idle workers
// then poll at their longer idle interval while it does, and at their
// poll interval while it does not.
type LiveJobNotifier interface {
	JobNotifier
	// ListenJobsLive is ListenJobs that also calls live(true) once its
	// listener hears notifications (each time it connected) and
	// live(false) when it lost them (its connection failed, or it
	// returns).
	ListenJobsLive(ctx context.Context, wake func(), live func(bool)) error
}

// LogSetter is an optional interface of a Store that reports what it does
// in the background (a listener losing and regaining its connection). The
// client gives it its logger when it opens the store.
type LogSetter interface {
	SetLogger(l *slog.Logger)
}

// WakeSharer is an optional interface of a JobNotifier whose listener
// leaves out the notifications its own store sent. The engines of one
// process that share a wake key wake one another's idle workers
// in-process as they commit, so each is given the key (ShareWake) before
// it notifies or listens: stores told the same key count one another's
// notifications as their own, and stores told none, or another, keep
// counting them as another process's.
type WakeSharer interface {
	ShareWake(key string)
}
