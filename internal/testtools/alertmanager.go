package testtools

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Alertmanager is a running Alertmanager on loopback.
type Alertmanager struct {
	URL     string // http://127.0.0.1:PORT
	Dir     string
	Process *Process
}

// StartAlertmanager starts the real Alertmanager (Debian names the binary
// prometheus-alertmanager; installed when missing) with config as its
// configuration, clustering off, a temporary storage directory and a free
// loopback port, and waits until it reports ready.
func StartAlertmanager(t testing.TB, config string) *Alertmanager {
	t.Helper()
	bin := EnsureTool(t, "prometheus-alertmanager", "prometheus-alertmanager")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatalf("write alertmanager config: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := StartProcess(t, dir, bin,
		"--config.file="+cfgPath,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
	)
	am := &Alertmanager{URL: "http://" + addr, Dir: dir, Process: p}
	waitHTTPReady(t, p, am.URL+"/-/ready", 60*time.Second)
	return am
}

// WebhookConfig returns an Alertmanager configuration that sends every alert
// to webhookURL at once: group_wait and group_interval are 1s so a test sees
// an alert within seconds of Prometheus sending it.
func WebhookConfig(webhookURL string) string {
	return fmt.Sprintf(`route:
  receiver: webhook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %s
        send_resolved: true
`, strconv.Quote(webhookURL))
}

// WebhookAlert is one alert of an Alertmanager webhook notification.
type WebhookAlert struct {
	Status      string            `json:"status"` // firing or resolved
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	// Receiver is the Alertmanager receiver of the notification that
	// carried the alert.
	Receiver string `json:"-"`
}

// WebhookMessage is an Alertmanager webhook notification (version 4).
type WebhookMessage struct {
	Version     string            `json:"version"`
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []WebhookAlert    `json:"alerts"`
}

// Webhook is an HTTP server that records Alertmanager notifications.
type Webhook struct {
	URL string

	mu       sync.Mutex
	messages []WebhookMessage
	errs     []error
	notify   chan struct{}
}

// NewWebhook serves a webhook receiver on loopback until the test ends.
func NewWebhook(t testing.TB) *Webhook {
	t.Helper()
	w := &Webhook{notify: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	w.URL = srv.URL + "/alerts"
	return w
}

func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var msg WebhookMessage
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	w.mu.Lock()
	for i := range msg.Alerts {
		msg.Alerts[i].Receiver = msg.Receiver
	}
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("decode webhook body %q: %w", tail(body, 256), err))
	} else {
		w.messages = append(w.messages, msg)
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
	}
}

// Messages returns the notifications received so far.
func (w *Webhook) Messages() []WebhookMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebhookMessage(nil), w.messages...)
}

// WaitForAlert waits until a notification carries an alert that match
// accepts, and returns it. It fails the test after timeout, or when a
// notification could not be decoded.
func (w *Webhook) WaitForAlert(t testing.TB, timeout time.Duration, match func(WebhookAlert) bool) WebhookAlert {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		errs := append([]error(nil), w.errs...)
		for _, m := range w.messages {
			for _, a := range m.Alerts {
				if match(a) {
					w.mu.Unlock()
					return a
				}
			}
		}
		n := len(w.messages)
		w.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("webhook received undecodable notifications: %v", errs)
		}
		select {
		case <-w.notify:
		case <-deadline:
			t.Fatalf("no matching alert at the webhook after %s (%d notifications: %+v)", timeout, n, w.Messages())
		}
	}
}
