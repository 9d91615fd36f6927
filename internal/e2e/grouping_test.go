package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestJobSettingsWarningsNotifyOnce: a 64-rank job on 8 nodes with
// HCCL_RDMA_QPS_PER_CONNECTION=16 raises HCCLQPsPerConnectionAboveRecommended
// once per node (once per settings set per node, alerts/tests/capacity.yml);
// the shipped Alertmanager example routes them to the job owner as one
// notification, and another job's set as another.
func TestJobSettingsWarningsNotifyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	pager, chat, ownerPager, owner := testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, alertmanagerConfig(t, pager.URL, chat.URL, ownerPager.URL, owner.URL))
	type postable struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
	}
	now := time.Now()
	var batch []postable
	alert := func(instance, settings string) postable {
		return postable{Labels: map[string]string{
			"alertname": "HCCLQPsPerConnectionAboveRecommended", "severity": "warning", "audience": "job-owner", "cluster": "llm",
			"job": "hccl_exporter", "instance": instance, "settings": settings,
		}, Annotations: map[string]string{"summary": "s"}, StartsAt: now}
	}
	for i := 1; i <= 8; i++ {
		batch = append(batch, alert(fmt.Sprintf("node-%d:9842", i), "5e771a6d"))
	}
	batch = append(batch, alert("node-9:9842", "0c4be4a2"))
	body, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST alerts: %s", resp.Status)
	}
	isOther := func(a testtools.WebhookAlert) bool { return a.Labels["settings"] == "0c4be4a2" }
	owner.WaitForAlert(t, 30*time.Second, isOther)
	owner.WaitForAlert(t, 30*time.Second, func(a testtools.WebhookAlert) bool { return a.Labels["settings"] == "5e771a6d" })
	time.Sleep(3 * time.Second) // several group intervals: a split group would show by now
	groups := map[string]int{}  // settings → notifications
	for _, m := range owner.Messages() {
		sets := map[string]int{}
		for _, a := range m.Alerts {
			sets[a.Labels["settings"]]++
		}
		if len(sets) != 1 {
			t.Errorf("one notification mixes settings sets: %v", sets)
		}
		for s, n := range sets {
			groups[s]++
			if s == "5e771a6d" && n != 8 {
				t.Errorf("the job's notification carries %d of its 8 nodes' alerts (group labels %v)", n, m.GroupLabels)
			}
		}
	}
	if groups["5e771a6d"] != 1 || groups["0c4be4a2"] != 1 {
		t.Errorf("notifications per settings set %v, want one each", groups)
	}
	if n := len(pager.Messages()) + len(ownerPager.Messages()); n != 0 {
		t.Errorf("%d pages for a warning", n)
	}
	if n := len(chat.Messages()); n != 0 {
		t.Errorf("%d notifications of the job owner's warning in the infrastructure chat", n)
	}
}
