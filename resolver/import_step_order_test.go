package resolver

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestImportFaultStepsFireInOrder pins the named steps an import passes,
// in order, for each of its outcomes: a step moved across another (a side
// effect before a check, a check after the final transaction) changes the
// list. The steps are the fault hooks (Store.fault).
func TestImportFaultStepsFireInOrder(t *testing.T) {
	expiring := testNow.Add(24 * time.Hour)
	newBundle := func(t *testing.T) []byte { return largeBundle(t, 4, 32<<10) }
	for _, tc := range []struct {
		name    string
		data    func(t *testing.T) []byte
		floor   bool   // the store's floor passed the bundle's expiry first
		refused string // the error name, "" for none
		want    string
	}{
		{"new bundle", newBundle, false, "", "verify stage stage stage commit commit-inside commit-end"},
		{"unchanged", func(t *testing.T) []byte { return sampleBytes(t, "translate") }, false, "", "verify"},
		{"hash refused while staging", func(t *testing.T) []byte {
			data := newBundle(t)
			data[len(data)-200] ^= 1 // inside the last artifacts
			return data
		}, false, string(bundle.ErrHashMismatch), "verify stage refusal-audit"},
		{"refused before staging", func(t *testing.T) []byte {
			return variant(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &expiring })
		}, true, string(bundle.ErrExpired), "verify refusal-audit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testNow
			s := newStore(t, func(o *Options) {
				o.Now = func() time.Time { return clock }
				o.StageBatchBytes = 64 << 10
			})
			mustImport(t, s, sampleBytes(t, "translate"))
			if tc.floor {
				raiseFloor(t, s, &clock, testNow.Add(47*time.Hour))
			}
			data := tc.data(t)
			var steps []string
			setFaults(s, func(step string) error { steps = append(steps, step); return nil })
			_, err := importBytes(t, s, data, ImportOptions{})
			setFaults(s, nil)
			if got := string(amp.NameOf(err)); got != tc.refused {
				t.Fatalf("import: %v, want %q", err, tc.refused)
			}
			if got := strings.Join(steps, " "); got != tc.want {
				t.Fatalf("steps %q, want %q", got, tc.want)
			}
		})
	}
}

// TestImportRefusesABundleItsKeysFloorHasExpired: with the local clock set
// back, a bundle the reader finds unexpired is refused when the keys
// trusted for it have signed a time past its expiry (the store's floor),
// audited as a refusal of the verified bundle, and nothing is installed.
func TestImportRefusesABundleItsKeysFloorHasExpired(t *testing.T) {
	clock := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
	mustImport(t, s, sampleBytes(t, "translate"))
	raiseFloor(t, s, &clock, testNow.Add(47*time.Hour))
	before, gen := dumpBesidesAudit(t, s), s.Generation()
	expiring := testNow.Add(24 * time.Hour)
	_, err := importBytes(t, s, variant(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &expiring }), ImportOptions{})
	expectName(t, err, bundle.ErrExpired)
	if !strings.Contains(err.Error(), "keys trusted for it have signed a later time") {
		t.Fatalf("refused as %v, want the floor's refusal", err)
	}
	if s.Generation() != gen || dumpBesidesAudit(t, s) != before {
		t.Fatal("a bundle refused for its floor changed the store")
	}
	if e := lastAudit(t, s); e.Action != "import_refused" || e.Verdict != string(bundle.ErrExpired) ||
		e.BundleID != "org.example.translate" || e.Version != 2 {
		t.Fatalf("refusal audited as %+v", e)
	}
}

// TestImportOnAReadOnlyStoreReadsNothing: a read-only store refuses an
// import first (read_only, before the source's own check), without
// reading the stream or writing anything.
func TestImportOnAReadOnlyStoreReadsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(path, Options{Now: func() time.Time { return testNow }, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	r := &countingReader{}
	_, err = ro.Import(t.Context(), r, ImportOptions{Source: "not a url"})
	expectName(t, err, ErrReadOnly)
	if r.n != 0 {
		t.Fatalf("a read-only store read %d times from the stream", r.n)
	}
	if log, err := ro.Audit(); err != nil || len(log) != 0 {
		t.Fatalf("audit after a read-only refusal: %v %v", log, err)
	}
}

// countingReader counts its Reads and returns nothing.
type countingReader struct{ n int }

func (r *countingReader) Read([]byte) (int, error) { r.n++; return 0, nil }

// raiseFloor imports, at a clock set to at+1h, a bundle of another line
// created at at: the store's time floor is then at; the clock is set back
// to testNow.
func raiseFloor(t *testing.T, s *Store, clock *time.Time, at time.Time) {
	t.Helper()
	*clock = at.Add(time.Hour)
	mustImport(t, s, variant(t, 1, func(d *bundle.Draft) {
		d.BundleID, d.CreatedAt = "org.example.other", at
		d.Capabilities, d.Aliases = nil, nil
		for i := range d.Artifacts {
			if d.Artifacts[i].MediaType == bundle.MediaTypeDID {
				d.Artifacts = append(d.Artifacts[:i], d.Artifacts[i+1:]...)
				break
			}
		}
	}))
	*clock = testNow
	if !s.TimeFloor().Equal(at) {
		t.Fatalf("time floor %v, want %v", s.TimeFloor(), at)
	}
}
