package resolver

import (
	"strings"

	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	bolt "go.etcd.io/bbolt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

func mustRead(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samplesDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func params(t testing.TB, v any) any {
	t.Helper()
	b, err := amp.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := offlineschema.ValueFromCBOR(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestA10_OfflineRegistryPositive is RFC 004 A.10: a descriptor whose
// schema-refs carry bundle_id + artifact_key + hash and no uri is accepted
// under the Offline Registry Profile, and validation succeeds against the
// local bytes with no network fetch.
func TestA10_OfflineRegistryPositive(t *testing.T) {
	noExternalLoads(t)
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	d := descriptor(t, s, "org.example.translate.text:2.1.0")
	if err := d.Validate(capability.ProfileOffline); err != nil {
		t.Fatal(err)
	}
	ref := d.InputSchema
	if ref.URI != "" || ref.BundleID == "" || ref.ArtifactKey == "" {
		t.Fatalf("the sample descriptor is not offline-only: %+v", ref)
	}
	data, err := s.Resolve(ref)
	if err != nil || !ref.Matches(data) {
		t.Fatalf("resolve: %v", err)
	}
	sch, err := s.Schema(ref)
	if err != nil {
		t.Fatal(err)
	}
	// The $refs (relative text.json, language.json by its $id) resolved
	// inside the bundle.
	if deps := sch.Deps(); len(deps) != 3 {
		t.Fatalf("deps %v", deps)
	}
	if err := sch.Validate(params(t, map[string]any{"text": "hello", "target": "de"})); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	err = sch.Validate(params(t, map[string]any{"text": "hello", "target": "not a language"}))
	if !errors.Is(err, amp.CodeSchemaViolation) {
		t.Fatalf("invalid params: %v", err)
	}
}

// TestA11_OfflineArtifactMissing is RFC 004 A.11: a missing local artifact,
// or one whose hash does not verify, is 5002.
func TestA11_OfflineArtifactMissing(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	good := descriptor(t, s, "org.example.translate.text:2.1.0").InputSchema
	mod := func(f func(r *capability.SchemaRef)) capability.SchemaRef {
		r := good
		r.Hash = bytes.Clone(good.Hash)
		f(&r)
		return r
	}
	tests := []struct {
		name string
		ref  capability.SchemaRef
		want amp.ErrName
	}{
		{"missing artifact", mod(func(r *capability.SchemaRef) { r.ArtifactKey = "schemas/missing.json" }), ErrArtifactMissing},
		{"missing bundle", mod(func(r *capability.SchemaRef) { r.BundleID = "org.example.nope" }), ErrBundleMissing},
		{"hash mismatch", mod(func(r *capability.SchemaRef) { r.Hash[0] ^= 1 }), ErrHashMismatch},
		{"other hash algorithm", mod(func(r *capability.SchemaRef) { r.HashAlg = "sha-512"; r.Hash = make([]byte, 64) }), ErrHashMismatch},
		{"uri only", capability.SchemaRef{URI: "https://schemas.example.org/x.json", HashAlg: "sha-256", Hash: good.Hash}, ErrNoLocalLocator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Resolve(tt.ref)
			expect5002(t, err, tt.want)
			_, err = s.Schema(tt.ref)
			expect5002(t, err, tt.want)
		})
	}
}

// TestCheckReportsSchemaThatNoLongerCompiles: a schema whose $ref target
// is gone from the store (a store altered, or written before import
// refused such bundles) is a "schema" problem of check (threat: a store
// called sound whose capabilities fail only when a caller invokes them).
func TestCheckReportsSchemaThatNoLongerCompiles(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	// Drop the index entry of a schema others $ref (and put it back at the
	// end: the store's own cleanup checks it is sound).
	k := key2("org.example.translate", "schemas/common/text.json")
	var saved []byte
	if err := s.db.Update(func(tx *bolt.Tx) error {
		saved = clone(bucket(tx, bIndex).Get(k))
		return bucket(tx, bIndex).Delete(k)
	}); err != nil || saved == nil {
		t.Fatal(err)
	}
	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bIndex).Put(k, saved) }); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Kind == "schema" && strings.Contains(p.Message, "does not compile offline") {
			return
		}
	}
	t.Fatalf("check did not report the schema that no longer compiles: %v", ps)
}

