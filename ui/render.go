package ui

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates/*.html files that are pages (the others
// hold the layout and shared parts).
var pageNames = []string{"overview", "jobs", "job", "workflows", "workflow", "workflowrow", "schedules", "machines", "machine", "workers", "login", "error", "bulk",
	"charts", "batches", "batch", "webhooks"}

// templates maps a page name to its template set: the layout, the shared
// parts and the page.
type templates map[string]*template.Template

// mustTemplates parses the pages; clock tells the time for the relative
// times ("5m ago") they show.
func mustTemplates(clock queuety.Clock) templates {
	fm := template.FuncMap{
		"ago":    func(t time.Time) string { return ago(t, clock.Now()) },
		"agoStr": func(s string) string { return ago(parseTime(s), clock.Now()) },
	}
	t := templates{}
	for _, name := range pageNames {
		t[name] = template.Must(template.New(name).Funcs(funcs).Funcs(pageFuncs).Funcs(fm).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/pageparts.html", "templates/"+name+".html"))
	}
	return t
}

// view is what every template gets: the page's data and what the layout
// needs.
type view struct {
	Title    string
	Nav      string // the highlighted menu entry
	Base     string // Options.BasePath
	CSRF     string
	ReadOnly bool
	Session  bool   // a login session: show the logout button
	Flash    string // a one-time message from the last action
	Error    bool   // Flash reports a failure
	Refresh  int    // live refresh interval in milliseconds; 0: none
	Here     string // this page's path and query, relative to Base
	Data     any
}

// isPartial reports whether the request wants only the live part of a
// page (the refresh script's requests).
func isPartial(r *http.Request) bool { return r.URL.Query().Get("partial") == "1" }

// here is the request's path and query without the partial flag: where
// an action's redirect returns to.
func here(r *http.Request) string {
	q := r.URL.Query()
	q.Del("partial")
	if len(q) == 0 {
		return r.URL.Path
	}
	return r.URL.Path + "?" + q.Encode()
}

// newView fills in the layout's fields.
func (s *server) newView(w http.ResponseWriter, r *http.Request, title, nav string, data any) *view {
	v := &view{Title: title, Nav: nav, Base: s.opts.BasePath, CSRF: s.csrfToken(r), ReadOnly: s.opts.ReadOnly,
		Here: here(r), Data: data}
	if c, err := r.Cookie(sessionCookie); err == nil && s.opts.Token != "" && s.validSession(c.Value) {
		v.Session = true
	}
	if !isPartial(r) {
		if msg := s.takeFlash(w, r); msg != "" {
			v.Flash, v.Error = strings.CutPrefix(msg, "!")
		}
	}
	return v
}

// render writes a page, or only its "live" template for a partial
// request. It renders into a buffer first, so a template error becomes an
// error page rather than half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	t := s.tmpl[name]
	tname := "layout"
	if isPartial(r) && t.Lookup("live") != nil {
		tname = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tname, v); err != nil {
		id := s.logFailure(r, "ui: render "+name, err)
		if name != "error" {
			s.fail(w, r, http.StatusInternalServerError, "Internal error: the page could not be rendered. The server's log has the details under error id %s.", id)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// page renders a page with live refresh when refresh is true.
func (s *server) page(w http.ResponseWriter, r *http.Request, name, title, nav string, refresh bool, data any) {
	v := s.newView(w, r, title, nav, data)
	if refresh && s.opts.RefreshInterval > 0 {
		v.Refresh = int(s.opts.RefreshInterval.Milliseconds())
	}
	s.render(w, r, http.StatusOK, name, v)
}

// fail renders the error page with a status and a message.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if isPartial(r) {
		http.Error(w, msg, status)
		return
	}
	v := &view{Title: http.StatusText(status), Base: s.opts.BasePath, ReadOnly: s.opts.ReadOnly,
		Data: map[string]any{"Status": status, "Message": msg}}
	if _, ok := r.Context().Value(csrfSeedKey).(string); ok {
		v.CSRF = s.csrfToken(r)
	}
	s.render(w, r, status, "error", v)
}

// failErr renders the error page for an error from the client: 404 (a
// plain "not found") for ErrNotFound, 409 for ErrInvalidState and 400 for
// ErrInvalidArgument with the refusal's reason, and otherwise 500 with
// nothing of the error but an id: the error itself, which may be a
// database's message, goes to the log under that id.
func (s *server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	switch status := errStatus(err); status {
	case http.StatusNotFound:
		s.fail(w, r, status, "Not found: there is no such %s.", notFoundWhat(r.URL.Path))
	case http.StatusInternalServerError:
		id := s.logFailure(r, "ui: request failed", err)
		s.fail(w, r, status, "Internal error: the request could not be served. The server's log has the details under error id %s.", id)
	default:
		s.fail(w, r, status, "%s", cleanError(err))
	}
}

// logFailure logs an error the page does not show, under a new random
// id, and returns the id for the page.
func (s *server) logFailure(r *http.Request, msg string, err error) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	s.log.Error(msg, "error_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	return id
}

// notFoundWhat names what a path refers to, for the 404 page.
func notFoundWhat(p string) string {
	switch {
	case strings.HasPrefix(p, "/jobs/"):
		return "job"
	case strings.HasPrefix(p, "/workflows/"):
		return "workflow"
	case strings.HasPrefix(p, "/schedules/"):
		return "schedule"
	case strings.HasPrefix(p, "/machines/"):
		return "state machine"
	case strings.HasPrefix(p, "/batches/"):
		return "batch"
	case strings.HasPrefix(p, "/webhooks/"):
		return "webhook"
	}
	return "page"
}

func errStatus(err error) int {
	switch {
	case errors.Is(err, queuetytype.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, queuetytype.ErrInvalidState), errors.Is(err, queuetytype.ErrEventRejected):
		return http.StatusConflict
	case errors.Is(err, queuetytype.ErrInvalidArgument), errors.Is(err, queuetytype.ErrInvalidTimeout):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// cleanError drops the package prefixes wrapped errors repeat.
func cleanError(err error) string {
	msg := strings.ReplaceAll(err.Error(), "queuety: ", "")
	if msg == "" {
		return "unknown error"
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// loginForm renders the login page with a status, the page to go to
// after the login, and an error message.
func (s *server) loginForm(w http.ResponseWriter, r *http.Request, status int, next, problem string) {
	v := s.newView(w, r, "Log in", "", map[string]string{"Next": next, "Problem": problem})
	s.render(w, r, status, "login", v)
}

// static serves the embedded script, style sheet and icon.
func (s *server) static(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := path.Clean(strings.TrimPrefix(r.URL.Path, "/"))
	b, err := fs.ReadFile(staticFS, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}

// funcs are the template helpers.
var funcs = template.FuncMap{
	"ts":       formatTime,
	"tsStr":    func(s string) string { return formatTime(parseTime(s)) },
	"dur":      formatDuration,
	"deref":    func(p *int) string { return intp(p) },
	"int64p":   func(p *int64) string { return int64p(p) },
	"add":      func(a, b int) int { return a + b },
	"pct":      func(a, b int) int { return pct(a, b) },
	"canRetry": func(st queuetytype.JobStatus) bool { return st == queuetytype.JobBuried || st == queuetytype.JobFailed },
	"act":      newAction,
	"first": func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return l[0]
	},
	"field":     func(name, value string) [2]string { return [2]string{name, value} },
	"internal":  isInternal,
	"trimBulk":  func(p string) string { return strings.TrimSuffix(p, "/bulk") },
	"spanSteps": func() int { return timelineSpanSteps },
}

// action is one action button: a POST form with the CSRF token, a
// return path, optional hidden fields and an optional confirmation.
type action struct {
	V            *view
	Path         string // relative to Base
	Label, Class string
	Confirm      string
	Fields       [][2]string
}

// newAction builds an action for the "action" template: view, path,
// label, CSS class, confirmation text and hidden fields (from field).
func newAction(v *view, p, label, class, confirm string, fields ...[2]string) *action {
	return &action{V: v, Path: p, Label: label, Class: class, Confirm: confirm, Fields: fields}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago says how long before now t was, or how far ahead it is ("in 5m").
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + formatDuration(-d)
	}
	return formatDuration(d) + " ago"
}

// formatDuration rounds a duration to what an operator needs: 45s, 12m,
// 3h20m, 2d4h.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// prettyJSON indents stored JSON text; text that is not JSON is shown as
// it is.
func prettyJSON(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

func intp(p *int) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprint(*p)
}

func int64p(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprint(*p)
}

func pct(a, b int) int {
	if b <= 0 {
		return 0
	}
	return min(100, a*100/b)
}
