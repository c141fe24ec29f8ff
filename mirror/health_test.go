package mirror

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

func readyOf(t *testing.T, url string) (int, ReadyReport) {
	t.Helper()
	resp, body := get(t, http.MethodGet, url+ReadyPath, nil)
	var rep ReadyReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("/readyz: %v: %s", err, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("/readyz Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	return resp.StatusCode, rep
}

func hasProblem(rep ReadyReport, check, code string) bool {
	for _, p := range rep.Problems {
		if p.Check == check && p.Code == code {
			return true
		}
	}
	return false
}

// tamperSchema flips a bit in every copy of the echo v1 schema in the
// store file at p (as an attacker or a failing disk would).
func tamperSchema(t *testing.T, p string) {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	schema, n := []byte(`"title":"echo v1"`), 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], schema)
		if j < 0 {
			break
		}
		raw[i+j+len(schema)/2] ^= 0x01
		i += j + len(schema)
		n++
	}
	if n == 0 {
		t.Fatal("the schema is not in the store file")
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorHealthReadyMetrics: a mirror had no liveness or readiness
// answer and no metrics, so an orchestrator could not tell a mirror that
// serves a damaged store, or one that can no longer read its store (and
// so goes stale), from a sound one. /healthz answers while the process
// runs; /readyz turns 503 when the store check fails (re-run when due by
// the injected clock) and when a refresh cannot read the store; /metrics
// counts requests by route and status and reports the generation served.
func TestMirrorHealthReadyMetrics(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	var now atomic.Int64
	now.Store(testNow.Unix())
	var broken atomic.Bool
	m, ts := startMirror(t, p, func(o *Options) {
		o.Now = func() time.Time { return time.Unix(now.Load(), 0) }
		o.ReadyRecheck = time.Hour
		open := o.Open
		o.Open = func() (Source, error) {
			if broken.Load() {
				return nil, errors.New("store unreadable in this test")
			}
			return open()
		}
	})

	resp, body := get(t, http.MethodGet, ts.URL+HealthPath, nil)
	var health map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &health) != nil || health["status"] != "ok" || health["generation"] != float64(m.Generation()) {
		t.Fatalf("/healthz: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, http.MethodPost, ts.URL+HealthPath, nil); resp.StatusCode != 405 {
		t.Fatalf("POST /healthz: %d %s", resp.StatusCode, body)
	}
	if code, rep := readyOf(t, ts.URL); code != 200 || rep.Status != "ready" || rep.Generation != m.Generation() || len(rep.Problems) != 0 {
		t.Fatalf("/readyz over a sound store: %d %+v", code, rep)
	}

	// A damaged store: ready until the check is due again, then not.
	tamperSchema(t, p)
	if code, _ := readyOf(t, ts.URL); code != 200 {
		t.Fatalf("/readyz re-ran the store check before it was due: %d", code)
	}
	now.Add(int64(2 * time.Hour / time.Second))
	if code, rep := readyOf(t, ts.URL); code != 503 || rep.Status != "not_ready" || !hasProblem(rep, "integrity", "store_damaged") {
		t.Fatalf("/readyz over a damaged store: %d %+v", code, rep)
	}

	// A store the mirror can no longer read: not ready, and counted.
	broken.Store(true)
	if err := m.Refresh(); err == nil {
		t.Fatal("a refresh of an unreadable store succeeded")
	}
	if code, rep := readyOf(t, ts.URL); code != 503 || !hasProblem(rep, "refresh", "store_unreadable") {
		t.Fatalf("/readyz after a failed refresh: %d %+v", code, rep)
	}

	rec := httptest.NewRecorder()
	m.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	text := rec.Body.String()
	for _, want := range []string{
		"ampbundle_mirror_generation " + strconv.FormatUint(m.Generation(), 10),
		"ampbundle_mirror_bundles 1",
		"ampbundle_mirror_snapshots_total 1",
		"ampbundle_mirror_refresh_failures_total 1",
		`ampbundle_mirror_http_requests_total{route="healthz",status="200"} 1`,
		`ampbundle_mirror_http_requests_total{route="healthz",status="405"} 1`,
		`ampbundle_mirror_http_requests_total{route="readyz",status="503"} 2`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
}

// A store damaged everywhere must not make /readyz (the mirror's or the
// agent's, which writes its answer through ServeReady) grow with the
// damage: the report lists at most maxReadyProblems (what the log gets),
// and the answer, which names each failing check and code once
// (MIRROR-9), says 503 and is never cached.
func TestBadlyDamagedStoreReadyAnswerStaysBounded(t *testing.T) {
	rep := ReadyReport{Status: "not_ready", Problems: []ReadyProblem{}}
	for _, p := range StoreCheckProblems(make([]resolver.Problem, 10*maxReadyProblems), nil) {
		rep.Add(p)
	}
	if len(rep.Problems) != maxReadyProblems {
		t.Fatalf("the report holds %d problems, want %d", len(rep.Problems), maxReadyProblems)
	}
	rec := httptest.NewRecorder()
	ServeReady(rec, rep)
	var got ReadyReport
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Cache-Control") != "no-store" ||
		len(got.Problems) != 1 || got.Problems[0].Code != "store_damaged" {
		t.Fatalf("answer %d %q with %d problems, want 503 no-store with store_damaged once",
			rec.Code, rec.Header().Get("Cache-Control"), len(got.Problems))
	}
	if p := StoreCheckProblems(nil, errors.New("bolt: cannot open")); len(p) != 1 || p[0].Code != "store_unreadable" ||
		strings.Contains(p[0].Message, "bolt") {
		t.Fatalf("a check that could not run: %+v, want one store_unreadable not echoing the cause", p)
	}
}
