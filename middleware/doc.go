// Package middleware holds the built-in handler middleware, ports of
// Queuety PHP's Queuety\Middleware classes:
//
//   - Timeout fails an attempt that runs longer than a duration;
//   - WithoutOverlapping lets one handler invocation per key run at a
//     time across every worker, Go or PHP, through Queuety's locks table,
//     and hands the others back to the queue;
//   - ThrottlesExceptions fails attempts at once, without calling the
//     handler, after too many failures within a window, counted in the
//     locks table and shared with PHP workers;
//   - RateLimited runs a handler at most max times per window across
//     every worker, counting Queuety PHP's executions too, and hands the
//     others back until the window moves;
//   - UniqueJob runs one invocation per key at a time through Queuety's
//     locks table, as Queuety's UniqueJob does, and completes the others
//     without running them.
//
// Register them on a worker for every handler (Use) or for one
// (UseFor), as Queuety's job classes list them in middleware():
//
//	w.Use(middleware.Timeout(2 * time.Minute))
//	w.UseFor("import_products",
//		middleware.WithoutOverlapping("import_products", middleware.ExpireAfter(10*time.Minute)),
//		middleware.ThrottlesExceptions(10, 10*time.Minute))
//	w.UseFor("sync_inventory", middleware.RateLimited(60, time.Minute))
//	w.UseFor("rebuild_search_index", middleware.UniqueJob(""))
//
// A middleware is a queuety.Middleware: a function from the next
// queuety.Handler to a new one. The first registered is the outermost.
package middleware
