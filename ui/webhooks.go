package ui

import (
	"fmt"
	"net/http"

	"github.com/queuety/queuety-go/queuety"
	"github.com/queuety/queuety-go/queuetytype"
)

// webhooksShown caps the webhooks the page lists.
const webhooksShown = 500

// webhooksData is what the webhooks page shows. A webhook's secret is
// never read for it: Client.Webhooks leaves secrets out.
type webhooksData struct {
	Webhooks []*queuetytype.Webhook
	More     int // webhooks past webhooksShown, not listed
	Events   []string
}

func (s *server) webhooksPage(w http.ResponseWriter, r *http.Request) {
	list, err := s.c.Webhooks(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d := &webhooksData{Events: queuety.WebhookEvents()}
	for _, wh := range list {
		wh.Secret = "" // listed without secrets; cleared again all the same
	}
	if len(list) > webhooksShown {
		d.More = len(list) - webhooksShown
		list = list[:webhooksShown]
	}
	d.Webhooks = list
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
