package ui

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/internal/clientseam"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/worker"
)

// pageSession drives one headless browser logged in to a UI server.
type pageSession struct {
	t       *testing.T
	url     string
	browser context.Context
	dir     string
	prefix  string
}

// newPageSession starts a UI server for c with opts (a token is added)
// and a browser logged in to it.
func newPageSession(t *testing.T, c *queuety.Client, opts Options) *pageSession {
	t.Helper()
	const token = "browser-pages-token"
	opts.Token = token
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	srv := httptest.NewServer(Handler(c, opts))
	t.Cleanup(srv.Close)
	dir := screenshotDir(t)
	prefix := filepath.Base(t.Name()) + "-"
	if parent := filepath.Dir(t.Name()); parent != "." {
		prefix = filepath.Base(parent) + "-" + prefix
	}
	p := &pageSession{t: t, url: srv.URL, browser: newChrome(t), dir: dir, prefix: prefix}
	p.step("log in",
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/logout"]`))) // on the page after the login
	return p
}

// step runs browser actions with a bound on how long they may wait.
func (p *pageSession) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...), what)
}

// open navigates to a path of the UI and waits for sel.
func (p *pageSession) open(path, sel string) {
	p.t.Helper()
	p.step("open "+path, chromedp.Navigate(p.url+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// text is the visible text of the first element sel matches.
func (p *pageSession) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	require.NoError(p.t, err, sel)
	return s
}

// attrs are the attributes of every element sel matches (none: empty).
func (p *pageSession) attrs(sel string) []map[string]string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	require.NoError(p.t, err, sel)
	if len(n) == 0 {
		return nil
	}
	all, err := chromedp.Run(ctx, chromedp.AttributesAll(chromedp.CSSAll(sel)))
	require.NoError(p.t, err, sel)
	return all
}

// shot saves a screenshot of the whole page as <test>-<name>.png.
func (p *pageSession) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(filepath.Join(p.dir, p.prefix+name+".png"), png, 0o644))
}

// shotOf saves a screenshot of the first element sel matches.
func (p *pageSession) shotOf(sel, name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.browser, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	require.NoError(p.t, err)
	require.NoError(p.t, os.WriteFile(filepath.Join(p.dir, p.prefix+name+".png"), png, 0o644))
}

// bucketValues maps data-bucket to data-value of the elements sel matches.
func bucketValues(t *testing.T, attrs []map[string]string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, a := range attrs {
		i, err := strconv.Atoi(a["data-bucket"])
		require.NoError(t, err)
		out[i] = a["data-value"]
	}
	return out
}

// pastClient is a client on c's store whose clock is clock (not closed:
// it shares c's store).
func pastClient(c *queuety.Client, clock *queuety.FakeClock) *queuety.Client {
	return clientseam.NewClient(clientseam.StoreOf(c), queuety.WithClock(clock), queuety.WithLogger(quiet())).(*queuety.Client)
}

// chartWorker runs the chart handlers on c until nothing is due:
// chart.ok succeeds, chart.slow runs at least 300ms (durations are
// measured on the wall clock), chart.bad fails.
func chartWorker(t *testing.T, c *queuety.Client) {
	t.Helper()
	w := worker.New(c, worker.Queues("charts"), worker.Concurrency(1), worker.WithLogger(quiet()), worker.PollInterval(10*time.Millisecond))
	w.HandleJob("chart.ok", func(context.Context, queuety.Payload) error { return nil })
	w.HandleJob("chart.slow", func(context.Context, queuety.Payload) error { time.Sleep(300 * time.Millisecond); return nil })
	w.HandleJob("chart.bad", func(context.Context, queuety.Payload) error { return errors.New("chart failure") })
	_, err := w.RunOnce(context.Background(), time.Minute)
	require.NoError(t, err)
}
