package machine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// The Queuety documentation's agent session: a user message starts the
// planning action, which emits "planned"; an approval that the guard
// allows completes the session.
func ExampleNew() {
	ctx := context.Background()
	guards := queuety.NewRegistry()
	guards.HandleMachineGuard("review_approved", func(_ context.Context, in queuetytype.MachineInput) (bool, error) {
		return in.EventPayload["approved"] == true, nil
	})
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)),
		queuety.WithRegistry(guards))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	w := worker.New(q, worker.WithRegistry(guards))
	w.Registry().HandleMachineAction("plan_session", func(_ context.Context, in queuetytype.MachineInput) (queuety.State, error) {
		return queuety.State{"plan": "compare 3 competitors", "_event": "planned"}, nil
	})

	id, err := machine.New("agent_session").
		Version("agent-session.v1").
		State("awaiting_user").On("user_message", "planning").
		State("planning").Action("plan_session", nil).On("planned", "awaiting_review").
		State("awaiting_review").
		On("approve", "completed", machine.Guard("review_approved", nil)).
		On("reject", "awaiting_user").
		Terminal("completed", queuetytype.MachineCompleted).
		Dispatch(ctx, q, queuety.State{"thread_id": 42})
	if err != nil {
		log.Fatal(err)
	}
	show := func() {
		st, err := q.MachineStatus(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(st.Status, st.CurrentState, st.AvailableEvents)
	}
	show()
	if err := q.MachineEvent(ctx, id, "user_message", queuety.State{"message": "Find competitors"}); err != nil {
		log.Fatal(err)
	}
	show()
	if _, err := w.RunOnce(ctx, time.Minute); err != nil { // runs the planning action
		log.Fatal(err)
	}
	show()
	err = q.MachineEvent(ctx, id, "approve", queuety.State{"approved": false})
	fmt.Println(errors.Is(err, queuetytype.ErrEventRejected))
	if err := q.MachineEvent(ctx, id, "approve", queuety.State{"approved": true}); err != nil {
		log.Fatal(err)
	}
	show()
	// Output:
	// waiting_event awaiting_user [user_message]
	// running planning [planned]
	// waiting_event awaiting_review [approve reject]
	// true
	// completed completed []
}

// A state that waits at most a minute: the workers' sweeps send "expire"
// when no answer came in time.
func ExampleBuilder_Timeout() {
	def, err := machine.New("approval").
		State("waiting").Timeout(time.Minute, "expire").On("answer", "answered").On("expire", "expired").
		Terminal("answered", queuetytype.MachineCompleted).
		Terminal("expired", queuetytype.MachineCancelled).
		Definition()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(def.States[0].Timeout.After, def.States[0].Timeout.Event)
	_, err = machine.New("broken").State("waiting").Timeout(time.Minute, "never").Definition()
	fmt.Println(err)
	// Output:
	// 1m0s expire
	// queuety: invalid argument: state "waiting": timeout event "never" has no transition
}
