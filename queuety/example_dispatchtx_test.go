package queuety_test

import (
	"context"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/store/driver"
	"github.com/queuety/queuety-go/worker"
)

// Enqueue a job in the same transaction as the rows it belongs to: the job
// exists if and only if the transaction commits. Begin the transaction on
// the client's own pool, q.DB().
func ExampleClient_DispatchTx() {
	ctx := context.Background()
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet()))
	defer q.Close()
	db := q.DB()
	_, _ = db.ExecContext(ctx, "CREATE TABLE orders (id INTEGER PRIMARY KEY, email TEXT)")

	placeOrder := func(email string, fail bool) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // no-op after Commit
		res, err := tx.ExecContext(ctx, "INSERT INTO orders (email) VALUES (?)", email)
		if err != nil {
			return err
		}
		orderID, _ := res.LastInsertId()
		if _, err := q.DispatchTx(ctx, tx, "send_receipt", queuety.State{"order_id": orderID, "email": email}); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("payment declined") // rolled back: no order, no job
		}
		return tx.Commit()
	}
	fmt.Println(placeOrder("ana@example.com", false))
	fmt.Println(placeOrder("bo@example.com", true))

	w := worker.New(q, worker.WithLogger(quiet()))
	w.HandleJob("send_receipt", func(ctx context.Context, p queuety.Payload) error {
		id, _ := p.Int("order_id")
		fmt.Println("receipt for order", id, "to", p.String("email"))
		return nil
	})
	_, _ = w.RunOnce(ctx, 10*time.Second)
	jobs, _ := q.ListJobs(ctx, driver.JobFilter{})
	fmt.Println("jobs:", len(jobs))
	// Output:
	// <nil>
	// payment declined
	// receipt for order 1 to ana@example.com
	// jobs: 1
}

// Queuety's dispatch_sync: run a job handler now, in this goroutine,
// without writing any row.
func ExampleRegistry_DispatchSync() {
	reg := queuety.NewRegistry()
	reg.HandleJob("send_email", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("sending to", p.String("to"))
		return nil
	})
	fmt.Println(reg.DispatchSync(context.Background(), "send_email", queuety.State{"to": "ana@example.com"}))
	fmt.Println(reg.DispatchSync(context.Background(), "no_such_handler", nil))
	// Output:
	// sending to ana@example.com
	// <nil>
	// Handler not found: no_such_handler
}
