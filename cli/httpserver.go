package cli

import (
	"net/http"
	"time"
)

// Timeouts of the HTTP servers the commands run (ui, work
// --metrics-listen), so that a client that sends slowly, reads slowly or
// idles cannot hold a connection, and the goroutine serving it, for ever.
// Variables so that tests can shorten them.
var (
	// httpReadHeaderTimeout bounds the reading of a request's headers.
	httpReadHeaderTimeout = 10 * time.Second
	// httpReadTimeout bounds the reading of a whole request, body included
	// (the UI's forms are at most 1 MiB).
	httpReadTimeout = 30 * time.Second
	// httpIdleTimeout bounds how long a kept-alive connection waits for
	// its next request.
	httpIdleTimeout = 2 * time.Minute
)

// httpMaxHeaderBytes bounds a request's headers.
const httpMaxHeaderBytes = 64 << 10

// newHTTPServer returns a server for h with the timeouts above and a
// write timeout, which bounds the writing of one response: long enough
// for the largest response h streams to a slow client.
func newHTTPServer(h http.Handler, write time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
	}
}
