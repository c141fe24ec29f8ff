package catalog

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestBundleExpiringAfterTheReadIsNotShownInUse: the model was read again
// only when the store generation moved or it was an hour old
// (DefaultMaxAge), so a bundle that expired after the read kept its "in
// use" state, and its capability stayed listed as installed, though the
// store refused every use of it (5002 bundle_expired): the operator was
// told an expired bundle was fine for up to an hour. The model is read
// again once the earliest expiry after its read has passed.
func TestBundleExpiringAfterTheReadIsNotShownInUse(t *testing.T) {
	// hostileBundle expires 10 days after testNow.
	expiry := testNow.Add(10 * 24 * time.Hour)
	var clock atomic.Pointer[time.Time]
	before := expiry.Add(-10 * time.Minute)
	clock.Store(&before)
	now := func() time.Time { return *clock.Load() }
	p := newStore(t, hostileBundle(t))
	h, err := NewHandler(Options{Now: now, Open: func() (Source, error) {
		return resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile"); !strings.Contains(body, "<dd>in use</dd>") {
		t.Fatalf("before its expiry the bundle is not in use:\n%s", body)
	}
	after := expiry.Add(10 * time.Minute)
	clock.Store(&after)
	// What the store says now.
	s, err := resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.Bundles()
	s.Close()
	if err != nil || len(bs) == 0 {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.BundleID == "org.hostile" && !b.Expired {
			t.Fatalf("the store does not see the bundle as expired")
		}
	}
	_, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile")
	if strings.Contains(body, "<dd>in use</dd>") || !strings.Contains(body, "expired") {
		t.Errorf("after its expiry, a bundle the store refuses as expired is still shown \"in use\" (the model is 20 minutes old)")
	}
	res, _ := get(t, h, http.MethodGet, "/ui/version?name=org.hostile.script&v=1.0.0")
	if res.StatusCode == http.StatusOK {
		t.Errorf("the capability of the expired bundle is still shown as an installed version (status %d)", res.StatusCode)
	}
}

// TestExpiredBundleIsNotShownInUseWhileTheStoreCannotBeRead: the model is
// read again once its earliest expiry passes (turnsAt), but only when the
// store can be opened; when it cannot (an import holding the bbolt lock,
// the store moved), ServeHTTP logs "serving the last model" and every page
// goes on showing the expired bundle "in use" and its capability as an
// installed version, for as long as the store stays unreadable. The
// model's earliest expiry after its read has passed and it is not read
// again, every page answers 503 (Retry-After), never the stale state; once
// the store can be read, the pages come back with the bundle expired.
func TestExpiredBundleIsNotShownInUseWhileTheStoreCannotBeRead(t *testing.T) {
	expiry := testNow.Add(10 * 24 * time.Hour) // hostileBundle's
	var clock atomic.Pointer[time.Time]
	before := expiry.Add(-10 * time.Minute)
	clock.Store(&before)
	now := func() time.Time { return *clock.Load() }
	p := newStore(t, hostileBundle(t))
	var broken atomic.Bool
	h, err := NewHandler(Options{Now: now, Open: func() (Source, error) {
		if broken.Load() {
			return nil, errors.New("store locked by an import")
		}
		return resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile"); !strings.Contains(body, "<dd>in use</dd>") {
		t.Fatalf("before its expiry the bundle is not in use:\n%s", body)
	}
	broken.Store(true)
	after := expiry.Add(10 * time.Minute)
	clock.Store(&after)
	if _, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile"); strings.Contains(body, "<dd>in use</dd>") {
		t.Errorf("10 minutes after its expiry, with the store unreadable, the bundle is still shown \"in use\"")
	}
	if res, _ := get(t, h, http.MethodGet, "/ui/version?name=org.hostile.script&v=1.0.0"); res.StatusCode == http.StatusOK {
		t.Errorf("the capability of the expired bundle is still shown as an installed version while the store is unreadable")
	}
	if res, _ := get(t, h, http.MethodGet, "/ui/"); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("past an expiry with the store unreadable the index answers %d, want 503 with Retry-After", res.StatusCode)
	}
	broken.Store(false)
	later := after.Add(DefaultRefresh + time.Second)
	clock.Store(&later)
	res, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile")
	if res.StatusCode == http.StatusServiceUnavailable || strings.Contains(body, "<dd>in use</dd>") {
		t.Errorf("once the store can be read again the bundle page answers %d (in use: %v)", res.StatusCode, strings.Contains(body, "<dd>in use</dd>"))
	}
}
