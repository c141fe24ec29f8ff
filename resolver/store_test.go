package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/keyfile"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

var samplesDir = filepath.Join("..", "testdata", "bundles")

func sampleKey(t testing.TB, name string) ed25519.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samplesDir, "keys", "TEST-ONLY-"+name+".key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyfile.ParsePrivate(data)
	if err != nil {
		t.Fatal(err)
	}
	return k.Ed25519
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// newStore opens a fresh store that trusts the example publisher for
// org.example and the acme publisher for com.acme, and checks it in cleanup.
func newStore(t testing.TB, opts ...func(*Options)) *Store {
	t.Helper()
	o := Options{Now: func() time.Time { return testNow }, Create: true}
	for _, f := range opts {
		f(&o)
	}
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("acme", pub(sampleKey(t, "acme-publisher")), []string{"com.acme"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ps, err := s.Check(); err != nil || len(ps) > 0 {
			t.Errorf("store check after the test: %v %v", ps, err)
		}
		s.Close()
	})
	return s
}

func sampleBytes(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samplesDir, name+".ampb"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func importBytes(t testing.TB, s *Store, data []byte, opts ImportOptions) (*ImportResult, error) {
	t.Helper()
	return s.Import(context.Background(), bytes.NewReader(data), opts)
}

func mustImport(t testing.TB, s *Store, data []byte) *ImportResult {
	t.Helper()
	res, err := importBytes(t, s, data, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// variant builds the translate sample with another version and optional
// edits of its source artifacts.
func variant(t testing.TB, version uint64, edit func(d *bundle.Draft)) []byte {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "translate"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(k)})
	if err != nil {
		t.Fatal(err)
	}
	d.Version = version
	if edit != nil {
		edit(d)
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func replaceArtifact(d *bundle.Draft, key string, data []byte) {
	for i := range d.Artifacts {
		if d.Artifacts[i].Key == key {
			d.Artifacts[i] = bundle.BytesSource(key, d.Artifacts[i].MediaType, data)
		}
	}
}

// dump is a full logical dump of the store: every key and value of every
// bucket, in order.
func dump(t testing.TB, s *Store) string {
	t.Helper()
	var b strings.Builder
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "[%s]\n", name)
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%x=%x\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dumpBesidesAudit is dump without the audit log, its head and the
// record of recent refusals: what a refused import may change (it appends
// its refusal entry, and records it: refusalrecord.go).
func dumpBesidesAudit(t testing.TB, s *Store) string {
	t.Helper()
	var b strings.Builder
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			if string(name) == bAudit {
				return nil
			}
			fmt.Fprintf(&b, "[%s]\n", name)
			return bk.ForEach(func(k, v []byte) error {
				if string(name) == bMeta && (string(k) == kAuditHead || string(k) == kAuditSeq || string(k) == kRefusalCount ||
					bytes.HasPrefix(k, refusalKey(nil))) {
					return nil
				}
				fmt.Fprintf(&b, "%x=%x\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// lastAudit returns the newest audit entry.
func lastAudit(t testing.TB, s *Store) AuditEntry {
	t.Helper()
	log, err := s.Audit()
	if err != nil || len(log) == 0 {
		t.Fatalf("audit: %v (%d entries)", err, len(log))
	}
	return log[len(log)-1]
}

func expectName(t *testing.T, err error, name amp.ErrName) {
	t.Helper()
	if !errors.Is(err, name) {
		t.Fatalf("got %v, want %s", err, name)
	}
}

func expect5002(t *testing.T, err error, name amp.ErrName) {
	t.Helper()
	if !errors.Is(err, amp.CodeUnavailable) || !errors.Is(err, name) {
		t.Fatalf("got %v, want 5002 %s", err, name)
	}
}

func descriptor(t testing.TB, s *Store, id string) capability.Descriptor {
	t.Helper()
	c, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	cid, err := capability.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := c.Lookup(cid)
	if !ok {
		t.Fatalf("%s is not in the catalog", id)
	}
	return e.Descriptor
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.db")
	if _, err := Open(p, Options{}); !errors.Is(err, ErrStoreMissing) {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := Open(p, Options{ReadOnly: true, Create: true}); !errors.Is(err, ErrStoreMissing) {
		t.Fatalf("read-only never creates: %v", err)
	}
	s, err := Open(p, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	// A second writer fails fast instead of hanging (the store is in use).
	start := time.Now()
	if _, err := Open(p, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrStoreInUse) {
		t.Fatalf("second open: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("second open did not fail fast")
	}
	s.Close()
	// Another schema version is refused.
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(99)) })
	db.Close()
	if _, err := Open(p, Options{}); !errors.Is(err, ErrStoreVersion) {
		t.Fatalf("schema version 99: %v", err)
	}
	// A file that is not a store.
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, bytes.Repeat([]byte{1}, 8192), 0o600)
	if _, err := Open(junk, Options{}); err == nil {
		t.Fatal("junk file opened")
	}
}

func TestTrust(t *testing.T) {
	s := newStore(t)
	k := pub(sampleKey(t, "example-publisher"))
	if err := s.TrustAdd("again", k, []string{"*"}); !errors.Is(err, ErrTrustExists) {
		t.Fatalf("same key twice: %v", err)
	}
	if err := s.TrustAdd("example", pub(testKeyN(9)), []string{"*"}); !errors.Is(err, ErrTrustExists) {
		t.Fatalf("same name twice: %v", err)
	}
	for _, bad := range [][]string{nil, {"org..x"}, {"Org.Example"}, {"org.example x"}} {
		if err := s.TrustAdd("x", pub(testKeyN(8)), bad); !errors.Is(err, ErrInvalidTrust) {
			t.Fatalf("scopes %v: %v", bad, err)
		}
	}
	if err := s.TrustAdd("bad name!", pub(testKeyN(8)), []string{"*"}); !errors.Is(err, ErrInvalidTrust) {
		t.Fatalf("bad name: %v", err)
	}
	keys, _ := s.TrustList()
	if len(keys) != 2 || keys[1].Name != "example" || keys[1].Scopes[0] != "org.example" {
		t.Fatalf("trust list %+v", keys)
	}
	g := s.Generation()
	if err := s.TrustRemove("acme"); err != nil {
		t.Fatal(err)
	}
	if s.Generation() == g {
		t.Fatal("trust removal did not change the generation")
	}
	if err := s.TrustRemove("acme"); !errors.Is(err, ErrUnknownTrust) {
		t.Fatalf("remove twice: %v", err)
	}
	// With no trust at all, imports are refused.
	s.TrustRemove("example")
	_, err := importBytes(t, s, sampleBytes(t, "translate"), ImportOptions{})
	expectName(t, err, bundle.ErrUntrustedKey)
}

func testKeyN(n byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, 32)) }

// TestAudit: the log records every change and its chain detects an edit.
func TestAudit(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if strings.Join(actions, ",") != "trust_add,trust_add,import,remove" {
		t.Fatalf("audit actions %v", actions)
	}
	if err := s.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
	// Tampering: rewrite entry 3 (the import) to claim another version.
	s.db.Update(func(tx *bolt.Tx) error {
		var e AuditEntry
		decode(bucket(tx, bAudit).Get(u64(3)), &e)
		e.Version = 7
		return bucket(tx, bAudit).Put(u64(3), encode(e))
	})
	expectName(t, s.VerifyAudit(), ErrAuditBroken)
	ps, _ := s.Check()
	if len(ps) == 0 || ps[0].Kind != "audit" {
		t.Fatalf("check after audit tampering: %v", ps)
	}
	// Put it back so the cleanup check passes.
	s.db.Update(func(tx *bolt.Tx) error {
		var e AuditEntry
		decode(bucket(tx, bAudit).Get(u64(3)), &e)
		e.Version = 1
		return bucket(tx, bAudit).Put(u64(3), encode(e))
	})
	if err := s.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
	head, _ := s.AuditHead()
	if len(head) != 32 {
		t.Fatalf("audit head %s", hex.EncodeToString(head))
	}
}
