//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ampbundle/ampbundle/amp"
)

// scrape fetches the metrics and parses the text exposition format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("not the prometheus text format: %v", err)
	}
	return fams
}

// value returns the value of the sample of family name whose labels
// include want, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsAfterKnownWorkload: after a known workload — a successful
// invocation, a failing handler program, a refused caller, bytes that are
// not a message and an unknown path — the metrics listener's counters say
// exactly that (threat: an operator blind to failing handlers and refused
// traffic), and the AMP listener does not serve /metrics.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example.translate.text"},
		"handlers": map[string]any{
			"org.example.translate.text:2.1.0": okHandler,
			"org.example.translate.text:2.0.0": map[string]any{"command": []string{"/bin/sh", "-c", `exit 3`}},
		}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--metrics-listen", "127.0.0.1:0")
	if r.metrics == "" || strings.HasPrefix(r.metrics, r.url) {
		t.Fatalf("metrics url %q (agent %q)", r.metrics, r.url)
	}
	c := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	if _, err := invokeID(t, c, "org.example.translate.text:2.1.0", params, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeID(t, c, "org.example.translate.text:2.0.0", params, 0); !errors.Is(err, amp.CodeInternalError) {
		t.Fatalf("failing program: %v", err)
	}
	for i := 0; i < 2; i++ {
		resp, err := http.Post(r.url+"/amp/v1/messages", "application/cbor", bytes.NewReader([]byte{0xa0}))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the AMP listener serves /metrics: %d", resp.StatusCode)
	}
	hresp, err := http.Get(r.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Generation float64 `json:"generation"`
	}
	json.NewDecoder(hresp.Body).Decode(&health)
	hresp.Body.Close()

	fams := scrape(t, r.metrics)
	invoke := amp.TypeCapInvoke.Name()
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ampagent_messages_total", map[string]string{"type": invoke, "code": "0"}, 1},
		{"ampagent_messages_total", map[string]string{"type": invoke, "code": "5001"}, 1},
		{"ampagent_messages_total", map[string]string{"type": "UNVERIFIED"}, 2},
		{"ampagent_message_duration_seconds", map[string]string{"type": invoke}, 2},
		{"ampagent_handler_runs_total", map[string]string{"capability": "org.example.translate.text:2.1.0"}, 1},
		{"ampagent_handler_runs_total", map[string]string{"capability": "org.example.translate.text:2.0.0"}, 1},
		{"ampagent_handler_failures_total", map[string]string{"capability": "org.example.translate.text:2.0.0", "reason": "exit"}, 1},
		{"ampagent_http_requests_total", map[string]string{"route": "/amp/v1/messages", "status": "200"}, 2},
		{"ampagent_http_requests_total", map[string]string{"route": "/amp/v1/messages", "status": "400"}, 2},
		{"ampagent_http_requests_total", map[string]string{"route": "other", "status": "404"}, 1},
		{"ampagent_http_requests_in_flight", nil, 0},
		{"ampagent_store_generation", nil, health.Generation},
		{"ampagent_ledger_entries", nil, 2},
		{"ampagent_bundle_expiry_timestamp_seconds", map[string]string{"bundle_id": "org.example.translate"},
			float64(time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC).Unix())},
	} {
		got, ok := value(fams, tc.name, tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := value(fams, "ampagent_handler_failures_total", map[string]string{"capability": "org.example.translate.text:2.1.0"}); ok {
		t.Error("a failure counted for the succeeding handler")
	}
	if health.Generation == 0 {
		t.Error("no generation in /healthz")
	}
	res := r.stop()
	// Each refused HTTP request is logged once: the agent logs the
	// unverified messages, the wrapper the 404.
	if n := strings.Count(res.stderr, "unverified message refused"); n != 2 {
		t.Errorf("unverified refusals logged %d times", n)
	}
	if n := strings.Count(res.stderr, `msg="http request refused" status=404`); n != 1 {
		t.Errorf("404 logged %d times:\n%s", n, res.stderr)
	}
	if strings.Contains(res.stderr, `msg="http request refused" status=400`) {
		t.Error("an unverified message logged twice")
	}
	if !strings.Contains(res.stderr, "capability=org.example.translate.text:2.0.0 code=5001 outcome=INTERNAL_ERROR name=handler_failed") {
		t.Errorf("the handler failure is not logged with its capability and code:\n%s", res.stderr)
	}
}

// TestMetricsListenIsLoopbackOnly: a metrics address on the network is
// refused like the agent's own (threat: capability names and traffic
// exposed to the network by a flag typo).
func TestMetricsListenIsLoopbackOnly(t *testing.T) {
	db, key := serveStore(t)
	code, exit := serveFails(t, "--db", db, "--key", key, "--listen", "127.0.0.1:0", "--allow", "*=org.example.", "--metrics-listen", "0.0.0.0:0")
	if code != "unsafe_listen" || exit != 1 {
		t.Fatalf("got %s exit %d", code, exit)
	}
}