// TestTamperedBlobInFile: change a stored blob's bytes directly in the bbolt
// file; resolve gives 5002 (never the bytes) and check reports it.
func TestTamperedBlobInFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"})
	mustImport(t, s, sampleBytes(t, "translate"))
	ref := descriptor(t, s, "org.example.translate.text:1.0.0").OutputSchema
	s.Close()
	// Flip one byte of the output schema where it sits in the file.
	raw, _ := os.ReadFile(path)
	schema := mustRead(t, "translate/capabilities/org.example.translate.text/1.0.0/output.schema.json")
	i := bytes.Index(raw, schema)
	if i < 0 || bytes.Count(raw, schema) != 1 {
		t.Fatalf("schema bytes found %d times in the file", bytes.Count(raw, schema))
	}
	raw[i+len(schema)/2] ^= 0x01
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Resolve(ref)
	expect5002(t, err, ErrHashMismatch)
	if got != nil {
		t.Fatal("tampered bytes were returned")
	}
	_, err = s.Schema(ref)
	expect5002(t, err, ErrHashMismatch)
	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps {
		if p.Kind == "blob" {
			found = true
		}
	}
	if !found {
		t.Fatalf("check did not report the tampered blob: %v", ps)
	}
	// Export refuses to hand the altered bundle on.
	if err := s.Export("org.example.translate", io.Discard); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("export of a tampered store: %v", err)
	}
}

// TestRemovedBundleFailsClosed: a compiled, cached schema is not served
// again once its bundle is removed.
func TestRemovedBundleFailsClosed(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	ref := descriptor(t, s, "org.example.translate.text:2.0.0").InputSchema
	first, err := s.Schema(ref)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Schema(ref); again != first {
		t.Fatal("a warm lookup compiled again")
	}
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Schema(ref)
	expect5002(t, err, ErrBundleMissing)
	// The same version cannot come back (its high-water mark stays).
	_, err = importBytes(t, s, sampleBytes(t, "translate"), ImportOptions{})
	expectName(t, err, ErrRollback)
	_, err = s.Schema(ref)
	expect5002(t, err, ErrBundleMissing)
}

// TestExpiredBundleFailsClosed: expiry is enforced at resolution by default
// (and can be relaxed).
func TestExpiredBundleFailsClosed(t *testing.T) {
	now := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return now } })
	mustImport(t, s, sampleBytes(t, "translate"))
	ref := descriptor(t, s, "org.example.translate.text:2.1.0").InputSchema
	if _, err := s.Schema(ref); err != nil {
		t.Fatal(err)
	}
	now = time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := s.Resolve(ref)
	expect5002(t, err, ErrBundleExpired)
	_, err = s.Schema(ref) // cached, but expired
	expect5002(t, err, ErrBundleExpired)
	now = testNow
}

// noExternalLoads turns the schema library's package-level loaders into
// tripwires for the test: our compiler must never reach them.
func noExternalLoads(t *testing.T) {
	t.Helper()
	saved := jsonschema.Loaders
	savedURL := jsonschema.LoadURL
	tripwire := func(url string) (io.ReadCloser, error) {
		t.Errorf("the schema library tried to load %s", url)
		return nil, errors.New("tripwire")
	}
	jsonschema.Loaders = map[string]func(string) (io.ReadCloser, error){"http": tripwire, "https": tripwire, "file": tripwire}
	jsonschema.LoadURL = tripwire
	t.Cleanup(func() { jsonschema.Loaders, jsonschema.LoadURL = saved, savedURL })
}

