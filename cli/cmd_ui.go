package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queuety/queuety-go/ui"
)

// EnvUIToken is the environment variable `ui` reads its token from when
// --token is not given (a flag shows in the process list; the environment
// does not).
const EnvUIToken = "QUEUETY_UI_TOKEN"

// uiShutdownTimeout bounds the wait for open requests when `ui` stops.
const uiShutdownTimeout = 5 * time.Second

func uiCommand() *Command {
	return &Command{
		Name:    "ui",
		Summary: "serve the web UI: queues, jobs, workflows and schedules, with their actions",
		Help: `Serves the operator UI (package ui) on --listen until SIGINT or SIGTERM.

Authentication: with --token, requests need "Authorization: Bearer TOKEN" or
a login with the token on the UI's login form (an HttpOnly, SameSite=Strict
session cookie). With --basic-auth USER:PASS, HTTP basic authentication.
Without either, the UI is served only on a loopback address (127.0.0.1,
::1, localhost), and only to requests for a loopback host name; any other
--listen address needs credentials.

Actions are POST forms with a CSRF token, refused when the browser marks
them cross-site. --read-only hides them and refuses every POST.`,
		Examples: []string{
			Program + " ui",
			Program + " ui --listen 0.0.0.0:8080 --token \"$(openssl rand -hex 16)\"",
			Program + " ui --listen :8080 --basic-auth ops:secret --read-only --wp-config /var/www/html/wp-config.php",
		},
		LogLevel: "info",
		Setup: func(fs *flag.FlagSet) RunFunc {
			listen := fs.String("listen", "127.0.0.1:8080", "`address` to listen on, host:port")
			token := fs.String("token", "", "require this bearer `token` (or a login with it); default $"+EnvUIToken)
			basic := fs.String("basic-auth", "", "require HTTP basic authentication as `user:pass`")
			readOnly := fs.Bool("read-only", false, "hide the actions and refuse every change")
			base := fs.String("base-path", "", "serve under this URL `path` prefix, e.g. /queuety behind a reverse proxy")
			return func(e *Env, _ []string) error {
				opts := ui.Options{ListenAddr: *listen, ReadOnly: *readOnly, BasePath: *base, Logger: e.Logger()}
				opts.Token = *token
				if opts.Token == "" {
					opts.Token = strings.TrimSpace(os.Getenv(EnvUIToken))
				}
				if *basic != "" {
					user, pass, ok := strings.Cut(*basic, ":")
					if !ok || user == "" || pass == "" {
						return Usagef("--basic-auth wants USER:PASS, both non-empty")
					}
					opts.Username, opts.Password = user, pass
				}
				switch {
				case opts.Token != "" && opts.Password != "":
					return Usagef("give --token or --basic-auth, not both")
				case opts.Token == "" && opts.Password == "" && !ui.IsLoopback(*listen):
					return Usagef("--listen %s is reachable from other machines: give --token or --basic-auth", *listen)
				case *base != "" && !strings.HasPrefix(*base, "/"):
					return Usagef("--base-path must start with /, got %q", *base)
				}
				ctx, stop := signal.NotifyContext(e.Ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				ln, err := net.Listen("tcp", *listen)
				if err != nil {
					return fmt.Errorf("listen on %s: %w", *listen, err)
				}
				auth := "no authentication (loopback only)"
				switch {
				case opts.Token != "":
					auth = "token"
				case opts.Password != "":
					auth = "basic authentication"
				}
				if opts.ReadOnly {
					auth += ", read-only"
				}
				fmt.Fprintf(e.Stdout, "Queuety UI on http://%s%s/ (%s); stop with Ctrl-C\n", ln.Addr(), strings.TrimRight(*base, "/"), auth)
				srv := &http.Server{Handler: ui.Handler(c, opts), ReadHeaderTimeout: 10 * time.Second}
				done := make(chan error, 1)
				go func() { done <- srv.Serve(ln) }()
				select {
				case err := <-done:
					return fmt.Errorf("serve: %w", err)
				case <-ctx.Done():
				}
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uiShutdownTimeout)
				defer cancel()
				if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("shut down: %w", err)
				}
				return nil
			}
		},
	}
}
