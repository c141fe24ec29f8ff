package httpmetrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ampbundle/ampbundle/internal/httpmetrics"
)

// A server counts each request under a route name of its own choosing
// (never the peer's path) and the status its handler answered.
func Example() {
	reg := prometheus.NewRegistry()
	m := httpmetrics.New(reg, "example")
	notFound := http.NotFoundHandler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, _ := m.Serve(w, r, "other", notFound)
		fmt.Println("answered", status)
	})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/no/such/page", nil))
	fams, _ := reg.Gather()
	for _, f := range fams {
		fmt.Println(f.GetName(), f.GetType())
	}
	// Output:
	// answered 404
	// example_http_request_duration_seconds HISTOGRAM
	// example_http_requests_in_flight GAUGE
	// example_http_requests_total COUNTER
}
