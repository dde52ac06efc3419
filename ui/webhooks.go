package ui

import (
	"fmt"
	"net/http"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
	"github.com/queuety/queuety-go/store/driver"
)

// webhooksPerPage is the webhooks page's page size.
const webhooksPerPage = 100

// webhooksData is what the webhooks page shows. A webhook's secret is
// never read for it: Tx.WebhookPage reads only whether there is one.
type webhooksData struct {
	Webhooks []*queuetytype.Webhook
	Pager    *pager
	Events   []string
}

func (s *server) webhooksPage(w http.ResponseWriter, r *http.Request) {
	k, err := keysetFrom(r.URL.Query(), webhooksPerPage)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad filter: %v.", err)
		return
	}
	ctx := r.Context()
	var page *driver.Page[*queuetytype.Webhook]
	if err := s.store().InTx(ctx, func(tx driver.Tx) (err error) { page, err = tx.WebhookPage(ctx, k); return err }); err != nil {
		s.failErr(w, r, err)
		return
	}
	d := &webhooksData{Events: queuety.WebhookEvents()}
	d.Webhooks, d.Pager = newPager(page, k, webhooksPerPage, func(h *queuetytype.Webhook) int64 { return h.ID }, s.pageLink("/webhooks", nil))
	for _, wh := range d.Webhooks {
		wh.Secret = "" // never read; cleared all the same
	}
	s.page(w, r, "webhooks", "Webhooks", "webhooks", true, d)
}

// webhookRemoveAction deletes a webhook and its secret.
func (s *server) webhookRemoveAction(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "webhook")
	if !ok {
		return
	}
	if err := s.c.RemoveWebhook(r.Context(), id); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.done(w, r, "/webhooks", "Webhook %s removed.", fmt.Sprint(id))
}
