package httpmetrics

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the families of reg by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// labelNames are the label names of a family's first sample.
func labelNames(f *dto.MetricFamily) []string {
	var names []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	return names
}

// TestMetricNamesHelpAndLabelsAreTheDocumentedOnes: the names, types,
// help strings, labels and buckets of both servers' HTTP metrics are the
// ones docs/CLI.md documents (threat: a dashboard or alert written from
// the documentation silently matches nothing after a refactoring).
func TestMetricNamesHelpAndLabelsAreTheDocumentedOnes(t *testing.T) {
	for _, prefix := range []string{"ampagent", "ampbundle_mirror"} {
		reg := prometheus.NewRegistry()
		m := New(reg, prefix)
		m.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil), "r", http.NotFoundHandler())
		fams := gather(t, reg)
		if len(fams) != 3 {
			t.Fatalf("%s: %d families, want 3", prefix, len(fams))
		}
		for _, want := range []struct {
			name, help string
			typ        dto.MetricType
			labels     []string
		}{
			{prefix + "_http_requests_total", "HTTP requests, by route and status code.", dto.MetricType_COUNTER, []string{"route", "status"}},
			{prefix + "_http_request_duration_seconds", "HTTP request latency, by route.", dto.MetricType_HISTOGRAM, []string{"route"}},
			{prefix + "_http_requests_in_flight", "HTTP requests being served.", dto.MetricType_GAUGE, nil},
		} {
			f := fams[want.name]
			if f == nil {
				t.Errorf("no family %s", want.name)
				continue
			}
			if f.GetHelp() != want.help || f.GetType() != want.typ || !slices.Equal(labelNames(f), want.labels) {
				t.Errorf("%s: help %q type %v labels %v, want %q %v %v", want.name, f.GetHelp(), f.GetType(), labelNames(f), want.help, want.typ, want.labels)
			}
			if h := f.GetMetric()[0].GetHistogram(); h != nil {
				var bounds []float64
				for _, b := range h.GetBucket() {
					bounds = append(bounds, b.GetUpperBound())
				}
				if !slices.Equal(bounds, prometheus.DefBuckets) {
					t.Errorf("%s: buckets %v, want prometheus.DefBuckets", want.name, bounds)
				}
			}
		}
	}
}

// TestServeCountsWhatTheHandlerAnswered: each request is counted once
// under its route and the status its handler answered (200 when it wrote
// nothing or only a body), its latency observed as the duration Serve
// returns, and it is in flight only while its handler runs (threat:
// refused traffic counted as success, or a gauge that only grows).
func TestServeCountsWhatTheHandlerAnswered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		label  string
	}{
		{"nothing written", func(http.ResponseWriter) {}, 200, "200"},
		{"body only", func(w http.ResponseWriter) { w.Write([]byte("ok")) }, 200, "200"},
		{"refused", func(w http.ResponseWriter) { w.WriteHeader(http.StatusRequestEntityTooLarge) }, 413, "413"},
		{"first status wins", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.WriteHeader(http.StatusOK)
		}, 503, "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := New(reg, "p")
			var during float64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				during = gather(t, reg)["p_http_requests_in_flight"].GetMetric()[0].GetGauge().GetValue()
				tc.write(w)
			})
			rec := httptest.NewRecorder()
			status, d := m.Serve(rec, httptest.NewRequest(http.MethodPost, "/peer/path", nil), "route", h)
			if status != tc.status || rec.Code != tc.status {
				t.Fatalf("Serve returned %d, the client got %d; want %d", status, rec.Code, tc.status)
			}
			fams := gather(t, reg)
			if during != 1 {
				t.Errorf("in flight while serving: %v, want 1", during)
			}
			if after := fams["p_http_requests_in_flight"].GetMetric()[0].GetGauge().GetValue(); after != 0 {
				t.Errorf("in flight after: %v, want 0", after)
			}
			reqs := fams["p_http_requests_total"].GetMetric()
			if len(reqs) != 1 || reqs[0].GetCounter().GetValue() != 1 ||
				reqs[0].GetLabel()[0].GetValue() != "route" || reqs[0].GetLabel()[1].GetValue() != tc.label {
				t.Errorf("requests_total: %v, want one request of route %q status %q", reqs, "route", tc.label)
			}
			hist := fams["p_http_request_duration_seconds"].GetMetric()
			if len(hist) != 1 || hist[0].GetHistogram().GetSampleCount() != 1 || hist[0].GetHistogram().GetSampleSum() != d.Seconds() {
				t.Errorf("duration: %v, want one sample of %v", hist, d.Seconds())
			}
		})
	}
}

// TestPanickingHandlerIsCountedAndLeavesNoneInFlight: a handler that
// panics (net/http recovers it and drops the connection) is still counted
// and leaves the in-flight gauge where it was (threat: a gauge stuck high
// after aborted requests, alerting on load that is not there).
func TestPanickingHandlerIsCountedAndLeavesNoneInFlight(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, "p")
	func() {
		defer func() {
			if recover() != http.ErrAbortHandler {
				t.Error("the handler's panic did not go on")
			}
		}()
		m.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), "r",
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	}()
	fams := gather(t, reg)
	if v := fams["p_http_requests_in_flight"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("in flight after the panic: %v, want 0", v)
	}
	if v := fams["p_http_requests_total"].GetMetric()[0].GetCounter().GetValue(); v != 1 {
		t.Errorf("requests counted: %v, want 1", v)
	}
}
