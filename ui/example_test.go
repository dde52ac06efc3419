package ui_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/queuety/queuety-go/queuety"
	_ "github.com/queuety/queuety-go/store/sqlite"
	"github.com/queuety/queuety-go/ui"
)

// Mount the UI in an application's own server, under /queuety/, behind a
// token: a request without it gets 401, one with it the overview.
func ExampleHandler() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	mux := http.NewServeMux()
	mux.Handle("/queuety/", ui.Handler(q, ui.Options{BasePath: "/queuety", Token: "s3cret"}))
	// In the application: http.ListenAndServe(":8080", mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, token := range []string{"", "s3cret"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/queuety/", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(res.StatusCode)
	}
	// Output:
	// 401
	// 200
}