// TestImportRefusesSchemasThatCannotCompileOffline: a signed bundle whose
// schema $refs https, http or file, escapes the bundle, names a missing
// artifact, uses a remote $schema or loops through $refs is refused by
// import (schema_not_offline), as build refuses its source, and nothing
// is dialed or opened (threat: a bundle that installs, passes check, and
// fails only when a caller invokes it).
func TestImportRefusesSchemasThatCannotCompileOffline(t *testing.T) {
	noExternalLoads(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	local := filepath.Join(t.TempDir(), "local.json")
	os.WriteFile(local, []byte(`{"type":"string"}`), 0o644)
	cases := map[string]map[string]string{ // case -> extra schema files; "in" is the input schema
		"https":     {"in": `{"$ref":"https://json.schemastore.org/package.json"}`},
		"http":      {"in": `{"$ref":"` + srv.URL + `/schema.json"}`},
		"file":      {"in": `{"$ref":"file://` + local + `"}`},
		"relative":  {"in": `{"properties":{"x":{"$ref":"../../../../../../` + local + `"}}}`},
		"dangling":  {"in": `{"$ref":"missing.schema.json"}`},
		"schema":    {"in": `{"$schema":"https://example.com/my-meta-schema","type":"object"}`},
		"ref-cycle": {"in": `{"$ref":"#/definitions/a","definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}}}`},
		"root-loop": {"in": `{"$ref":"#"}`},
		"loop-via-common": {"in": `{"$ref":"common.schema.json#/$defs/a"}`,
			"common": `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"input.schema.json"}}}`},
	}
	k := sampleKey(t, "example-publisher")
	s := newStore(t)
	g := s.Generation()
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := "capabilities/org.example.offline." + name + "/1.0.0/"
			d := &bundle.Draft{BundleID: "org.example.offline." + name, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
			for f, body := range files {
				key := dir + f + ".schema.json"
				if f == "in" {
					key = dir + "input.schema.json"
				}
				d.Artifacts = append(d.Artifacts, bundle.BytesSource(key, bundle.MediaTypeSchema, []byte(body)))
			}
			d.Artifacts = append(d.Artifacts, bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(`{}`)))
			v, _ := capability.ParseVersion("1.0.0")
			d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: "org.example.offline." + name, Version: v,
				InputSchema: capability.SchemaRef{ArtifactKey: dir + "input.schema.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}})
			var buf bytes.Buffer
			// bundle.Write checks the format, not the schemas (ampbundle
			// build would refuse these).
			if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := importBytes(t, s, buf.Bytes(), ImportOptions{}); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrSchemaNotOffline) {
					t.Fatalf("import: %v, want schema_not_offline", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("import blocked (a load was attempted)")
			}
		})
	}
	if s.Generation() != g {
		t.Fatal("a refused import changed the store")
	}
	if bs, _ := s.Bundles(); len(bs) != 0 {
		t.Fatalf("%d bundles installed", len(bs))
	}
	if hits.Load() != 0 {
		t.Fatalf("the http server received %d requests", hits.Load())
	}
}

// TestSchemaCompiledOnce: concurrent first uses compile once.
func TestSchemaCompiledOnce(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	ref := descriptor(t, s, "org.example.translate.text:2.1.0").InputSchema
	var wg sync.WaitGroup
	got := make([]*offlineschema.Schema, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = s.Schema(ref)
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g == nil || g != got[0] {
			t.Fatal("concurrent lookups got different compiled schemas")
		}
	}
}

func TestExportByteIdentical(t *testing.T) {
	s := newStore(t)
	for _, name := range []string{"translate", "geo"} {
		mustImport(t, s, sampleBytes(t, name))
	}
	for name, id := range map[string]string{"translate": "org.example.translate", "geo": "com.acme.geo"} {
		var buf bytes.Buffer
		if err := s.Export(id, &buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), sampleBytes(t, name)) {
			t.Fatalf("export of %s differs from the imported file", id)
		}
	}
	if err := s.Export("org.example.nope", io.Discard); !errors.Is(err, ErrUnknownBundle) {
		t.Fatal(err)
	}
}
