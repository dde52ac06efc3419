package middleware_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/queuety/queuety-go/middleware"
	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/worker"
)

// Middleware wraps handler invocations: Use for every handler, UseFor for
// one. The first registered is the outermost.
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet))
	defer q.Close()

	w := worker.New(q, worker.WithLogger(quiet))
	logging := func(next queuety.Handler) queuety.Handler {
		return func(ctx context.Context, inv *queuety.Invocation) (queuety.State, error) {
			fmt.Println("start", inv.Job.Handler, "attempt", inv.Job.Attempt)
			out, err := next(ctx, inv)
			fmt.Println("end", inv.Job.Handler, "err:", err)
			return out, err
		}
	}
	w.Use(logging, middleware.Timeout(2*time.Minute))
	w.UseFor("import_products",
		middleware.WithoutOverlapping("import_products", middleware.ExpireAfter(10*time.Minute)),
		middleware.ThrottlesExceptions(10, 10*time.Minute))
	w.HandleJob("import_products", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("importing supplier", p.String("supplier"))
		return nil
	})

	_, _ = q.Dispatch(ctx, "import_products", queuety.State{"supplier": "acme"})
	_, _ = w.RunOnce(ctx, 10*time.Second)
	// Output:
	// start import_products attempt 1
	// importing supplier acme
	// end import_products err: <nil>
}

// A key per payload: imports of one supplier never overlap, across every
// worker on the database (Queuety PHP's WithoutOverlapping included);
// imports of different suppliers run side by side.
func ExampleWithoutOverlappingBy() {
	perSupplier := middleware.WithoutOverlappingBy(func(inv *queuety.Invocation) string {
		return "import_supplier_" + inv.Payload.String("supplier")
	}, middleware.ReleaseDelay(10*time.Second))
	reg := queuety.NewRegistry()
	reg.UseFor("import_products", perSupplier)
	fmt.Println(reg.HasMiddleware("import_products"))
	// Output: true
}

// RateLimited: at most 2 executions of the handler per minute across every
// worker on the database; the third job is handed back, due when the
// window moves, without using an attempt.
func ExampleRateLimited() {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet))
	defer q.Close()

	w := worker.New(q, worker.WithLogger(quiet), worker.Concurrency(1))
	w.UseFor("sync_inventory", middleware.RateLimited(2, time.Minute))
	w.HandleJob("sync_inventory", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("synced", p.String("sku"))
		return nil
	})
	for _, sku := range []string{"A-1", "B-2", "C-3"} {
		_, _ = q.Dispatch(ctx, "sync_inventory", queuety.State{"sku": sku})
	}
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("handed back:", st.HandedBack)
	// Output:
	// synced A-1
	// synced B-2
	// handed back: 1
}

// UniqueJob: while one invocation holds the key (here the handler's name,
// Queuety's default), others of the same key complete without running.
func ExampleUniqueJob() {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, _ := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(quiet))
	defer q.Close()

	w := worker.New(q, worker.WithLogger(quiet))
	w.UseFor("rebuild_search_index", middleware.UniqueJob(""))
	w.HandleJob("rebuild_search_index", func(ctx context.Context, p queuety.Payload) error {
		fmt.Println("rebuilding")
		return nil
	})
	_, _ = q.Dispatch(ctx, "rebuild_search_index", nil)
	st, _ := w.RunOnce(ctx, 10*time.Second)
	fmt.Println("succeeded:", st.Succeeded)
	// Output:
	// rebuilding
	// succeeded: 1
}
