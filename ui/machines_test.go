package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuety/queuety-go/machine"
	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// dispatchTicket dispatches a machine that waits in "open" for assign.
func dispatchTicket(t *testing.T, c *queuety.Client) int64 {
	t.Helper()
	id, err := machine.New("ticket").Version("tickets.v2").
		State("open").On("assign", "assigned").
		State("assigned").On("close", "closed").
		Terminal("closed", queuetytype.MachineCompleted).
		Dispatch(context.Background(), c, queuety.State{"title": "printer on fire"})
	require.NoError(t, err)
	return id
}

func machineState(t *testing.T, c *queuety.Client, id int64) *queuetytype.MachineState {
	t.Helper()
	st, err := c.MachineStatus(context.Background(), id)
	require.NoError(t, err)
	return st
}

// TestMachinePages: the machines list and a machine's page show its
// status, state, accepted events and timeline; the event form sends an
// event; a rejected event, a bad payload, a bad id and a bad filter are
// refused with their status codes and change nothing; read-only hides
// the form and refuses the post.
func TestMachinePages(t *testing.T) {
	eachStore(t, func(t *testing.T, c *queuety.Client) {
		id := dispatchTicket(t, c)
		b := newBrowser(t, Handler(c, open))
		res := b.get("/machines")
		require.Equal(t, http.StatusOK, res.StatusCode, res.body)
		for _, w := range []string{`id="machines"`, fmt.Sprintf(`data-machine="%d"`, id), "ticket", "waiting_event", "assign", "tickets.v2"} {
			assert.Contains(t, res.body, w)
		}
		assert.Contains(t, b.get("/machines?status=waiting_event&partial=1").body, fmt.Sprintf(`data-machine="%d"`, id))
		assert.NotContains(t, b.get("/machines?status=completed").body, fmt.Sprintf(`data-machine="%d"`, id))
		page := fmt.Sprintf("/machines/%d", id)
		res = b.get(page)
		require.Equal(t, http.StatusOK, res.StatusCode, res.body)
		for _, w := range []string{`id="event-form"`, `<option value="assign">`, "printer on fire", `id="machine-timeline"`, "machine_started"} {
			assert.Contains(t, res.body, w)
		}

		res = b.post(page+"/event", url.Values{"event": {"assign"}, "payload": {`{"to": "ada"}`}, "back": {page}})
		assert.Equal(t, http.StatusSeeOther, res.StatusCode, res.body)
		st := machineState(t, c, id)
		assert.Equal(t, "assigned", st.CurrentState)
		assert.Equal(t, "ada", st.State["to"])

		b.get(page)
		assert.Equal(t, http.StatusConflict, b.post(page+"/event", url.Values{"event": {"assign"}}).StatusCode, "rejected event")
		assert.Equal(t, http.StatusBadRequest, b.post(page+"/event", url.Values{"event": {"close"}, "payload": {`[1]`}}).StatusCode)
		assert.Equal(t, http.StatusBadRequest, b.post(page+"/event", url.Values{"event": {" "}}).StatusCode)
		assert.Equal(t, "assigned", machineState(t, c, id).CurrentState, "unchanged")
		assert.Equal(t, http.StatusBadRequest, b.get("/machines/abc").StatusCode)
		assert.Equal(t, http.StatusNotFound, b.get("/machines/999999").StatusCode)
		assert.Equal(t, http.StatusBadRequest, b.get("/machines?status=sleeping").StatusCode)

		ro := newBrowser(t, Handler(c, Options{AllowUnauthenticated: true, ReadOnly: true, Logger: quiet()}))
		assert.NotContains(t, ro.get(page).body, `id="event-form"`, "read-only")
		assert.NotEqual(t, http.StatusSeeOther, ro.do(http.MethodPost, page+"/event", url.Values{"event": {"close"}}, nil).StatusCode, "read-only post")
		assert.Equal(t, "assigned", machineState(t, c, id).CurrentState, "unchanged by a read-only UI")
	})
}

// TestMachineBrowser drives a machine's page in headless Chromium: the
// page loads under the CSP, the event form sends an event and the flash
// and the new state show.
func TestMachineBrowser(t *testing.T) {
	c := openStore(t, "sqlite")
	id := dispatchTicket(t, c)
	srv := httptest.NewServer(Handler(c, Options{AllowUnauthenticated: true, RefreshInterval: 300 * time.Millisecond, Logger: quiet()}))
	t.Cleanup(srv.Close)
	browser := newChrome(t)
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(sctx, actions...), what)
	}
	text := func(sel string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}
	step("machines list",
		chromedp.Navigate(srv.URL+"/machines"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-machine="%d"]`, id))),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="on"]`))) // the script runs under the CSP
	// The list swaps its rows every 300 ms; paused, the row link clicked
	// next stays the node the click found.
	step("pause the live refresh",
		chromedp.Click(chromedp.CSS("#live-toggle")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="off"]`)))
	step("machine page",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-machine="%d"] a`, id))),
		chromedp.WaitVisible(chromedp.CSS("#event-form")))
	assert.Contains(t, text("#machine-events"), "assign")
	step("send an event",
		chromedp.SendKeys(chromedp.CSS("#event-payload"), `{"to": "grace"}`),
		chromedp.Click(chromedp.CSS("#send-event")),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
	assert.Contains(t, text("#flash"), "Event assign sent")
	assert.Contains(t, text("#machine-state"), "assigned")
	assert.Contains(t, text("#machine-timeline"), "transitioned")
	assert.Equal(t, "grace", machineState(t, c, id).State["to"])
}
