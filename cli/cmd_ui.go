package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queuety/queuety-go/ui"
)

// uiShutdownTimeout bounds the wait for open requests when `ui` stops.
const uiShutdownTimeout = 5 * time.Second

// uiWriteTimeout bounds the writing of one UI response: the largest are a
// stored value streamed whole and a workflow's trace.
const uiWriteTimeout = 5 * time.Minute

func uiCommand() *Command {
	return &Command{
		Name:    "ui",
		Summary: "serve the web UI: queues, jobs, workflows and schedules, with their actions",
		Help: `Serves the operator UI (package ui) on --listen until SIGINT or SIGTERM.

Authentication: with a token, requests need "Authorization: Bearer TOKEN"
or a login with the token on the UI's login form (an HttpOnly,
SameSite=Strict session cookie, revoked when you log out). With basic
authentication (USER:PASS), HTTP basic authentication. Give them in
$` + EnvUIToken + ` or $` + EnvUIBasicAuth + `, or in a file (--token-file,
--basic-auth-file): --token and --basic-auth work but show in the process
list. A token or password needs at least 16 characters that are not a few
repeated (openssl rand -hex 16 makes one).

Failed logins are logged and throttled: five per client address, then a
lockout that doubles up to 15 minutes. Behind a reverse proxy, name it with
--trusted-proxies so that X-Forwarded-For gives the client's address.

Without credentials, the UI listens only on a loopback address
(127.0.0.1, ::1, localhost) and serves only this machine: requests over a
loopback connection, for a loopback host name, without a proxy's
forwarding headers. Any other --listen address needs credentials.

Actions are POST forms with a CSRF token, refused when the browser marks
them cross-site. --read-only hides them and refuses every POST.`,
		Examples: []string{
			Program + " ui",
			"QUEUETY_UI_TOKEN=\"$(openssl rand -hex 16)\" " + Program + " ui --listen 0.0.0.0:8080",
			Program + " ui --listen :8080 --basic-auth-file /etc/queuety/ui-auth --read-only --wp-config /var/www/html/wp-config.php",
		},
		LogLevel: "info",
		Setup: func(fs *flag.FlagSet) RunFunc {
			listen := fs.String("listen", "127.0.0.1:8080", "`address` to listen on, host:port")
			token := newSecretFlag(fs, "token", EnvUIToken, "require this bearer `token` (or a login with it)", "the token")
			basic := newSecretFlag(fs, "basic-auth", EnvUIBasicAuth, "require HTTP basic authentication as `user:pass`", "USER:PASS")
			proxies := fs.String("trusted-proxies", "", "comma-separated `addresses` (IPs or CIDRs) of reverse proxies whose X-Forwarded-For names the client, for the login throttle")
			readOnly := fs.Bool("read-only", false, "hide the actions and refuse every change")
			base := fs.String("base-path", "", "serve under this URL `path` prefix, e.g. /queuety behind a reverse proxy")
			return func(e *Env, _ []string) error {
				opts := ui.Options{ListenAddr: *listen, ReadOnly: *readOnly, BasePath: *base, Logger: e.Logger()}
				var err error
				if opts.Token, err = token.read(e); err != nil {
					return err
				}
				auth, err := basic.read(e)
				if err != nil {
					return err
				}
				if auth != "" {
					if opts.Username, opts.Password, err = splitBasicAuth("--basic-auth", auth); err != nil {
						return err
					}
				}
				if opts.TrustedProxies, err = parsePrefixes(*proxies); err != nil {
					return Usagef("--trusted-proxies: %v", err)
				}
				switch {
				case opts.Token != "" && opts.Password != "":
					return Usagef("give a token or basic authentication, not both")
				case opts.Token == "" && opts.Password == "" && !ui.IsLoopback(*listen):
					return Usagef("--listen %s is reachable from other machines: give a token ($%s, --token-file) or basic authentication ($%s, --basic-auth-file)",
						*listen, EnvUIToken, EnvUIBasicAuth)
				case *base != "" && !strings.HasPrefix(*base, "/"):
					return Usagef("--base-path must start with /, got %q", *base)
				}
				if opts.Token != "" {
					if err := checkToken("the token", opts.Token); err != nil {
						return err
					}
				}
				opts.AllowUnauthenticated = opts.Token == "" && opts.Password == ""
				ctx, stop := signal.NotifyContext(e.Ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				c, err := e.Open()
				if err != nil {
					return err
				}
				defer c.Close()
				h, err := ui.New(c, opts)
				if err != nil {
					return Usagef("%v", err)
				}
				ln, err := net.Listen("tcp", *listen)
				if err != nil {
					return fmt.Errorf("listen on %s: %w", *listen, err)
				}
				mode := "no authentication (this machine only)"
				switch {
				case opts.Token != "":
					mode = "token"
				case opts.Password != "":
					mode = "basic authentication"
				}
				if opts.ReadOnly {
					mode += ", read-only"
				}
				fmt.Fprintf(e.Stdout, "Queuety UI on http://%s%s/ (%s); stop with Ctrl-C\n", ln.Addr(), strings.TrimRight(*base, "/"), mode)
				srv := newHTTPServer(h, uiWriteTimeout)
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

// parsePrefixes parses a comma-separated list of IP addresses and CIDR
// prefixes ("" is none).
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
