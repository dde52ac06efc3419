// Package queuetytest helps applications test the code that dispatches
// queuety jobs and workflows, and the handlers that run them.
//
// It is the Go counterpart of Queuety PHP's Queuety::fake(), with the
// assertions of River's rivertest, but it fakes nothing: a Kit is a real
// queuety.Client on a private in-memory SQLite store (the embedded store
// package), driven by a queuety.FakeClock. Code under test dispatches
// through kit.Client() exactly as it does in production, the assertions
// read the rows it wrote, and kit.Work runs the handlers with the same
// engine the workers use. Nothing waits on real time: a Sleep step, a
// retry backoff, a signal-wait timeout or a workflow deadline falls due
// when the test moves the clock with kit.Advance.
//
//	func TestSignup(t *testing.T) {
//		kit := queuetytest.New(t)
//		signup(ctx, kit.Client(), "ana@example.com") // the code under test
//
//		queuetytest.RequireDispatched(t, kit, "send_welcome",
//			queuetytest.Queue("mail"), queuetytest.Payload(queuety.State{"to": "ana@example.com"}))
//		queuetytest.RequireNotDispatched(t, kit, "charge_card")
//	}
//
// # Assertions
//
// RequireDispatched, RequireNotDispatched and RequireDispatchedMany check
// the jobs written so far; RequireWorkflowDispatched and
// RequireWorkflowNotDispatched the workflows; RequireNothingDispatched
// both. Filters (Queue, Priority, Delay, Payload or State, Status, Times)
// narrow what counts. They take a testing.TB and fail it with a message that
// lists what was dispatched. They read through a Source, which a *Kit and a
// *queuety.Client both are, so they also work on a client of a real
// database.
//
// # Running work
//
// kit.Work runs every job that is due, one at a time in claim order, with
// the handlers registered on the kit (HandleJob, HandleStep,
// HandleDeadline, ...), after running the sweeps once (workflow deadlines,
// signal-wait timeouts, activity timeouts, stale claims) and the schedule
// tick. It repeats until nothing is due on the fake clock. kit.RunWorkflow
// does the same and then reports why a workflow stopped: it completed,
// failed or was cancelled, or it waits for time (kit.Advance), for a signal
// (kit.Client().Signal), for other workflows, or for a handler the kit
// does not have.
//
// # Handlers alone
//
// RunStep runs one step handler through the engine, with its input and
// output encoded as JSON and merged the way a workflow merges them, for
// handler tests that need no workflow of their own.
package queuetytest
