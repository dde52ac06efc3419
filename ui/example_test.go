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
// token: a request without it gets 401, one with it the overview. New
// refuses options without credentials, or with a weak token.
func ExampleNew() {
	ctx := context.Background()
	q, err := queuety.Open(ctx, "sqlite://:memory:", queuety.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	if _, err := ui.New(q, ui.Options{Token: "s3cret"}); err != nil {
		fmt.Println(err)
	}
	const token = "9c1f0e6b7a2d4c58b3e1f09a6d7c2b41" // in the application: from a secret store, or openssl rand -hex 16
	h, err := ui.New(q, ui.Options{BasePath: "/queuety", Token: token})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/queuety/", h)
	// In the application: http.ListenAndServe(":8080", mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, bearer := range []string{"", token} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/queuety/", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		res.Body.Close()
		fmt.Println(res.StatusCode)
	}
	// Output:
	// ui: Options.Token has 6 characters, want at least 16 (a random one: openssl rand -hex 16)
	// 401
	// 200
}
