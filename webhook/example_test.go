package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/queuety/queuety-go/webhook"
)

// A receiver checks each POST before it trusts the body: the secret is the
// one `queuety-worker webhook add` printed (or Client.AddWebhook returned).
func ExampleVerify() {
	secret := webhook.NewSecret() // in a receiver: read from its configuration

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, webhook.DefaultTolerance); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Genuine: parse body; skip a webhook-id already handled.
		w.WriteHeader(http.StatusNoContent)
	})

	// What a worker sends.
	body := []byte(`{"event":"job.buried","data":{"job_id":42},"timestamp":"2030-01-01T09:00:00Z"}`)
	now := time.Now()
	sig, _ := webhook.Sign(secret, "msg_1", now, body)
	post := func(signature string) int {
		r := httptest.NewRequest(http.MethodPost, "/hooks/queuety", bytes.NewReader(body))
		r.Header.Set(webhook.HeaderID, "msg_1")
		r.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		r.Header.Set(webhook.HeaderSignature, signature)
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, r)
		return w.Code
	}
	fmt.Println(post(sig))
	fmt.Println(post("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="))
	// Output:
	// 204
	// 401
}
